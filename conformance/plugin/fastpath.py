"""The runner's one shortcut through pytest, and the one module that relies on pytest beyond its documented
API.

Why. A corpus item's case ran in a backend worker; the item's call phase only collects the result. pytest's
own protocol would also call the ``pytest_runtest_setup``, ``pytest_runtest_call`` and
``pytest_runtest_teardown`` hooks for it, whose implementations set up fixtures (a corpus item has none),
evaluate skip and xfail marks (it carries only the runner's own), and capture output, logs and unraisable
exceptions around nothing: about half of the pytest process's time per item, and a corpus run has 64,000
items. ``benchmarks/bench_runner.py`` measures the runner with and without this shortcut against the bare loop
(target: at most 1.5x; see its output).

What it does. Each phase as pytest's ``call_and_report`` does it, from public API:
``pytest.CallInfo.from_call`` and the documented hooks called through ``item.ihook``
(``pytest_runtest_logstart``, ``pytest_runtest_makereport`` for all three phases,
``pytest_runtest_logreport``: terminal, JUnit XML, pytest-xdist, ``-x`` / ``--maxfail``;
``pytest_exception_interact``, ``pytest_runtest_logfinish``). What it leaves out: the three per-phase hooks;
the setup and teardown phases run nothing, the call phase runs ``item.runtest()`` (so neither does
``PYTEST_CURRENT_TEST`` name the item: no code runs in the pytest process that could read it). Two things then
fall to this module:

- the runner's ``xfail`` marker (a failing expectation) is applied with the skipping plugin's rules (xfailed,
  xpassed, ``[XPASS(strict)]``, ``raises``, ``--runxfail``), since that plugin evaluates marks in the
  per-phase hooks: this writes ``report.wasxfail``, pytest's undocumented but long-stable way of marking an
  expected failure (``_apply_xfail``);
- pytest's rule for calling ``pytest_exception_interact`` (a failure's report), restated with public report
  attributes.

When. Only where leaving the per-phase hooks out can make no difference (``applies``): every collected item is
a corpus item (no Python test shares the session, so no fixture set-up or tear-down is left out), no collector
above them carries a marker, an item carries no marker but the runner's own (a ``skip``, ``skipif`` or
``usefixtures`` marker added by a conftest gets pytest's full protocol), and no option asks about set-up or
the debugger (``--setup-only``, ``--setup-plan``, ``--setup-show``, ``--pdb``, ``--trace``). Anything else
gets pytest's full protocol.

Checked against pytest 8.0.2 (the oldest the project supports: ``pytest>=8``) and 9.2.0 (pytest 8.0 to 9.2):
``tests/test_fastpath.py`` runs the same cases through this path and through pytest's full protocol under each
of those versions and compares them report by report (outcome, ``wasxfail``, longrepr), with the terminal's
summary, the JUnit XML, the results file, ``-x`` and ``--maxfail``.
"""

from __future__ import annotations

import bdb
from collections.abc import Callable
from typing import Any

import pytest


def applies(session: pytest.Session, is_case: type | tuple[type, ...]) -> bool:
    """Whether the shortcut may run at all in this session (see the module's docstring)."""
    config = session.config
    if any(config.getoption(name, False)
           for name in ("setuponly", "setupplan", "setupshow", "usepdb", "trace")):
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


def run(item: pytest.Item, xfail: pytest.Mark | None) -> None:
    """pytest's run-test protocol for ``item``, its setup and teardown hooks left out and the call phase run
    directly (``xfail``: the runner's xfail marker on this item, if any, applied as the skipping plugin
    does)."""
    ihook = item.ihook
    nodeid, location = item.nodeid, item.location
    ihook.pytest_runtest_logstart(nodeid=nodeid, location=location)
    # A signal (pytest.exit) or Ctrl-C ends the session, as in pytest's protocol: it is never the item's
    # failure.
    reraise = (pytest.exit.Exception, KeyboardInterrupt)
    _phase(item, ihook, "setup", _nothing, reraise, None)
    _phase(item, ihook, "call", item.runtest, reraise, xfail)
    _phase(item, ihook, "teardown", _nothing, reraise, None)
    ihook.pytest_runtest_logfinish(nodeid=nodeid, location=location)


def _nothing() -> None:
    """A corpus item's setup and teardown."""


def _phase(item: pytest.Item, ihook: Any, when: str, func: Callable[[], object],
           reraise: tuple[type[BaseException], ...], xfail: pytest.Mark | None) -> None:
    """One phase as pytest's ``call_and_report`` makes and logs it."""
    call = pytest.CallInfo.from_call(func, when, reraise=reraise)  # type: ignore[arg-type]
    report = ihook.pytest_runtest_makereport(item=item, call=call)
    if xfail is not None and not item.config.getoption("runxfail", False):
        _apply_xfail(call, report, xfail)
    ihook.pytest_runtest_logreport(report=report)
    # pytest's rule for --pdb and friends: an exception that failed the phase (an expected failure is a
    # skipped report, and so is pytest.skip), unless it is the debugger's own quit
    if call.excinfo is not None and report.failed and not isinstance(call.excinfo.value, bdb.BdbQuit):
        ihook.pytest_exception_interact(node=item, call=call, report=report)


def _apply_xfail(call: pytest.CallInfo[object], report: pytest.TestReport, mark: pytest.Mark) -> None:
    """The skipping plugin's reading of an ``xfail(reason=..., raises=..., strict=...)`` marker on a call
    phase (its ``pytest_runtest_makereport``): the one place that writes ``report.wasxfail``, the attribute
    pytest's terminal, JUnit XML, ``--maxfail`` count and pytest-xdist read to tell an expected failure."""
    if report.skipped:
        return
    reason, strict, raises = mark.kwargs["reason"], mark.kwargs["strict"], mark.kwargs.get("raises")
    if call.excinfo is not None:
        if raises is None or isinstance(call.excinfo.value, raises):
            report.outcome, report.wasxfail = "skipped", reason
        else:
            report.outcome = "failed"
    elif strict:
        report.outcome, report.longrepr = "failed", "[XPASS(strict)] " + reason
    else:
        report.outcome, report.wasxfail = "passed", reason
