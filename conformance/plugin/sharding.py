"""``--shard K/N``: a deterministic partition of the selected cases, for CI matrix jobs and machines that share a run.

A case belongs to shard ``1 + int(sha256(case id)) mod N``: the same on every machine and Python (no hash
randomization), both graph forms of a case in one shard, and a case keeps its shard when others are added or
removed. Shards are balanced by case count to within a few percent (the default corpus in 3 shards: see
``tests/test_sharding.py``). Items without a case (a case file's load error) stay in every shard.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

_SHAPE = re.compile(r"([0-9]{1,6})/([0-9]{1,6})")


def parse(value: str) -> tuple[int, int]:
    """``"K/N"`` as (K, N) with 1 <= K <= N; ValueError with a one-line reason otherwise."""
    m = _SHAPE.fullmatch(value.strip())
    if not m:
        raise ValueError(f"expected K/N (e.g. 1/3), got {value!r}")
    k, n = int(m.group(1)), int(m.group(2))
    if not 1 <= k <= n:
        raise ValueError(f"expected 1 <= K <= N, got {k}/{n}")
    return k, n


def shard_of(case_id: str, n: int) -> int:
    """The shard (1..n) of a case id."""
    return 1 + int.from_bytes(hashlib.sha256(case_id.encode()).digest()[:8], "big") % n


def keep(case_ids: Sequence[str | None], k: int, n: int) -> list[bool]:
    """For each item's case id (None: an item without a case, kept), whether shard K of N runs it."""
    return [cid is None or shard_of(cid, n) == k for cid in case_ids]
