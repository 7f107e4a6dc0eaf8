"""What the installed pytest plugin costs a pytest run that does not use it (issue 32).

The ``pytest11`` entry point loads :mod:`qdq_conformance.plugin.entry` in every pytest process of a venv where
the package is installed. Side by side in one run, alternating, this starts ``pytest --collect-only`` on an
empty folder with the plugin and with ``-p no:qdq_conformance`` (the same interpreter, the same venv), and
prints the medians, their difference and ratio. Target: within 50 ms. It also prints how long importing the
entry module itself takes (``-X importtime``), the part that does not depend on the machine's load.

    python benchmarks/bench_plugin_startup.py [--rounds 15]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time


def _start(folder: str, *extra: str) -> float:
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *extra,
                    folder], cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - t


def _entry_import_ms() -> float:
    """Cumulative import time of the entry module on top of pytest (microseconds summed by -X importtime)."""
    out = subprocess.run([sys.executable, "-X", "importtime", "-c",
                          "import pytest; import qdq_conformance.plugin.entry"],
                         capture_output=True, text=True, check=True).stderr
    for line in reversed(out.splitlines()):
        if line.rstrip().endswith("qdq_conformance.plugin.entry"):
            return int(line.split("|")[1]) / 1000
    raise SystemExit("qdq_conformance.plugin.entry was not imported")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15)
    args = ap.parse_args()
    with_plugin: list[float] = []
    without: list[float] = []
    with tempfile.TemporaryDirectory() as folder:
        _start(folder)  # (warm the file-system cache and the byte-code of both sides)
        _start(folder, "-p", "no:qdq_conformance")
        for _ in range(args.rounds):
            with_plugin.append(_start(folder))
            without.append(_start(folder, "-p", "no:qdq_conformance"))
    print(f"pytest start-up, {args.rounds} alternating rounds (the fastest is the least disturbed by load)")
    for what, f in (("median", statistics.median), ("fastest", min)):
        a, b = f(with_plugin), f(without)
        print(f"  {what:8} with the plugin {a * 1000:6.0f} ms, with -p no:qdq_conformance {b * 1000:6.0f} "
              f"ms: {1000 * (a - b):+.0f} ms, ratio {a / b:.3f} (target: within 50 ms)")
    print(f"  importing qdq_conformance.plugin.entry on top of pytest: {_entry_import_ms():.1f} ms")


if __name__ == "__main__":
    main()
