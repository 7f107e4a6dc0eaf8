"""The runner's corpus cache: same cases as a fresh expansion, a new entry when the file changes."""

from __future__ import annotations

import shutil

from qdq_conformance.generators import cache
from qdq_conformance.generators.corpus import CASES_DIR, load_file


def test_cached_expansion_equals_fresh_and_follows_edits(tmp_path, monkeypatch):
    monkeypatch.setenv("QDQ_CACHE_DIR", str(tmp_path / "cache"))
    src = tmp_path / "dequantize_edges.yaml"
    shutil.copy(CASES_DIR / "dequantize_edges.yaml", src)
    fresh = load_file(src, ("default",))
    first = cache.load_file_cached(src, ("default",))
    entries = list((tmp_path / "cache" / "corpus").glob("*.pkl"))
    assert len(entries) == 1
    again = cache.load_file_cached(src, ("default",))
    assert [c.id for c in again] == [c.id for c in fresh] == [c.id for c in first]
    assert all(str(a.expected) == str(b.expected) for a, b in zip(again, fresh, strict=True))
    src.write_text(src.read_text().replace("description:", "description: edited", 1))
    cache.load_file_cached(src, ("default",))
    assert len(list((tmp_path / "cache" / "corpus").glob("*.pkl"))) == 2  # the edit made a new key
    monkeypatch.setenv("QDQ_CORPUS_CACHE", "0")
    cache.load_file_cached(src, ("large",))
    assert len(list((tmp_path / "cache" / "corpus").glob("*.pkl"))) == 2  # disabled: nothing written
