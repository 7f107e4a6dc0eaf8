"""A corpus run on the terminal: one progress line instead of pytest's letters, and the run's summary in the
project's own words as the last thing printed.

pytest writes a letter per test: 50,000 of them for a corpus run, with no count or time left, and its final
line counts implementation-defined cases as passed and unsupported ones as skipped. Here, while the cases run
(verbosity 0 or -q; ``-v`` keeps pytest's line per test):

- on a terminal, one line (done / total, rate, time left, failures so far) redrawn in place;
- elsewhere (a CI log, a pipe), a line when the run starts and one a minute (OFF_TTY_EVERY), no letters;

and after pytest's own final line: the counts per status (passed, failed, error, crashed, timeout,
invalid-accepted, unsupported, implementation-defined), expected (an expectation says so) vs unexpected, the
expectations in force, where the results and the report are, and what the exit status means (EXIT_STATUS).

Only public pytest API: a ``pytest_report_teststatus`` wrapper that keeps every report's category (the counts,
``-r`` and the final line are pytest's as ever) and blanks its letter while the cases run; a
``pytest_sessionfinish`` wrapper run first, whose code after the yield comes after pytest's final line; the
TerminalReporter's ``write_line``, ``write_sep``, ``rewrite`` and ``isatty``.
"""

from __future__ import annotations

import shutil
import time
from collections import Counter
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass, field
from typing import Any, Union

import pytest

from ..domain import HARNESS, RunStatus
from ..progress import Progress, duration
from ..results.tally import needs_attention, summary_lines
from .state import RunState

#: seconds between two progress lines off a terminal
OFF_TTY_EVERY = 60.0
#: seconds between two redraws of the progress line on a terminal
TTY_EVERY = 0.2
#: unexpected failures named in the summary (every one is in pytest's list above it, the results and the
#: report)
FIRST_UNEXPECTED = 10
#: the statuses in the order the summary lists them
ORDER = RunStatus.values()

#: exit status 2 of a run that started (its command line was parsed)
INTERRUPTED = ("interrupted (Ctrl-C, SIGTERM or SIGHUP: the finished results are kept, their summary marked "
               "interrupted)")
#: what the exit status of a run (``qdq-conformance run``, ``pytest --backend``) means
EXIT_STATUS: dict[int, str] = {
    0: "no unexpected failure: every case passed, was unsupported or implementation-defined, or ended as its "
       "expectation says",
    1: "unexpected failures: a case failed, errored, crashed, timed out or accepted an invalid model with no "
       "expectation saying so (under --strict-expectations: ended other than its expectation says), or a "
       "case file could not be loaded; -x, --maxfail and --sw stop at one",
    2: f"{INTERRUPTED}; `qdq-conformance run`: its command line could not be parsed",
    3: "the fault is this tool's: an exception in qdq-conformance's own code while running a case (a harness "
       "error: the case's status is harness-error, counted apart, never a finding; said in one line at the "
       "end, the finished results kept), or an internal error in the runner or a pytest plugin",
    4: "usage error: an unknown backend or option, an option out of range (--case-timeout, "
       "--backend-timeout, --workers), a --cases folder with no case file or a --suite that is neither a "
       ".tar.gz file nor a folder with a manifest.json, a --results or --report that cannot be written (its "
       "folder missing too), a backend option it does not know, a backend that cannot be created (its "
       "package not installed, its factory raising, or taking longer than --backend-timeout), or an "
       "expectation file that cannot be read (said in one line before any case runs); also a run that found "
       "nothing else wrong but whose report could not be written at its end (said in one line; the results "
       "are kept)",
    5: "nothing tested: no case selected (-k, -m, --form or --suite matched nothing), or every case that ran "
       "was unsupported by the backend (said in capitals; --allow-all-unsupported makes that exit 0)",
    6: "more warnings than pytest's --max-warnings allows",
}


