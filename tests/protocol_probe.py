"""A pytest plugin for the runner's tests (``-p tests.protocol_probe``): counts the calls of pytest's
per-phase hooks, checks item locations, tells whether garbage collection is back on at the end and which
pytest ran. With ``--probe-full`` it gives every corpus item pytest's full protocol (through an extra marker,
as a conftest adding a marker would); with ``--probe-skip ID`` it skips the cases whose id contains ID; with
``--probe-reports PATH`` it writes every test report (node id, phase, outcome, expected-failure reason,
longrepr) to PATH as JSON."""

from __future__ import annotations

import gc
import json

import pytest

_calls = {"setup": 0, "makereport": 0, "location": 0}
_reports: list[list[object]] = []


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--probe-full", action="store_true")
    parser.addoption("--probe-skip", default=None)
    parser.addoption("--probe-reports", default=None)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if config.getoption("probe_full"):
            item.add_marker(pytest.mark.usefixtures())  # harmless for a non-Python item, but a foreign marker
        skip = config.getoption("probe_skip")
        if skip and skip in item.name:
            item.add_marker(pytest.mark.skip(reason="skipped by a conftest marker"))


def pytest_collection_finish(session: pytest.Session) -> None:
    """Items precompute their location's path per file: it must be what pytest computes for each item."""
    _calls["location"] = sum(item.location != pytest.Item.location.func(item) for item in session.items)


def pytest_runtest_setup(item: pytest.Item) -> None:
    _calls["setup"] += 1


def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> None:
    _calls["makereport"] += 1


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _reports.append([report.nodeid, report.when, report.outcome, getattr(report, "wasxfail", None),
                     report.longreprtext, list(report.location), [k for k, _ in report.user_properties]])


def pytest_terminal_summary(terminalreporter) -> None:
    path = terminalreporter.config.getoption("probe_reports")
    if path:
        with open(path, "w") as fh:
            json.dump(_reports, fh)
    terminalreporter.write_line(f"probe: setup hooks {_calls['setup']}, makereport hooks "
                                f"{_calls['makereport']}, locations differ {_calls['location']}, gc on "
                                f"{gc.isenabled()}")
    terminalreporter.write_line(f"probe: pytest {pytest.__version__}")
