"""The expectations tally, computed from case records (one function, for the live run and for a run merged
from shards), and the expectations part of a run's summary (terminal, report header), read from the records of
a results file, so a saved run says the same as the live one."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from .records import ExpectationsStatus, Tally
from .standing import Standing, standing_of

#: modes of the expectations' applicability whose message must stand out (the entries in force were not
#: recorded for this version)
ATTENTION = frozenset({"newer", "between", "older", "unknown"})
#: how a run's summary says, in ``stale_unchecked`` (after "the run"), that it is a subset, before its
#: selection (``-k X, --shard 1/3``): a merge of every shard reads one whose only selection is its shard as
#: checked, from the shards' ``stale_in_shard``
SUBSET = "is a subset of the corpus: "


def standings_by_entry(cases: Iterable[Mapping[str, object]]) -> dict[int, list[Standing]]:
    """Entry line -> how the cases it matched stand against it (:func:`.standing.standing_of`), in case
    order. A case is a record, or what the live run keeps of one (its status and expectation)."""
    matched: dict[int, list[Standing]] = {}
    for c in cases:
        entry = c.get("expectation")
        line = entry.get("line") if isinstance(entry, dict) else None
        if isinstance(line, int):
            matched.setdefault(line, []).append(standing_of(c))
    return matched


def tally(cases: Iterable[Mapping[str, object]], in_force: int | None, stale: int | None) -> Tally:
    """The run against its expectations: entries in force, held (a case ended as recorded), stale (None: not
    checked, the run being no complete run of the corpus), changed
    (matched, none as recorded, some failing otherwise); failing cases that are new (no entry, or an entry
    recording another status) and cases that passed against an entry (each case as
    :func:`.standing.standing_of` says); and apart from them all, the cases this tool's own code failed on
    (harness errors)."""
    cases = list(cases)
    counted = {s: 0 for s in Standing}
    for c in cases:
        counted[standing_of(c)] += 1
    by_entry = [set(s) for s in standings_by_entry(cases).values()]
    held = sum(1 for s in by_entry if Standing.EXPECTED in s)
    changed = sum(1 for s in by_entry if Standing.EXPECTED not in s and Standing.NEW_FAILURE in s)
    return {"in_force": in_force, "held": held, "stale": stale, "changed": changed,
            "new_failures": counted[Standing.NEW_FAILURE],
            "unexpected_passes": counted[Standing.UNEXPECTED_PASS],
            "harness_errors": counted[Standing.HARNESS_ERROR]}


def applicability_message(a: ExpectationsStatus) -> str:
    """One sentence: which expectations are in force for this run, for which backend version and processor."""
    cpu = a.get("cpu") or {}
    if not isinstance(cpu, dict) or not cpu or not a.get("path"):
        return _version_message(a)
    features = ", ".join(f"{name} {'yes' if present else 'no'}" for name, present in sorted(cpu.items()))
    other = a.get("other_cpu") or 0
    return (f"{_version_message(a)}; this processor: {features}"
            + (f" ({other} entries recorded for another processor not in force)" if other else ""))


def _version_message(a: ExpectationsStatus) -> str:
    backend, running, path = a.get("backend") or "backend", a.get("running"), a.get("path")
    recorded = ", ".join(a.get("recorded") or []) or "none"
    n, total, applied, mode = a.get("in_force", 0), a.get("total", 0), a.get("applied"), a.get("mode")
    if mode == "none" or not path:
        return f"expectations: none for {backend} {running or ''}".rstrip()
    if mode == "unversioned":
        return f"expectations: {path}, {n} entries (the file records no backend version: all apply)"
    if mode == "exact":
        return (f"expectations: {path}, {n} of {total} entries in force, recorded for {backend} {applied} "
                f"(recorded versions: {recorded})")
    if mode == "newer":
        return (f"EXPECTATIONS NOT RECORDED FOR {backend} {running}: it is newer than every version {path} "
                f"records ({recorded}); the {n} entries recorded for the newest, {applied}, are applied")
    if mode == "between":
        return (f"EXPECTATIONS NOT RECORDED FOR {backend} {running}: {path} records {recorded}; the {n} "
                f"entries recorded for the nearest older version, {applied}, are applied")
    if mode == "older":
        return (f"EXPECTATIONS NOT RECORDED FOR {backend} {running}: it is older than every version {path} "
                f"records ({recorded}); "
                + (f"only the {n} entries recorded for every version apply" if n else
                   "no entry applies, so every failure is new"))
    return (f"EXPECTATIONS NOT RECORDED FOR {backend} version {running!r} (not comparable): the {n} entries "
            f"{path} records for its newest version, {applied}, are applied")


def summary_lines(status: ExpectationsStatus | None, tally: Mapping[str, object] | None,
                  unchecked: str | None = None) -> list[str]:
    """The expectations part of a run's summary (terminal, report header): which entries were in force for
    which backend version and, once the run ended, how they held (``unchecked``: why the run did not check
    which are stale). Reads the results file's records, so a saved run says the same as the live one."""
    if not status:
        return []
    lines = [applicability_message(status)]
    # (read back from a results file: a field it lacks counts 0)
    counts = {k: tally.get(k) or 0 for k in ("held", "stale", "changed", "in_force", "new_failures",
                                             "unexpected_passes")} if tally else None
    if counts and status.get("mode") != "none" and status.get("path"):
        stale = (f"stale entries not checked (the run {unchecked or 'is no complete run of the corpus'}; "
                 "only a complete run of the corpus checks them)"
                 if unchecked or (tally or {}).get("stale", 0) is None else f"{counts['stale']} stale")
        parts = [f"{counts['held']} held", stale]
        if counts.get("changed"):
            parts.append(f"{counts['changed']} ended in another failing status")
        lines.append(f"of the {counts['in_force']} entries in force: {', '.join(parts)}; "
                     f"{counts['new_failures']} failing case(s) are new (no entry, or another status), "
                     f"{counts['unexpected_passes']} case(s) passed against their entry")
    elif counts:
        lines.append(f"{counts['new_failures']} failing case(s), none covered by an expectation")
    return lines


def needs_attention(status: ExpectationsStatus | None) -> bool:
    """The entries in force were not recorded for the running version (or none are): say it loudly."""
    return status is not None and status.get("mode") in ATTENTION