@dataclass
class Tally:
    """What the summary counts, report by report: per status, the cases whose expectation held (expected) and
    the cases that fail the run (unexpected, as pytest's exit status sees them)."""

    done: int = 0  # items finished (their teardown reported)
    failed_reports: int = 0  # reports that fail the run
    expected: Counter[str] = field(default_factory=Counter)
    unexpected: Counter[str] = field(default_factory=Counter)
    against: Counter[str] = field(default_factory=Counter)  # passed though an expectation says they fail
    other_failures: int = 0  # failures that are no case's (a case file that cannot be loaded, a Python test)
    first: list[str] = field(default_factory=list)  # the first unexpected failures, one line each

    def add(self, report: pytest.TestReport, category: Callable[[pytest.TestReport], str]) -> None:
        """Count ``report``; ``category``: pytest's result category of a report (``xfailed``, ``xpassed``,
        ...)."""
        if report.when == "teardown":
            self.done += 1
        if report.failed:
            self.failed_reports += 1
        if not (report.when == "call" or (report.when == "setup" and not report.passed)):
            return
        note: dict[str, Any] | None = None
        for key, value in report.user_properties:
            if key == "qdq_outcome":
                note = value  # type: ignore[assignment]  # (the runner's note, see CaseItem.runtest)
        if note is None:
            if report.failed:
                self.other_failures += 1
                self._remember(report, None)
            return
        status = note["status"]
        if report.failed:
            self.unexpected[status] += 1
            self._remember(report, note)
        else:
            kind = category(report)
            if kind == "xfailed":
                self.expected[status] += 1
            elif kind == "xpassed":
                # passed though an expectation says it fails (--strict-expectations: a failure)
                self.against[status] += 1

    def _remember(self, report: pytest.TestReport, note: dict[str, Any] | None) -> None:
        if len(self.first) >= FIRST_UNEXPECTED:
            return
        lines = report.longreprtext.strip().splitlines() or [""]
        if note is None:
            self.first.append(f"{report.nodeid}: {lines[0]}")
            return
        # the one-line form (a corpus run's --tb) is "status: message"; the full description has a message
        # line
        message = next((ln[len("message: "):] for ln in lines if ln.startswith("message: ")), None)
        text = lines[0] if message is None else f"{note['status']}: {message}"
        self.first.append(f"{note['id']} [{note['form']}]: {text[:300]}")


#: what pytest_report_teststatus gives: (category, letter, word), the word with its markup or not
TestStatus = Union[pytest.TestShortLogReport,  # noqa: UP007 - a runtime alias (Python 3.10)
                   tuple[str, str, Union[str, tuple[str, Mapping[str, bool]]]]]  # noqa: UP007

class RunTerminal:
    """Registered by the runner's pytest_configure in the process that reports (not in a pytest-xdist
    worker)."""

    def __init__(self, config: pytest.Config, state: RunState) -> None:
        self.config = config
        self.state = state
        self.tally = Tally()
        self.tr: Any = None
        self.tty = False
        self.quiet = False  # pytest's letters are replaced (verbosity <= 0)
        self.running = False
        self.session: pytest.Session | None = None
        self.progress: Progress | None = None
        self.total = 0  # items to run: this process's, or under pytest-xdist a worker's collection

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.total = len(session.items)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: object, ids: list[str]) -> None:
        # (pytest-xdist's hook, on the controller: every worker collects the same items)
        self.total = len(ids)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.session = session
        self.tr = self.config.pluginmanager.get_plugin("terminalreporter")
        if self.tr is not None:
            isatty = self.tr.isatty
            self.tty = bool(isatty() if callable(isatty) else isatty)
            self.quiet = self.config.getoption("verbose") <= 0 and not self.config.getoption("collectonly")

    @pytest.hookimpl(wrapper=True)
    def pytest_report_teststatus(self, report: pytest.TestReport | pytest.CollectReport,
                                 config: pytest.Config) -> Generator[None, TestStatus, TestStatus]:
        result = yield
        if self.running and self.quiet and result:
            return (result[0], "", "")  # same category (counts, -r, the final line); no letter
        return result

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, object, object]:
        # (under pytest-xdist, the number of cases is known once the workers collected)
        self.running = self.quiet
        if self.running:
            self.progress = Progress(self.state.backend_name or "cases", enabled=False,
                                     every=TTY_EVERY if self.tty else OFF_TTY_EVERY)
            if self.tty:
                self._draw(force=True)
            else:
                self.progress.due(0, 1)  # the first line a minute from now
                n = f"{self.total:,} case(s)" if self.total else "the cases"
                self.tr.write_line(f"qdq-conformance: running {n} against {self.state.backend_name} "
                                   f"{self.state.backend_version}; a progress line every {OFF_TTY_EVERY:.0f} "
                                   "s")
        try:
            return (yield)
        finally:
            if self.running:
                self.running = False
                if self.tty:
                    self._draw(force=True)
                    self.tr.write("\n", flush=True)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.tally.add(report, self._category)
        if self.running and report.when == "teardown" and self.tally.done < self.total:
            self._draw()  # (the last one is drawn when the loop ends)

    def _category(self, report: pytest.TestReport) -> str:
        """pytest's result category of ``report``, as the terminal shows it (``pytest_report_teststatus``)."""
        status = self.config.hook.pytest_report_teststatus(report=report, config=self.config)
        return str(status[0]) if status else ""

    def _extra(self) -> str:
        n = self.tally.failed_reports
        expected = sum(self.tally.expected.values())
        text = f"{n:,} unexpected failure{'s' if n != 1 else ''}"
        return text + (f", {expected:,} expected" if expected else "")

    def _draw(self, force: bool = False) -> None:
        progress, session = self.progress, self.session
        if progress is None or session is None:
            return
        total, done = self.total, self.tally.done
        if total <= 0 or (not force and not progress.due(done, total)):
            return
        if not self.tty:
            if done < total:  # (the summary tells the end)
                self.tr.write_line("qdq-conformance: " + progress.text(done, total, self._extra(), width=0))
            return
        cols = _columns()
        bare = progress.text(done, total, self._extra(), width=0)
        bar = min(30, cols - 1 - len(bare) - 3)
        text = progress.text(done, total, self._extra(), width=bar) if bar >= 10 else bare
        self.tr.rewrite(text[:cols - 1], erase=True, bold=self.tally.failed_reports == 0,
                        red=self.tally.failed_reports > 0)
        self.tr.flush()

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> Generator[None, None, None]:
        result = yield  # the results file, the report, and pytest's own summary, final line included
        if self.tr is not None and not self.config.getoption("collectonly"):
            status = int(session.exitstatus)
            ok = status == 0
            self.tr.write_sep("=", f"qdq-conformance: {self.state.backend_name} {self.state.backend_version}",
                              green=ok, red=not ok, bold=True)
            for line, markup in run_summary(self.state, self.tally, self.config, status,
                                            _columns() if self.tty else None):
                self.tr.write_line(line, **markup)
        return result


