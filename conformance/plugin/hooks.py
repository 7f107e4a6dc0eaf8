"""pytest hooks of the conformance runner (registered through the ``pytest11`` entry point)."""

from __future__ import annotations

import gc
import time
import warnings
from collections import Counter
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from .. import sharding
from ..backends import registry
from ..backends.markers import MarkerWatch
from ..backends.registry import MARKERS
from ..domain import FAILING, FORMS, HARNESS, CaseStatus, GranularityKind, RunStatus, parse_shard
from ..generators.file_schemas import schema_enum
from ..generators.suite_layout import MANIFEST
from ..resources import cases_dir
from ..results import ResultsWriter, StaleEntry, Summary, header
from ..results.tally import SUBSET
from ..runner import expectations as expectations_mod
from ..runner.execute import CaseRef
from ..runner.suite import scope as suite_scope
from ..types import TYPES
from . import fastpath, options, selection, stopping
from .distributed import is_controller, is_worker
from .items import CaseFailure, CaseFile, CaseItem, LoadErrorItem, SuiteFile, forms_of
from .rerun import Rerun
from .state import STATE, RunState
from .terminal import RunTerminal

CASES_DIR = cases_dir()
#: items between two garbage collections that freeze what lives on (see pytest_runtest_protocol)
FREEZE_EVERY = 5000
_VOCAB = {
    "operators": ["quantizelinear", "dequantizelinear", "dynamicquantizelinear", "extendedquantizelinear",
                  "extendeddequantizelinear"],
    "domains": ["ai_onnx", "com_microsoft", "com_amd_quark"],
    "statuses": [s.replace("-", "_") for s in CaseStatus.values()],
    # (and "graph", a graph case's: _register_markers)
    "granularities": [g.replace("-", "_") for g in GranularityKind.values()],
    "forms": list(FORMS),
}


def pytest_configure(config: pytest.Config) -> None:
    spec = config.getoption("qdq_backend")
    if not spec:
        return
    options.check(config)  # (usage errors known before a backend starts: one line, exit status 4)
    rerun = Rerun(config)  # (--lf, --ff, --sw; --sw under pytest-xdist is a usage error)
    _register_markers(config)
    suite = config.getoption("qdq_suite")
    worker = is_worker(config)
    collects = worker or not is_controller(config)
    state = RunState(spec, options.backend_options(config), config.getoption("qdq_case_timeout"),
                     config.getoption("qdq_strict_expectations"), expectations_mod.Expectations(),
                     workers=options.worker_count(config) if collects else 1,
                     create_timeout=options.create_timeout(config),
                     allow_all_unsupported=config.getoption("qdq_allow_all_unsupported"))
    try:
        backend = state.backend()
    except Exception as e:
        wanted = not worker and (config.getoption("qdq_results") or config.getoption("qdq_report"))
        stopping.record_failed_start(_results_path(config) if wanted else None, spec, str(e))
        raise pytest.UsageError(f"--backend={spec}: {e}") from None
    state.backend_name, state.backend_version = backend.name, backend.version
    # a built-in whose verdicts rest on message markers: which ones this run's refusals match
    if spec in MARKERS:
        state.markers = MarkerWatch(MARKERS[spec])
    exp = config.getoption("qdq_expectations")
    try:
        if exp == "none":
            state.expectations = expectations_mod.Expectations()
        elif exp:
            state.expectations = expectations_mod.load(Path(exp), backend.version, backend.name)
        else:
            state.expectations = expectations_mod.find(backend.name, backend.version)
    except expectations_mod.ExpectationError as e:
        backend.close()
        raise pytest.UsageError(str(e)) from None
    if collects:
        backend.set_expectations(str(state.expectations.path) if state.expectations.path else None)
    else:  # the pytest-xdist controller only needed the backend's name and version
        backend.close()
        state.pool = None
    state.header = header(backend.name, backend.version, {
        "expectations": str(state.expectations.path) if state.expectations.path else None,
        "expectations_status": state.expectations.status(backend.name, backend.version),
        "strict_expectations": state.strict, "forms": config.getoption("qdq_form"),
        "tier": config.getoption("qdq_tier"), "suite": suite, "shard": config.getoption("qdq_shard"),
        "selection": selection.recorded(config),
        **registry.settings(config.getoption("qdq_backend"), options.backend_options(config))})
    if not worker and (config.getoption("qdq_results") or config.getoption("qdq_report")):
        state.results = ResultsWriter(_results_path(config))
    state.rerun = rerun
    config.stash[STATE] = state
    config.pluginmanager.register(state.rerun, "qdq-conformance-rerun")
    config.pluginmanager.register(_Recorder(state), "qdq-conformance-recorder")
    config.pluginmanager.register(_LoadErrorsStay(), "qdq-conformance-load-errors")
    if not worker:  # progress while the cases run, the summary at the very end (terminal.py)
        config.pluginmanager.register(RunTerminal(config, state), "qdq-conformance-terminal")
    # SIGINT / SIGTERM / SIGHUP stop the run, its results kept and marked interrupted
    stopping.install(config)


