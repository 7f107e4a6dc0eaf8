"""How a case stands against its expectation entry: decided here, once, by one table.

Every view asks :func:`standing` (or :func:`standing_of`, for a record): the run's tally and its surprises
(``runner.expectations.Tracker``), the summary's tally (:mod:`.tally`), the report's first screen
(``reports.overview``), ``findings``, ``diff``, the scoreboard, and the report's page, which receives the
answer in its embedded data and does not work it out again.

A run status is a row of :data:`TABLE`: what a case that ended in it stands as with no entry, and against an
entry that records another status. A case that ended as its entry records stands as :attr:`Standing.EXPECTED`
whatever the row (no entry records ``harness-error``: a case this tool's own code failed on stands apart,
as :attr:`Standing.HARNESS_ERROR`, with or without an entry). A new run status is a new row
(``tests/test_standing.py`` fails until it has one).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from ..domain import FAILING_ORDER, HARNESS, RunStatus, StrEnum


class Standing(StrEnum):
    """A case against its expectation entry (the value is what the report's page reads)."""

    PASSED = "passed"  # passed, and no entry says otherwise
    EXPECTED = "expected"  # ended in the status its entry records
    UNEXPECTED_PASS = "unexpected-pass"  # passed (or followed a catalogued reading) against an entry
    NEW_FAILURE = "new-failure"  # failed with no entry, or in another status than its entry records
    NOT_JUDGED = "not-judged"  # neither meets nor breaks an entry: unsupported, or not scored
    HARNESS_ERROR = "harness-error"  # this tool's own code failed on it: nothing known of the backend


@dataclass(frozen=True)
class Row:
    """What a case that ended in one run status stands as."""

    without_entry: Standing  # no entry matched the case
    against_other: Standing  # an entry matched it, recording another status


_FAILURE = Row(Standing.NEW_FAILURE, Standing.NEW_FAILURE)

#: run status -> its row. An implementation-defined case followed one of the catalogued readings: not scored
#: on its own, but against an entry that records a failure (or unsupported) it has passed.
TABLE: Final[Mapping[str, Row]] = {
    RunStatus.PASSED.value: Row(Standing.PASSED, Standing.UNEXPECTED_PASS),
    RunStatus.IMPLEMENTATION_DEFINED.value: Row(Standing.NOT_JUDGED, Standing.UNEXPECTED_PASS),
    RunStatus.UNSUPPORTED.value: Row(Standing.NOT_JUDGED, Standing.NOT_JUDGED),
    **dict.fromkeys(FAILING_ORDER, _FAILURE),  # failed, error, crashed, timeout, invalid-accepted
    # the tool's fault: never a failure of the backend, an expected one, a pass, or a reason an entry is stale
    **dict.fromkeys(HARNESS, Row(Standing.HARNESS_ERROR, Standing.HARNESS_ERROR)),
}

#: the standings that break an entry (or, for a failure, the run): a run's surprises, a report's "unexpected"
UNEXPECTED: Final = frozenset({Standing.UNEXPECTED_PASS, Standing.NEW_FAILURE})


def standing(status: str, entry_status: str | None) -> Standing:
    """How a case that ended in ``status`` stands against an entry recording ``entry_status`` (None: no entry
    matched it). A status outside :data:`TABLE` is a KeyError: the reader refuses such a record first."""
    row = TABLE[status]
    if entry_status is None:
        return row.without_entry
    return Standing.EXPECTED if status == entry_status else row.against_other


def standing_of(rec: Mapping[str, object]) -> Standing:
    """:func:`standing` of a case record (its ``status`` and its ``expectation``'s)."""
    entry = rec.get("expectation")
    entry_status = entry.get("status") if isinstance(entry, dict) else None
    return standing(str(rec["status"]), entry_status if isinstance(entry_status, str) else None)