def _columns() -> int:
    cols = shutil.get_terminal_size((80, 24)).columns
    return cols if cols >= 40 else 80


def _cut(line: str, width: int | None) -> str:
    return line if width is None or len(line) < width else line[:width - 4] + "..."


#: A graph form in which at least this share of the cases is unsupported gets a sentence of its own.
MOSTLY_UNSUPPORTED = 0.9


def mostly_unsupported(state: RunState) -> list[str]:
    """A sentence for each graph form of a run with several in which nearly every case is unsupported (tract's
    runtime form, say): how many, and the refusal that explains most of them when the backend's markers
    say."""
    if len(state.form_counts) < 2:
        return []
    lines = []
    for form, counts in sorted(state.form_counts.items()):
        total, unsupported = sum(counts.values()), counts.get("unsupported", 0)
        if not total or unsupported < MOSTLY_UNSUPPORTED * total:
            continue
        line = (f"{form} form: {unsupported:,} of {total:,} case(s) unsupported by {state.backend_name}"
                f" ({total - unsupported:,} judged or passed)")
        top = state.markers.commonest(form) if state.markers is not None else None
        if top is not None:
            line += (f"; {top[1]:,} of them because {state.backend_name} says {top[0].fragment!r}: "
                     f"{top[0].meaning}")
        lines.append(line)
    return lines


def _count_lines(state: RunState, tally: Tally) -> list[tuple[str, dict[str, bool]]]:
    """The summary's head: how many cases ran in how long (of which selection), then one line per status with
    how many of them an expectation foresaw, did not, or says fail."""
    counts = Counter(state.tracker.counts)
    statuses = [s for s in (*ORDER, *sorted(counts)) if counts[s]]
    statuses = list(dict.fromkeys(statuses))
    total = sum(counts.values())
    elapsed = duration(time.time() - state.started)
    if not total:
        return [("no case ran", {})]
    selected = (state.header.get("selection") if state.header else None) or {}
    sel = ", ".join(k if v is True else f"{k} {v}" for k, v in selected.items())
    out: list[tuple[str, dict[str, bool]]] = [
        (f"{total:,} case(s) in {elapsed}" + (f" (a subset of the corpus: {sel})" if sel else ""),
         {"bold": True})]
    col = max(len(s) for s in statuses)
    for s in statuses:
        detail = []
        if tally.expected[s]:
            detail.append(f"{tally.expected[s]:,} expected")
        if tally.unexpected[s]:
            detail.append(f"{tally.unexpected[s]:,} unexpected")
        if tally.against[s]:
            detail.append(f"{tally.against[s]:,} though an expectation says they fail")
        markup = {"red": True} if tally.unexpected[s] else {"yellow": True} if tally.against[s] else {}
        out.append((f"  {s:<{col}} {counts[s]:>9,}" + (f"   ({', '.join(detail)})" if detail else ""),
                    markup))
    return out


