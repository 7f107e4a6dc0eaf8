"""The runner's options, defined once: pytest's ``--backend`` and friends, and ``qdq-conformance run``."""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..backends.backend_options import KEYWORD
from ..backends.backend_options import parse as parse_backend_options
from ..backends.names import canonical
from ..backends.names import help_text as backend_names
from ..cachedir import cache_root
from ..cpu import usable_cores
from ..domain import ALL_TIERS, BOTH, FORMS, Tier, parse_shard
from ..generators.suite_archive import is_archive
from .distributed import is_worker

if TYPE_CHECKING:  # (the registry imports every backend: this module is loaded by every pytest process)
    from ..backends.registry import BackendOptions


@dataclass(frozen=True)
class Option:
    flags: tuple[str, ...]
    kwargs: dict[str, Any]


OPTIONS: tuple[Option, ...] = (
    Option(("--backend",), {"metavar": "NAME", "default": None, "type": canonical,
                            "help": "run the conformance corpus against this backend: " + backend_names()}),
    Option(("--suite",), {"metavar": "SUITE", "default": None,
                          "help": "run an exported suite (qdq-conformance generate: its .tar.gz archive, or "
                                  "the folder it extracts to) instead of cases/"}),
    Option(("--cases",), {"metavar": "DIR", "default": None,
                          "help": "folder of YAML case files (default: the repository's cases/)"}),
    Option(("--form",), {"choices": (*FORMS, BOTH), "default": BOTH,
                         "help": "graph form: inputs fed at run time, scale / zero point as initializers, or "
                                 "both (default: both)"}),
    Option(("--tier",), {"choices": (*Tier.values(), ALL_TIERS), "default": Tier.DEFAULT.value,
                         "help": "size tier (default: default; large adds >= 1M-element cases)"}),
    Option(("--case-timeout",), {"type": float, "default": 60.0, "metavar": "SECONDS",
                                 "help": "per-case time limit; the backend's worker is killed and replaced "
                                         "(default: 60)"}),
    Option(("--backend-timeout",), {"type": float, "default": None, "metavar": "SECONDS",
                                    "help": "time limit for creating the backend in a worker; past it the "
                                            "run ends before its first case as a usage error naming the "
                                            "backend (default: --case-timeout)"}),
    Option(("--workers",), {"metavar": "N", "default": "auto",
                            "help": "backend worker processes, which run cases ahead of pytest's reporting "
                                    "(default: auto = the usable cores, at most 4; 1 in each pytest-xdist "
                                    "worker)"}),
    Option(("--expectations",), {"metavar": "PATH", "default": None,
                                 "help": "expectation file (default: expectations/<backend>.yaml when it "
                                         "exists; 'none' to use none)"}),
    Option(("--strict-expectations",), {"action": "store_true", "default": False,
                                        "help": "unexpected passes and failures of another kind fail the "
                                                "run"}),
    Option(("--allow-all-unsupported",), {"action": "store_true", "default": False,
                                          "help": "exit 0 even when every case that ran was unsupported (by "
                                                  "default such a run tested nothing and exits 5)"}),
    Option(("--shard",), {"metavar": "K/N", "default": None,
                          "help": "run only shard K of N of the selected cases (a stable partition by case "
                                  "id, for CI matrix jobs; the results header names the shard)"}),
    Option(("--results",), {"metavar": "PATH", "default": None,
                            "help": "write results as JSON Lines, streamed as cases finish"}),
    Option(("--report",), {"metavar": "PATH", "default": None,
                           "help": "write an HTML compliance report at the end of the run"}),
    Option(("--ort-provider",), {"metavar": "NAME", "default": None,
                                 "help": "ort backend: execution provider (default: CPUExecutionProvider)"}),
    Option(("--ort-optimization",), {"choices": ("disable", "basic", "extended", "all"), "default": None,
                                     "help": "ort backend: graph optimization level (default: all)"}),
    Option(("--backend-option",), {"action": "append", "metavar": "KEY=VALUE", "default": None,
                                   "help": "a setting for the backend, repeatable: ort (and quark) a session "
                                           "config entry or SessionOptions attribute (e.g. "
                                           "session.disable_quant_qdq=1), openvino a compile property (e.g. "
                                           "INFERENCE_NUM_THREADS=1); recorded in the results header and "
                                           "applied by every repro; an unknown key is a usage error"}),
)


