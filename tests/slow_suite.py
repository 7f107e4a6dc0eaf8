"""A pytest plugin for the lifecycle tests (``-p tests.slow_suite``): reading an exported suite takes long, as
the whole default export's did. It writes the file ``QDQ_TEST_COLLECTING`` names when the reading starts,
then sleeps a tenth of a second at a time for up to two minutes (a signal is seen between two sleeps, as
between two of the reader's steps), then reads the suite."""

from __future__ import annotations

import os
import time
from pathlib import Path

from qdq_conformance.plugin import items
from qdq_conformance.runner.suite import SuiteCase

_load = items.load_suite


def _slow(root: Path) -> tuple[object, list[SuiteCase]]:
    Path(os.environ["QDQ_TEST_COLLECTING"]).touch()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        time.sleep(0.1)
    return _load(root)


items.load_suite = _slow  # type: ignore[assignment]