def _results_path(config: pytest.Config) -> Path:
    """--results, or next to --report (report.html -> report.jsonl): a report is always rendered from a
    file."""
    if config.getoption("qdq_results"):
        return Path(config.getoption("qdq_results"))
    return Path(config.getoption("qdq_report")).with_suffix(".jsonl")


def _register_markers(config: pytest.Config) -> None:
    names = [*_VOCAB["operators"], *_VOCAB["domains"], *_VOCAB["statuses"], *_VOCAB["granularities"],
             *_VOCAB["forms"], *(f"v{v}" for v in range(1, 40))]
    families = (*schema_enum("$defs", "case", "properties", "family"),
                *schema_enum("$defs", "graph", "properties", "family"))
    names += ["family_" + f.replace("-", "_") for f in families]
    names += ["graph"] + ["op_" + op.lower() for op in schema_enum("$defs", "node", "properties", "op")]
    names += [f"{slot}_{t}" for slot in ("x", "scale", "y") for t in TYPES]
    for name in names:
        config.addinivalue_line("markers", f"{name}: qdq-conformance case selector")


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    config = parent.config
    if not config.getoption("qdq_backend", None):
        return None
    suite = config.getoption("qdq_suite")
    if suite:
        if _is_suite_file(Path(suite), file_path):
            return SuiteFile.from_parent(parent, path=file_path)
        return None
    if file_path.suffix == ".yaml" and file_path.parent.resolve() == Path(
            config.getoption("qdq_cases") or CASES_DIR).resolve():
        # (-k / -m can select none of its cases: left out unless named on the command line, where pytest
        # would call a path that gives no collector "not found" and collect nothing at all)
        if not selection.wanted(config, parent, file_path) and not _named(config, file_path):
            return None
        return CaseFile.from_parent(parent, path=file_path)
    return None


def _named(config: pytest.Config, file_path: Path) -> bool:
    """Is ``file_path`` one of the run's command-line arguments (a file, or a node id in it)?"""
    here = Path(config.invocation_params.dir)
    return any((here / arg.split("::", 1)[0]).resolve() == file_path.resolve() for arg in config.args)


def _is_suite_file(suite: Path, file_path: Path) -> bool:
    """The file a --suite run collects: the archive, or the folder's manifest.json."""
    if suite.is_dir():
        return file_path.name == MANIFEST and file_path.parent.resolve() == suite.resolve()
    return file_path.resolve() == suite.resolve()


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """A --suite folder's kind folders are never walked: its manifest names every case folder, and pytest's
    walk of the default export's 190,000 folders took many minutes before the first case."""
    suite = config.getoption("qdq_suite", None) if config.getoption("qdq_backend", None) else None
    if suite and collection_path.is_dir() and collection_path.parent.resolve() == Path(suite).resolve():
        return True
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_collection(session: pytest.Session) -> None:
    """No automatic garbage collection while the corpus is collected: tens of thousands of items, all of which
    live on, made the collector walk a growing heap again and again (a quarter of the collection time). It is
    collected once, then frozen, in pytest_collection_modifyitems."""
    state = session.config.stash.get(STATE, None)
    if state is not None and gc.isenabled() and not is_controller(session.config):  # (it collects nothing)
        gc.disable()
        state.gc_paused = True