OPTION = {opt.flags[0]: opt for opt in OPTIONS}


def add_to_pytest(parser: pytest.Parser) -> None:
    group = parser.getgroup("qdq-conformance", "ONNX Q/DQ conformance")
    for opt in OPTIONS:
        group.addoption(*opt.flags, dest=_dest(opt), **opt.kwargs)


def add_to_argparse(parser: argparse.ArgumentParser) -> None:
    for opt in OPTIONS:
        parser.add_argument(*opt.flags, dest=_dest(opt), **opt.kwargs)


#: pytest flags for a corpus run (the run and compliance commands, the runner benchmark): backends print into
#: their worker's log, never the terminal, so output and log capturing only cost time (about a fifth of a
#: run); the end-of-run list shows failures, errors and unexpected passes, one line each, not the thousands of
#: unsupported cases; --tb=no: no FAILURES section, whose cost grows with failures x cases (pytest looks up
#: each failure's teardown among every item's reports: 1,000 failures of 50,000 cases took minutes), and each
#: failing case is described in one line (items.ONE_LINE_STYLES), its every detail and repro being in the
#: results file and the report; nothing in a corpus run is a Python assert, so pytest need not rewrite the
#: plugin's modules (about a second per process); stale expectations are listed in the run's own summary, so
#: the per-item warnings capture is not needed either; nor is Hypothesis's plugin (installed with the test
#: extra), whose end-of-run summary walks every report; nor pytest-benchmark's (also in the test extra), which
#: has nothing to time here and warns on stderr, after the run's last line, when the run is started from
#: inside a pytest-xdist worker. pytest's cache plugin stays on (``--lf``, ``--sw``), its cache under the
#: project's cache directory (:func:`cache_flags`).
RUN_FLAGS: tuple[str, ...] = ("-q", "--capture=no", "-p", "no:logging", "-p", "no:warnings",
                              "-p", "no:hypothesispytest", "-p", "no:benchmark", "--assert=plain", "-r",
                              "fEX", "--tb=no")


def cache_flags() -> list[str]:
    """pytest's cache (``--lf``, ``--ff``, ``--sw``) under the project's cache directory, not in the current
    folder (a vendor runs the suite from anywhere, an installed package's folder included)."""
    return ["-o", f"cache_dir={cache_root() / 'pytest'}"]


#: pytest's selection and stopping options that ``qdq-conformance run`` takes as its own (anything else goes
#: after ``--``): flags, dest, argparse keywords
PYTEST_HABITS: tuple[tuple[tuple[str, ...], str, dict[str, Any]], ...] = (
    (("-k",), "keyword",
     {"metavar": "EXPRESSION", "help": "pytest's -k: only cases whose id (or family, status, "
                                      "operator, marker) matches, e.g. -k "
                                      "quantizelinear-21"}),
    (("-m",), "markexpr", {"metavar": "MARKEXPR", "help": "pytest's -m: only cases with these markers, e.g. "
                                                         "-m 'v21 and per_axis'"}),
    (("-x", "--exitfirst"), "exitfirst", {"action": "store_true", "help": "stop at the first failure"}),
    (("--maxfail",), "maxfail", {"type": int, "metavar": "N", "help": "stop after N failures"}),
    (("--lf", "--last-failed"), "lf",
     {"action": "store_true", "help": "rerun only the cases that failed (unexpectedly) last time: the last "
                                      "run of the same corpus, backend and selection"}),
    (("--ff", "--failed-first"), "failedfirst",
     {"action": "store_true", "help": "run last time's failures first"}),
    (("--lfnf", "--last-failed-no-failures"), "last_failed_no_failures",
     {"choices": ("all", "none"), "help": "with --lf, when none of the selected cases failed last time: run "
                                          "all (default) or none"}),
    (("--sw", "--stepwise"), "stepwise", {"action": "store_true", "help": "stop at the first failure, resume "
                                                                         "from it next time"}),
    (("--sw-skip", "--stepwise-skip"), "stepwise_skip",
     {"action": "store_true", "help": "--sw, letting the first failure pass and stopping at the next"}),
    (("--sw-reset", "--stepwise-reset"), "stepwise_reset",
     {"action": "store_true", "help": "--sw, starting again from the first case"}),
    (("--tb",), "tbstyle",
     {"metavar": "STYLE", "help": "pytest's traceback style (long: each failing case in "
                                 "full; default: no)"}),
    (("-v", "--verbose"), "verbose", {"action": "count", "default": 0, "help": "one line per case"}),
)


