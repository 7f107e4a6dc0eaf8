"""Per-run state, kept in ``config.stash``."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field

import pytest

from ..backends.markers import MarkerWatch
from ..backends.registry import BackendOptions
from ..results import Header, ResultsWriter, Tally
from ..runner.expectations import Expectations, Tracker
from ..runner.pool import CasePool
from .rerun import Rerun


@dataclass
class RunState:
    backend_spec: str
    backend_options: BackendOptions
    timeout: float
    strict: bool
    expectations: Expectations
    workers: int = 1
    create_timeout: float | None = None  # seconds to create the backend (--backend-timeout; None: timeout)
    allow_all_unsupported: bool = False  # a run in which every case was unsupported exits 0 (else 5)
    pool: CasePool | None = None
    results: ResultsWriter | None = None
    header: Header | None = None
    # the cases per status, and how they met the expectations
    tracker: Tracker = field(default_factory=Tracker)
    stale: list[str] = field(default_factory=list)  # stale expectations, as sentences
    stale_unchecked: str = ""  # why this run did not check which entries are stale (hooks._unchecked)
    markers: MarkerWatch | None = None  # the backend's message markers, and which ones refusals matched
    stale_markers: list[str] = field(default_factory=list)  # markers a whole run's refusals did not match
    form_counts: dict[str, Counter[str]] = field(default_factory=dict)  # graph form -> cases per status
    tally: Tally | None = None  # how the expectations in force held (Tracker.tally), at the end
    backend_name: str = ""
    backend_version: str = ""
    deselected: int = 0
    all_unsupported: bool = False  # every case that ran was unsupported: nothing was tested
    report_error: str = ""  # why --report could not be written at the end of the run (one line)
    lean: bool = False  # corpus items may take the runner's shortcut through pytest (fastpath.py)
    skipping: bool = True  # the skipping plugin is on (it applies xfail markers)
    gc_paused: bool = False  # automatic garbage collection is off while the corpus is collected
    reported: int = 0  # corpus items whose protocol has started
    started: float = field(default_factory=time.time)
    rerun: Rerun | None = None  # --lf, --ff, --sw (rerun.py)

    def backend(self) -> CasePool:
        """The backend's worker processes, started on first use."""
        if self.pool is None:
            self.pool = CasePool(self.backend_spec, self.backend_options, self.timeout, self.workers,
                                 create_timeout=self.create_timeout)
            self.pool.start()
        return self.pool


STATE = pytest.StashKey[RunState]()