def pytest_deselected(items: list[pytest.Item]) -> None:
    if items and STATE in items[0].config.stash:
        items[0].config.stash[STATE].deselected += len(items)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if STATE not in config.stash:
        return
    state = config.stash[STATE]
    shard = config.getoption("qdq_shard")
    if shard is not None:
        k, n = parse_shard(shard)
        kept = sharding.keep([getattr(getattr(item, "case", None), "id", None) for item in items], k, n)
        dropped = [item for item, ok in zip(items, kept, strict=True) if not ok]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = [item for item, ok in zip(items, kept, strict=True) if ok]
    if state.rerun is not None:  # --lf, --ff, --sw
        chosen = state.rerun.select(items)
        ids = {id(item) for item in chosen}
        dropped = [item for item in items if id(item) not in ids]
        if dropped:
            config.hook.pytest_deselected(items=dropped)
        items[:] = chosen
        if state.header is not None and state.rerun.selected:
            state.header["selection"] = {**(state.header.get("selection") or {}), **state.rerun.selected}
    # The collected corpus lives until the end of the run: move it out of the garbage collector's way, or
    # every collection (pytest runs gc.collect() several times at exit) walks tens of thousands of case
    # objects.
    gc.collect()
    gc.freeze()
    if state.gc_paused:
        gc.enable()
        state.gc_paused = False
    for item in items:
        case = getattr(item, "case", None)
        if case is None:  # (an implementation-defined case fails too, when it follows no catalogued reading)
            continue
        entry = state.expectations.lookup(case.id, getattr(item, "form", None))
        if entry is not None and entry.status in FAILING:
            reason = f"expected {entry.status}: {entry.reason}" + (f" ({entry.link})" if entry.link else "")
            mark = pytest.mark.xfail(reason=reason, raises=CaseFailure, strict=state.strict)
            item.add_marker(mark)
            if isinstance(item, CaseItem):
                item.xfail_mark = mark.mark
                item.runner_marks += 1


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> None:
    """Hand the backend's workers the run order, so they run cases ahead of the items (not in a pytest-xdist
    worker, where the controller decides the order item by item)."""
    config = session.config
    if STATE not in config.stash or config.getoption("collectonly"):
        return
    state = config.stash[STATE]
    state.lean = fastpath.applies(session, (CaseItem, LoadErrorItem))
    state.skipping = config.pluginmanager.has_plugin("skipping")  # (-p no:skipping: xfail markers do nothing)
    if is_worker(config) or state.pool is None:
        return
    order: list[tuple[CaseRef, str]] = []
    for item in session.items:
        if isinstance(item, CaseItem):
            item.position = len(order)
            order.append((item.ref, item.form))
    state.pool.plan(order)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> bool | None:
    """A corpus item runs through the runner's one shortcut (``fastpath.py``: pytest's per-phase hooks left
    out) when that can make no difference; anything else gets pytest's own protocol."""
    state = item.config.stash.get(STATE, None)
    if state is None or not isinstance(item, CaseItem):
        return None
    state.reported += 1
    if state.reported % FREEZE_EVERY == 0:
        # pytest keeps every report until the end: collect the garbage of the last items, then move what lives
        # on out of the way of the next collections (frozen, they no longer make each of them walk the whole
        # run).
        gc.collect()
        gc.freeze()
    if not state.lean or len(item.own_markers) != item.runner_marks:
        return None
    fastpath.run(item, item.xfail_mark if state.skipping else None)
    return True