def add_habits(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("pytest options (also accepted after --)")
    for flags, dest, kwargs in PYTEST_HABITS:
        group.add_argument(*flags, dest="pytest_" + dest, **kwargs)


def habits_to_pytest(ns: argparse.Namespace) -> list[str]:
    """The pytest arguments of the habits given to ``qdq-conformance run``."""
    out: list[str] = []
    for flags, dest, kwargs in PYTEST_HABITS:
        value = getattr(ns, "pytest_" + dest, None)
        if kwargs.get("action") == "store_true":
            out += [flags[0]] if value else []
        elif kwargs.get("action") == "count":
            out += ["-v"] * (value or 0)
        elif value is not None:
            out += [flags[0], str(value)]
    return out


def to_pytest_args(ns: argparse.Namespace) -> list[str]:
    """The pytest command line equivalent of parsed ``qdq-conformance run`` options."""
    args: list[str] = []
    for opt in OPTIONS:
        value = getattr(ns, _dest(opt))
        if opt.kwargs.get("action") == "store_true":
            if value:
                args.append(opt.flags[0])
        elif opt.kwargs.get("action") == "append":
            for one in value or ():
                args += [opt.flags[0], str(one)]
        elif value is not None and value != opt.kwargs.get("default"):
            args += [opt.flags[0], str(value)]
    return args


def _dest(opt: Option) -> str:
    return "qdq_" + opt.flags[0].lstrip("-").replace("-", "_")


def backend_options(config: pytest.Config) -> BackendOptions:
    """The backend's options: --ort-provider, --ort-optimization, --backend-option's pairs."""
    return {"ort_provider": config.getoption("qdq_ort_provider"),
            "ort_optimization": config.getoption("qdq_ort_optimization"),
            KEYWORD: parse_backend_options(config.getoption("qdq_backend_option"))}


def create_timeout(config: pytest.Config) -> float:
    """Seconds a worker may take to create the backend: --backend-timeout, else --case-timeout."""
    return float(config.getoption("qdq_backend_timeout") or config.getoption("qdq_case_timeout"))


def worker_count(config: pytest.Config) -> int:
    """--workers as a number: ``auto`` is the usable cores (at most 4: one pytest process cannot keep more
    busy), and 1 in a pytest-xdist worker, whose siblings already use the other cores. More than four per
    usable core (at least 8) is refused: each is a process with the backend loaded, and thousands exhaust the
    machine."""
    value = str(config.getoption("qdq_workers"))
    if value != "auto":
        try:
            n = int(value)
        except ValueError:
            raise pytest.UsageError(f"--workers: expected a number or 'auto', got {value!r}") from None
        if n < 1:
            raise pytest.UsageError(f"--workers: expected at least 1, got {n}")
        most = max(8, 4 * usable_cores())
        if n > most:
            raise pytest.UsageError(f"--workers: at most {most} here ({usable_cores()} usable cores), got "
                                    f"{n}")
        return n
    if is_worker(config):
        return 1
    return max(1, min(usable_cores(), 4))


def results_path(config: pytest.Config) -> Path | None:
    """--results, or next to --report (report.html -> report.jsonl: a report is always rendered from a file);
    None when neither is given."""
    if config.getoption("qdq_results"):
        return Path(config.getoption("qdq_results"))
    report = config.getoption("qdq_report")
    return Path(report).with_suffix(".jsonl") if report else None


def check(config: pytest.Config) -> None:
    """The usage errors a run can know of before it starts a backend or runs a case, each one line (exit
    status 4): a time limit (--case-timeout, --backend-timeout) that is not a positive number of seconds, a
    --cases folder with no case file or a --suite folder that is not an exported suite, an expectation file
    that is not a file, a results file or report that cannot be written (tried, not guessed: permission bits
    say nothing to root)."""
    try:
        parse_backend_options(config.getoption("qdq_backend_option"))
    except ValueError as e:
        raise pytest.UsageError(str(e)) from None
    for flag in ("--case-timeout", "--backend-timeout"):
        timeout = config.getoption(_dest(OPTION[flag]))
        if timeout is not None and not (math.isfinite(timeout) and timeout > 0):
            raise pytest.UsageError(f"{flag}: expected a positive number of seconds, got {timeout:g}")
    shard = config.getoption("qdq_shard")
    if shard is not None:
        try:
            parse_shard(shard)
        except ValueError as e:
            raise pytest.UsageError(f"--shard: {e}") from None
    folder = _case_folder(config)
    if folder:
        raise pytest.UsageError(folder)
    exp = config.getoption("qdq_expectations")
    if exp and exp != "none":
        why = _not_a_file(Path(exp))
        if why:
            raise pytest.UsageError(f"--expectations {exp}: {why}")
    if is_worker(config):  # (a pytest-xdist worker writes neither)
        return
    report = config.getoption("qdq_report")
    results = results_path(config)
    if report and results is not None and Path(report).absolute() == results.absolute():
        raise pytest.UsageError(f"--report {report}: the same file as --results")
    checks = [(f"--report {report}", Path(report))] if report else []
    if results is not None:
        given = config.getoption("qdq_results")
        checks.append((f"--results {given}" if given else f"--report {report} (its results file {results})",
                       results))
    # (imported here: the options module is loaded by every pytest process, a run's checks by runs only)
    from ..results import unwritable

    for what, path in checks:
        why = unwritable(path)
        if why:
            raise pytest.UsageError(f"{what}: {why}")


def _case_folder(config: pytest.Config) -> str | None:
    """What is wrong with --cases DIR (no case file in it) or --suite SUITE (not an exported suite: neither a
    .tar.gz file nor a folder with a manifest.json), if anything."""
    suite = config.getoption("qdq_suite")
    if suite and is_archive(suite) and not Path(suite).is_dir():
        why = _not_a_file(Path(suite))
        return f"--suite {suite}: {why}" if why else None
    for option, flag, wanted, what, kind in (
            ("qdq_cases", "--cases", "*.yaml", "no case file (*.yaml) in it", "directory"),
            ("qdq_suite", "--suite", "manifest.json", "no manifest.json in it (not a suite `qdq-conformance "
                                                      "generate` wrote)", "directory (nor a .tar.gz)")):
        given = config.getoption(option)
        if not given:
            continue
        folder = Path(given)
        try:
            if not folder.is_dir():
                return f"{flag} {given}: " + (f"not a {kind}" if folder.exists() else f"no such {kind}")
            if not any(p.is_file() for p in folder.glob(wanted)):
                return f"{flag} {given}: {what}"
        except OSError as e:
            return f"{flag} {given}: cannot read: {e.strerror or e}"
    return None


def _not_a_file(path: Path) -> str | None:
    try:
        if path.is_file():
            with path.open("rb"):
                return None
        return "is a directory" if path.is_dir() else "no such file"
    except OSError as e:
        return f"cannot read: {e.strerror or e}"
