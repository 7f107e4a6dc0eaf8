"""One release's run: the corpus in the release's environment, as ``qdq-conformance run`` runs it (the same
pytest flags, ``--shard``, ``--form``, ``--workers`` ...), its results file and its log kept under the
matrix's output folder (``<backend>-<version>.jsonl``, ``.log``)."""

from __future__ import annotations

import os
import resource
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from ..plugin.options import RUN_FLAGS, cache_flags
from .environments import Environment

#: how a run's progress lines start (``plugin/terminal.py``: a line a minute when not on a terminal)
PROGRESS = "qdq-conformance: "


@dataclass(frozen=True)
class ReleaseRun:
    """How one release's run went: where its results and log are, its exit status, its wall and processor
    seconds (the run and its workers), and the environment it ran in."""

    version: str
    results: Path
    log: Path
    exitstatus: int
    seconds: float
    cpu_seconds: float
    environment: str
    problem: str | None = None  # the run wrote no results


def results_name(backend: str, version: str) -> str:
    safe = backend.replace(":", "_").replace("/", "_")
    return f"{safe}-{version}.jsonl"


def run_release(backend: str, version: str, env: Environment, out: Path, run_args: list[str]) -> ReleaseRun:
    """Run the corpus on ``backend`` in ``env`` (the release ``version``), results into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    results = out / results_name(backend, version)
    log = results.with_suffix(".log")
    results.unlink(missing_ok=True)
    cmd = [env.python, "-m", "pytest", f"--backend={backend}", *RUN_FLAGS, *cache_flags(), "--no-header",
           f"--results={results}", "-o", "console_output_style=count", *run_args]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    with open(log, "w", encoding="utf-8") as fh:
        fh.write(f"# {env.description}\n# {' '.join(cmd)}\n")
        fh.flush()
        with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              env={**os.environ, **env.env}) as proc:
            assert proc.stdout is not None
            for line in proc.stdout:  # the log has every line; the terminal the run's progress lines
                fh.write(line)
                if line.startswith(PROGRESS):
                    print(f"  {backend} {version}: {line[len(PROGRESS):].strip()}", flush=True)
        returncode = proc.returncode
    seconds = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return ReleaseRun(version, results, log, returncode, round(seconds, 1), round(cpu, 1), env.description,
                      _problem(results, log))



def _problem(results: Path, log: Path) -> str | None:
    return None if results.exists() else f"wrote no results (see {log})"
