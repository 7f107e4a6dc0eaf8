"""Seconds to the first line of a run that selects one case (issue 31), with and without collecting only the
case files the selection can match (``qdq_conformance/plugin/selection.py``), measured side by side in one
run.

Each command runs in a fresh process, its output read as it comes: the figure is the time from starting the
process to its first byte of output (stdout or stderr), and to its end. The caches (expansion and selection
index) are filled by a first, untimed run, as after any earlier run. "before": every case file collected
(``QDQ_COLLECT_ALL=1``); "after": as shipped. Target: the first line within 2 s on 2 cores. The CPU seconds of
each command (its process and its backend workers) are printed too: on a machine others load, the wall times
grow with the load, the CPU time hardly.

    python benchmarks/bench_select.py [--backend ort] [--case ID] [--rounds N]
"""

from __future__ import annotations

import argparse
import os
import resource
import selectors
import statistics
import subprocess
import sys
import time

DEFAULT_CASE = "quantizelinear-21-ties-float-int8"


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float, str, float]:
    """(seconds to the first output, seconds to the end, the first line, CPU seconds of the process and its
    children: what a loaded machine does not inflate)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    sel = selectors.DefaultSelector()
    assert proc.stdout is not None and proc.stderr is not None
    sel.register(proc.stdout, selectors.EVENT_READ)
    sel.register(proc.stderr, selectors.EVENT_READ)
    first, text = None, b""
    open_streams = 2
    while open_streams:
        for key, _ in sel.select():
            chunk = os.read(key.fileobj.fileno(), 65536)  # type: ignore[union-attr]
            if not chunk:
                sel.unregister(key.fileobj)
                open_streams -= 1
                continue
            if first is None:
                first = time.perf_counter() - start
            text += chunk
    proc.wait()
    end = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    line = next((ln for ln in text.decode(errors="replace").splitlines() if ln.strip()), "")
    return (first if first is not None else end), end, line, cpu


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--backend", default="ort")
    ap.add_argument("--case", default=DEFAULT_CASE)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    base = {**os.environ}
    base.pop("QDQ_COLLECT_ALL", None)
    commands = {
        "run -k ID": [sys.executable, "-m", "qdq_conformance.cli", "run", "--backend", args.backend, "-k",
                      args.case],
        "show ID": [sys.executable, "-m", "qdq_conformance.cli", "show", args.case, "--backend",
                    args.backend],
    }
    timed(commands["run -k ID"], base)  # fill the caches (untimed)
    print(f"one case ({args.case}) on {args.backend}, {os.cpu_count()} cores; {args.rounds} rounds, medians")
    print(f"load average {os.getloadavg()[0]:.1f}")
    print(f"{'command':12} {'collect':8} {'first output s':>15} {'total s':>8} {'CPU s':>6}  first line")
    for name, cmd in commands.items():
        for label, env in (("all", {**base, "QDQ_COLLECT_ALL": "1"}), ("narrowed", base)):
            got = [timed(cmd, env) for _ in range(args.rounds)]
            first = statistics.median(g[0] for g in got)
            total = statistics.median(g[1] for g in got)
            cpu = statistics.median(g[3] for g in got)
            print(f"{name:12} {label:8} {first:15.2f} {total:8.2f} {cpu:6.2f}  {got[-1][2][:60]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