class _LoadErrorsStay:
    """A case file that cannot be loaded is never deselected: whatever -k, -m, --deselect or another plugin
    selects, its error item runs (first), fails the run and reaches the results file and the report."""

    @pytest.hookimpl(wrapper=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> Generator[None, None, None]:
        errors = [item for item in items if isinstance(item, LoadErrorItem)]
        result = yield
        if errors:
            items[:] = errors + [item for item in items if not isinstance(item, LoadErrorItem)]
        return result

    @pytest.hookimpl(wrapper=True)
    def pytest_deselected(self, items: list[pytest.Item]) -> Generator[None, None, None]:
        # (the deselecting plugin is done with its list: the counts, pytest's "N deselected" included, leave
        # out the error items put back above)
        items[:] = [item for item in items if not isinstance(item, LoadErrorItem)]
        return (yield)


class _Recorder:
    """Counts outcomes and streams results as reports arrive (on the xdist controller: from every worker)."""

    def __init__(self, state: RunState) -> None:
        self.state = state

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "call" or (report.when == "setup" and report.skipped):
            props = dict(report.user_properties)
            note = props.get("qdq_outcome")
            record = props.get("qdq")
            if isinstance(note, dict):
                _note(self.state, note, record if isinstance(record, str) else None)


def _note(state: RunState, note: dict[str, Any], record: str | None) -> None:
    state.tracker.note(note["id"], note["form"], note["status"], note.get("expected"), note.get("line"))
    state.form_counts.setdefault(note["form"], Counter())[note["status"]] += 1
    if state.markers is not None and note.get("reason"):
        state.markers.see(note["reason"], note["form"])
    if state.results is not None and state.header is not None and record is not None:
        state.results.write_line(record, state.header)


def nothing_tested(counts: dict[str, int]) -> bool:
    """Every case that ran was unsupported (and at least one ran): the run tested nothing, and exits 5 unless
    --allow-all-unsupported (a backend that declines everything must not turn a CI job green)."""
    return bool(counts) and set(counts) == {RunStatus.UNSUPPORTED.value}


def harness_errors(counts: dict[str, int]) -> int:
    """The cases this tool's own code failed on (``harness-error``): any makes the run exit 3."""
    return sum(n for s, n in counts.items() if s in HARNESS)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    if STATE not in config.stash:
        return
    state = config.stash[STATE]
    if state.gc_paused:  # (collection ended early)
        gc.enable()
        state.gc_paused = False
    if state.pool is not None:
        state.pool.close()
    if is_worker(config):
        return
    if state.rerun is not None:
        state.rerun.save(exitstatus == pytest.ExitCode.INTERRUPTED)
    stale, in_shard = _stale(session, state, exitstatus)
    state.tally = state.tracker.tally(state.expectations, None if state.stale_unchecked else len(stale))
    if nothing_tested(state.tracker.counts) and session.exitstatus == pytest.ExitCode.OK:
        state.all_unsupported = True  # (the summary says so in capitals: terminal.py)
        if not state.allow_all_unsupported:
            session.exitstatus = exitstatus = pytest.ExitCode.NO_TESTS_COLLECTED
    if harness_errors(state.tracker.counts) and session.exitstatus in (pytest.ExitCode.OK,
                                                                        pytest.ExitCode.TESTS_FAILED):
        # the tool's own fault (the summary's last line says so): whatever the backend did, the run is not
        # known to be right
        session.exitstatus = exitstatus = pytest.ExitCode.INTERNAL_ERROR
    summary: Summary = {"counts": dict(sorted(state.tracker.counts.items())),
                        "surprises": state.tracker.surprises[:1000],
                        "stale_expectations": [{"line": e.line, "cases": e.patterns} for e, _ in stale],
                        "stale_markers": state.stale_markers,
                        "expectations": state.tally,
                        "exitstatus": int(exitstatus),
                        "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                        "duration_s": round(time.time() - state.started, 1)}
    if state.stale_unchecked:
        summary["stale_unchecked"] = state.stale_unchecked
        summary["stale_in_shard"] = in_shard
    if state.all_unsupported:
        summary["all_unsupported"] = True
    if state.results is not None and state.header is not None:
        state.results.close(summary, state.header)
    _render_report(session, state)
    # pytest keeps every report until it exits, and collects garbage several times on the way out: keep the
    # run's objects out of those collections too (see pytest_collection_modifyitems).
    gc.freeze()


def _unchecked(session: pytest.Session, state: RunState, exitstatus: int) -> str | None:
    """Why this run cannot say which expectation entries are stale (said after "the run"), or None: only a
    complete run of the whole
    corpus (or of a complete suite; one graph form, for that form's entries) can. A subset (-k, -m, --shard,
    --lf, --sw, deselection), a run stopped early (a signal, -x, --maxfail, --sw) or one in which no case ran
    did not reach every case an entry names, so an entry it did not see is not stale for that."""
    config = session.config
    if exitstatus == pytest.ExitCode.INTERRUPTED:
        return "was interrupted"
    if session.shouldfail or session.shouldstop:
        return f"stopped early ({session.shouldfail or session.shouldstop})"
    if not state.tracker.counts:
        return "ran no case"
    selection = (state.header.get("selection") if state.header else None) or {}
    selected = {k: v for k, v in selection.items() if k != "--form"}
    if selected:
        said = ", ".join(k if v is True else f"{k} {' '.join(v) if isinstance(v, list) else v}"
                         for k, v in selected.items())
        return f"{SUBSET}{said}"
    if state.deselected:
        return f"{SUBSET}{state.deselected} case-form(s) left out"
    suite = config.getoption("qdq_suite")
    if suite and not suite_scope(Path(suite))[0]:
        return "is a suite of part of the corpus"
    return None


def _stale(session: pytest.Session, state: RunState,
           exitstatus: int) -> tuple[list[tuple[expectations_mod.Entry, str]], list[StaleEntry]]:
    """The run's stale expectation entries (their sentences in ``state.stale``) and stale markers, each also a
    pytest warning where warnings are on; none, and ``state.stale_unchecked`` saying why, for a run that is
    not a complete run of the corpus (:func:`_unchecked`). Second: a shard's entries whose every case ran and
    passed there (or was unsupported), which a merge of every shard of a run reads."""
    config = session.config
    forms = set(forms_of(config))
    suite = config.getoption("qdq_suite")
    if suite:  # (an entry for a graph form the suite lacks is never stale)
        forms &= set(suite_scope(Path(suite))[1])
    state.stale_unchecked = _unchecked(session, state, exitstatus) or ""
    if state.stale_unchecked:
        # (a shard and nothing else: what a merge of every shard of the run reads, merge.py)
        reason = state.stale_unchecked
        shard_only = reason.startswith(f"{SUBSET}--shard ") and "," not in reason
        shard: list[StaleEntry] = [{"line": e.line, "cases": e.patterns}
                                   for e, _ in state.tracker.stale(state.expectations, True, forms)] \
            if shard_only else []
        return [], shard
    stale = state.tracker.stale(state.expectations, False, forms)
    warn = config.pluginmanager.has_plugin("warnings")  # a corpus run turns it off (-p no:warnings)
    for e, why in stale:
        state.stale.append(state.expectations.stale_sentence(e, why))
        if warn:
            warnings.warn(pytest.PytestWarning(state.stale[-1]), stacklevel=1)
    if state.markers is not None:
        state.stale_markers = state.markers.stale(forms)
        if warn:
            for line in state.stale_markers:
                warnings.warn(pytest.PytestWarning(line), stacklevel=1)
    return stale, []


def _render_report(session: pytest.Session, state: RunState) -> None:
    """The --report HTML page from the finished results file; one that cannot be written is a usage error."""
    config = session.config
    report_path = config.getoption("qdq_report")
    if report_path:
        # here, not at the top: the report's modules and jinja2 cost every pytest process 0.25 s (measured),
        # and only a run with --report renders one
        from qdq_conformance.reports.render import render_results_file

        try:
            render_results_file(_results_path(config), Path(report_path))
        except OSError as e:  # (writable when the run started: see options.check)
            state.report_error = f"--report {report_path}: not written: {e.strerror or e}"
            if session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.USAGE_ERROR
