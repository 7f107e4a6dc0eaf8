"""``--shard K/N``: a deterministic partition of the selected cases, for CI matrix jobs and machines that
share a run.

A case belongs to shard ``1 + int(sha256(case id)) mod N``: the same on every machine and Python (no hash
randomization), both graph forms of a case in one shard, and a case keeps its shard when others are added or
removed. Shards are balanced by case count to within a few percent (the default corpus in 3 shards: see
``tests/test_sharding.py``). Items without a case (a case file's load error) stay in every shard. ``"K/N"``
itself is read by ``domain.parse_shard``.

A run's collection keeps only its shard's cases of each case file (``plugin/items.py``), and a case file not
in the expansion cache is expanded for that shard only (``generators/cache.py``): a case's id is known before
its values and outputs are computed, so the other shards' cases cost nothing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence


def shard_of(case_id: str, n: int) -> int:
    """The shard (1..n) of a case id."""
    return 1 + int.from_bytes(hashlib.sha256(case_id.encode()).digest()[:8], "big") % n


def keep(case_ids: Sequence[str | None], k: int, n: int) -> list[bool]:
    """For each item's case id (None: an item without a case, kept), whether shard K of N runs it."""
    return [cid is None or shard_of(cid, n) == k for cid in case_ids]


Shard = tuple[int, int]


def in_shard(shard: Shard | None) -> Callable[[str], bool] | None:
    """Whether a case id is in ``shard`` (K, N), as a predicate; None for no shard (every case)."""
    if shard is None:
        return None
    k, n = shard
    return lambda case_id: shard_of(case_id, n) == k
