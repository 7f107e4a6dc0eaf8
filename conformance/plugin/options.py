"""The runner's options, defined once: pytest's ``--backend`` and friends, and ``qdq-conformance run``."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any

import pytest


@dataclass(frozen=True)
class Option:
    flags: tuple[str, ...]
    kwargs: dict[str, Any]


OPTIONS: tuple[Option, ...] = (
    Option(("--backend",), {"metavar": "NAME", "default": None,
                            "help": "run the conformance corpus against this backend: ort, onnx-reference, "
                                    "reference, onnx-backend:MODULE, command:CMD, python:MODULE:FACTORY, or a "
                                    "name registered under the entry-point group onnx_qdq_conformance.backends"}),
    Option(("--suite",), {"metavar": "DIR", "default": None,
                          "help": "run an exported suite folder (qdq-conformance generate) instead of cases/"}),
    Option(("--cases",), {"metavar": "DIR", "default": None,
                          "help": "folder of YAML case files (default: the repository's cases/)"}),
    Option(("--form",), {"choices": ("runtime", "initializer", "both"), "default": "both",
                         "help": "graph form: inputs fed at run time, scale / zero point as initializers, or both "
                                 "(default: both)"}),
    Option(("--tier",), {"choices": ("default", "large", "all"), "default": "default",
                         "help": "size tier (default: default; large adds >= 1M-element cases)"}),
    Option(("--case-timeout",), {"type": float, "default": 60.0, "metavar": "SECONDS",
                                 "help": "per-case time limit; the backend's worker is killed and replaced (default: 60)"}),
    Option(("--workers",), {"metavar": "N", "default": "auto",
                            "help": "backend worker processes, which run cases ahead of pytest's reporting "
                                    "(default: auto = the usable cores, at most 4; 1 in each pytest-xdist "
                                    "worker)"}),
    Option(("--expectations",), {"metavar": "PATH", "default": None,
                                 "help": "expectation file (default: expectations/<backend>.yaml when it exists; "
                                         "'none' to use none)"}),
    Option(("--strict-expectations",), {"action": "store_true", "default": False,
                                        "help": "unexpected passes and failures of another kind fail the run"}),
    Option(("--results",), {"metavar": "PATH", "default": None,
                            "help": "write results as JSON Lines, streamed as cases finish"}),
    Option(("--report",), {"metavar": "PATH", "default": None,
                           "help": "write an HTML compliance report at the end of the run"}),
    Option(("--ort-provider",), {"metavar": "NAME", "default": None,
                                 "help": "ort backend: execution provider (default: CPUExecutionProvider)"}),
    Option(("--ort-optimization",), {"choices": ("disable", "basic", "extended", "all"), "default": None,
                                     "help": "ort backend: graph optimization level (default: all)"}),
)


def add_to_pytest(parser: pytest.Parser) -> None:
    group = parser.getgroup("qdq-conformance", "ONNX Q/DQ conformance")
    for opt in OPTIONS:
        group.addoption(*opt.flags, dest=_dest(opt), **opt.kwargs)


def add_to_argparse(parser: argparse.ArgumentParser) -> None:
    for opt in OPTIONS:
        parser.add_argument(*opt.flags, dest=_dest(opt), **opt.kwargs)


#: pytest flags for a corpus run (the run and compliance commands, the runner benchmark): backends print into their
#: worker's log, never the terminal, so output and log capturing only cost time (about a fifth of a run); the
#: end-of-run list shows failures, errors and unexpected passes, one line each, not the thousands of unsupported
#: cases; --tb=no: no FAILURES section, whose cost grows with failures x cases (pytest looks up each failure's
#: teardown among every item's reports: 1,000 failures of 50,000 cases took minutes), and each failing case is
#: described in one line (items.ONE_LINE_STYLES), its every detail and repro being in the results file and the
#: report; nothing in a corpus run is a Python assert, so pytest need not rewrite the plugin's modules (about a
#: second per process); stale expectations are listed in the run's own summary, so the per-item warnings capture
#: is not needed either; nor is Hypothesis's plugin (installed with the test extra), whose end-of-run summary walks
#: every report.
RUN_FLAGS: tuple[str, ...] = ("-q", "-p", "no:cacheprovider", "--capture=no", "-p", "no:logging", "-p", "no:warnings",
                              "-p", "no:hypothesispytest", "--assert=plain", "-r", "fEX", "--tb=no")


def to_pytest_args(ns: argparse.Namespace) -> list[str]:
    """The pytest command line equivalent of parsed ``qdq-conformance run`` options."""
    args: list[str] = []
    for opt in OPTIONS:
        value = getattr(ns, _dest(opt))
        if opt.kwargs.get("action") == "store_true":
            if value:
                args.append(opt.flags[0])
        elif value is not None and value != opt.kwargs.get("default"):
            args += [opt.flags[0], str(value)]
    return args


def _dest(opt: Option) -> str:
    return "qdq_" + opt.flags[0].lstrip("-").replace("-", "_")


def backend_options(config: pytest.Config) -> dict[str, Any]:
    return {"ort_provider": config.getoption("qdq_ort_provider"),
            "ort_optimization": config.getoption("qdq_ort_optimization")}


def worker_count(config: pytest.Config) -> int:
    """--workers as a number: ``auto`` is the usable cores (at most 4: one pytest process cannot keep more busy),
    and 1 in a pytest-xdist worker, whose siblings already use the other cores."""
    import os

    value = str(config.getoption("qdq_workers"))
    if value != "auto":
        try:
            n = int(value)
        except ValueError:
            raise pytest.UsageError(f"--workers: expected a number or 'auto', got {value!r}") from None
        if n < 1:
            raise pytest.UsageError(f"--workers: expected at least 1, got {n}")
        return n
    if hasattr(config, "workerinput"):
        return 1
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(cores, 4))
