"""The test protocol of a corpus item: report a case that a backend worker has already run.

pytest's own protocol exists to run test code in the pytest process: for each of setup, call and teardown it
calls a hook whose implementations set up fixtures, capture output, catch unraisable exceptions and evaluate
skip and xfail marks. A CaseItem has none of that: its case ran in a backend worker, and the item only collects
the result. So a CaseItem reports the three phases directly: the call phase, which carries the result, through
``pytest_runtest_makereport``; setup and teardown, which run nothing, as plain passed reports. Every report
goes through ``pytest_runtest_logreport`` (and a failure through ``pytest_exception_interact``), with log start
and finish around them: the terminal, JUnit XML, pytest-xdist, ``-x`` / ``--maxfail``, ``--pdb`` and every other
plugin that reads reports see what they saw before. This costs the pytest process a little over half of pytest's
full protocol per item (see ``benchmarks/bench_runner.py``).

The lean protocol applies only when it can make no difference: every collected item is a corpus item (no Python
test shares the session, so no fixture set-up or tear-down is skipped) and an item carries no marker but the
runner's own (a ``skip``, ``skipif`` or ``usefixtures`` marker added by a conftest gets pytest's full protocol).
The runner's own ``xfail`` marker (a failing expectation) is applied here with the skipping plugin's rules.
"""

from __future__ import annotations

import time
from typing import Any

import pytest


def lean_possible(session: pytest.Session, is_case: type | tuple[type, ...]) -> bool:
    """The lean protocol may run at all: every item of the session is a corpus item, none under a marked
    collector, and no option asks for pytest's set-up reporting (--setup-only, --setup-plan, --setup-show)."""
    opt = session.config.option
    if any(getattr(opt, name, False) for name in ("setuponly", "setupplan", "setupshow")):
        return False
    seen: set[int] = set()
    for item in session.items:
        if not isinstance(item, is_case):
            return False
        parent = item.parent
        if parent is not None and id(parent) not in seen:
            seen.add(id(parent))
            if any(node.own_markers for node in parent.listchain()):
                return False
    return True


def run(item: Any, xfail_mark: Any) -> None:
    """The three phases of ``item`` as reports (``xfail_mark``: the runner's xfail Mark for this item, if any).

    The call report, which carries the result, is made through ``pytest_runtest_makereport`` like any other;
    setup and teardown run nothing and can only pass, so their reports are made here."""
    ihook = item.ihook
    nodeid, location = item.nodeid, item.location
    ihook.pytest_runtest_logstart(nodeid=nodeid, location=location)
    keywords = {x: 1 for x in item.keywords}
    ihook.pytest_runtest_logreport(report=_empty(item, keywords, "setup"))
    # A signal (pytest.exit) or Ctrl-C ends the session, as in pytest's own protocol: it is never the item's failure.
    reraise = (pytest.exit.Exception,) if item.config.getoption("usepdb", False) else (pytest.exit.Exception, KeyboardInterrupt)
    call = pytest.CallInfo.from_call(item.runtest, "call", reraise=reraise)
    report = ihook.pytest_runtest_makereport(item=item, call=call)
    if xfail_mark is not None:
        _apply_xfail(item.config, call, report, xfail_mark)
    ihook.pytest_runtest_logreport(report=report)
    if _interactive(call, report):
        ihook.pytest_exception_interact(node=item, call=call, report=report)
    ihook.pytest_runtest_logreport(report=_empty(item, keywords, "teardown"))
    ihook.pytest_runtest_logfinish(nodeid=nodeid, location=location)


def _empty(item: Any, keywords: dict[str, int], when: str) -> pytest.TestReport:
    """The report of a phase that ran nothing (as pytest makes it: a passed phase, with the item's properties)."""
    now = time.time()
    return pytest.TestReport(item.nodeid, item.location, keywords, "passed", None, when, [], 0.0, now, now,
                             user_properties=item.user_properties)


def _interactive(call: pytest.CallInfo[None], report: pytest.TestReport) -> bool:
    """As pytest decides whether ``--pdb`` and friends should see a phase's exception."""
    if call.excinfo is None or hasattr(report, "wasxfail"):
        return False
    return not isinstance(call.excinfo.value, pytest.skip.Exception) and report.failed


def _apply_xfail(config: pytest.Config, call: pytest.CallInfo[None], report: pytest.TestReport, mark: Any) -> None:
    """The skipping plugin's reading of an ``xfail(reason=..., raises=..., strict=...)`` marker."""
    if config.option.runxfail or report.skipped:
        return
    reason, strict, raises = mark.kwargs["reason"], mark.kwargs["strict"], mark.kwargs.get("raises")
    if call.excinfo is not None:
        if raises is None or isinstance(call.excinfo.value, raises):
            report.outcome, report.wasxfail = "skipped", reason
        else:
            report.outcome = "failed"
    elif call.when == "call":
        if strict:
            report.outcome, report.longrepr = "failed", "[XPASS(strict)] " + reason
        else:
            report.outcome, report.wasxfail = "passed", reason