def harness_line(n: int, state: RunState) -> str:
    """The one line that says a run hit harness errors, and whose fault they are."""
    return (f"HARNESS ERROR: qdq-conformance's own code raised on {n:,} case(s): the fault is the tool's, "
            f"not {state.backend_name} {state.backend_version}'s; those cases tell nothing of the backend "
            "and are no finding (their status is harness-error; each one's traceback is in the results): "
            "please report it")


def run_summary(state: RunState, tally: Tally, config: pytest.Config, exitstatus: int,
                width: int | None = None) -> list[tuple[str, dict[str, bool]]]:
    """The run's summary, line by line with its terminal markup (``width``: a terminal's, to which the lines
    naming failures are cut, as pytest cuts its own list)."""
    out = _count_lines(state, tally)
    if state.all_unsupported:
        total = sum(Counter(state.tracker.counts).values())
        allowed = "; --allow-all-unsupported: exit status 0" if state.allow_all_unsupported else ""
        out.append((f"NOTHING WAS TESTED: ALL {total:,} CASE(S) WERE UNSUPPORTED by {state.backend_name} "
                    f"{state.backend_version} (each one's reason is in the results){allowed}",
                    {"red": True, "bold": True}))
    if tally.other_failures:
        out.append((f"{tally.other_failures} failure(s) of no case (a case file that cannot be loaded, or a "
                    "Python test): see pytest's list above", {"red": True}))
    out += [(line, {"yellow": True}) for line in mostly_unsupported(state)]
    status = state.header.get("expectations_status") if state.header else None
    loud = {"yellow": True, "bold": True} if needs_attention(status) else {}
    for line in summary_lines(status, state.tally, state.stale_unchecked):  # loud when not recorded here
        out.append((line, loud))
    surprises = state.tracker.surprises
    if surprises:
        out.append((f"{len(surprises)} case(s) ended other than their expectation says "
                    "(first ones below; --strict-expectations makes them fail):", {}))
        out += [(f"  {s}", {}) for s in surprises[:20]]
    if state.stale:
        out.append((f"{len(state.stale)} stale expectation(s):", {}))
        out += [(f"  {line}", {}) for line in state.stale[:20]]
    if state.stale_markers:
        out.append((f"{len(state.stale_markers)} stale marker(s):", {"yellow": True}))
        out += [(f"  {line}", {}) for line in state.stale_markers]
    unexpected = tally.failed_reports
    if tally.first:
        which = f"the first {len(tally.first)} of {unexpected:,}" if unexpected > len(tally.first) else "all"
        out.append((f"unexpected failures ({which}; each one's detail and repro are in the results and the "
                    "report):", {}))
        out += [(_cut(f"  {line}", width), {"red": True}) for line in tally.first]
    if state.results is not None:
        out.append((f"results: {state.results.path}", {}))
    if state.report_error:
        out.append((state.report_error, {"red": True}))
    elif config.getoption("qdq_report", None):
        out.append((f"report:  {config.getoption('qdq_report')}", {}))
    meaning = INTERRUPTED if exitstatus == 2 else EXIT_STATUS.get(exitstatus, "see pytest's exit codes")
    harness = sum(n for s, n in state.tracker.counts.items() if s in HARNESS)
    if harness:
        out.append((harness_line(harness, state), {"red": True, "bold": True}))
    if exitstatus == 3 and harness:
        meaning = (f"the fault is qdq-conformance's: {harness:,} harness error(s)"
                   + (f", and {unexpected - harness:,} unexpected failure(s)" if unexpected > harness
                      else ""))
    elif exitstatus == 1 and unexpected:
        meaning = f"{unexpected:,} unexpected failure(s)"
    elif exitstatus == 5 and state.all_unsupported:
        meaning = "nothing tested: every case that ran was unsupported (--allow-all-unsupported accepts that)"
    out.append((f"exit status {exitstatus}: {meaning}", {"bold": True, "green": exitstatus == 0,
                                                          "red": exitstatus != 0}))
    return out
