"""--shard K/N: a stable, balanced partition of the selected cases."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter

import pytest

from qdq_conformance import sharding
from qdq_conformance.domain import parse_shard


def test_parse_accepts_k_of_n_and_refuses_the_rest():
    assert parse_shard("2/3") == (2, 3)
    for bad in ("0/3", "4/3", "3", "a/b", "1/0", "-1/2", "1/3/4", ""):
        with pytest.raises(ValueError):
            parse_shard(bad)


def test_default_corpus_in_three_shards_is_a_balanced_stable_partition(corpus):
    ids = [c.id for c in corpus.cases]
    counts = Counter(sharding.shard_of(i, 3) for i in ids)
    assert sum(counts.values()) == len(ids) and set(counts) == {1, 2, 3}
    assert max(counts.values()) / min(counts.values()) < 1.05, counts
    # each case in exactly one shard, whatever else is in the corpus
    assert all(sum(sharding.keep([i], k, 3)[0] for k in (1, 2, 3)) == 1 for i in ids[:500])
    assert sharding.keep([None], 2, 3) == [True]  # an item without a case (a load error) stays


def _run(tmp_path, *extra):
    out = tmp_path / f"r{len(list(tmp_path.iterdir()))}.jsonl"
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                           "--backend=oracle", "--form", "runtime", "--workers", "1", "--results",
                           str(out), "-k", "quantizelinear-21-basic", *extra], capture_output=True, text=True,
                          cwd=tmp_path)
    return proc, [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []


def test_shards_of_a_run_together_are_the_run(tmp_path):
    _, whole = _run(tmp_path)
    ids = sorted(r["id"] for r in whole if r.get("type") == "case")
    assert len(ids) >= 6
    parts = []
    for k in (1, 2, 3):
        proc, recs = _run(tmp_path, "--shard", f"{k}/3")
        assert proc.returncode == 0, proc.stdout[-2000:]
        assert recs[0]["shard"] == f"{k}/3"
        parts += [r["id"] for r in recs if r.get("type") == "case"]
    assert sorted(parts) == ids


def test_a_bad_shard_is_a_usage_error(tmp_path):
    proc, _ = _run(tmp_path, "--shard", "4/3")
    assert proc.returncode == 4
    assert "--shard: expected 1 <= K <= N, got 4/3" in proc.stderr + proc.stdout
    assert "Traceback" not in proc.stderr + proc.stdout
