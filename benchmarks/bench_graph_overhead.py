"""A full default-corpus run on ONNX Runtime, this tree against a baseline commit, side by side in one run.

Issue 28 adds graph cases to the corpus (and a node-by-node run for each failing one); its target: a full
default-corpus run on ``ort`` takes at most 1.25x what it took before. The baseline commit (default: 1777058,
the main branch the graph cases were built on) is checked out in a temporary git worktree and imported through
a shadow site folder (its ``conformance/`` as ``qdq_conformance``, with ``generators``, ``reports``, ``cases``
and ``expectations`` linked in, as pyproject's package-dir maps them), ahead of this tree's editable install.
Each tree's corpus cache is filled first (a collection), in a cache folder of its own; then the runs
alternate, baseline then this tree, ``--rounds`` times, each as ``qdq-conformance run`` runs it (the flags of
.ci/run), both graph forms, the bundled expectations. Prints each run's wall time, case count and the ratio of
the medians.

    python benchmarks/bench_graph_overhead.py [--baseline 1777058] [--rounds 1] [-k EXPR]

Measured (2026-11-26, 2 cores shared with other work, ONNX Runtime 1.32.0): baseline 185.0 s for 63,896
case-forms, this tree 199.3 s for 64,912 (508 graph cases in both forms added): 1.08x.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET = 1.25
RUN_FLAGS = ["-q", "-p", "no:cacheprovider", "--capture=no", "-p", "no:logging", "-p", "no:warnings",
             "-p", "no:hypothesispytest", "--assert=plain", "-r", "fEX", "--tb=no"]
#: the package-dir mapping of pyproject.toml: subpackage -> repository folder
SUBPACKAGES = {"generators": "generators", "reports": "reports", "cases": "cases",
               "expectations": "expectations"}


def shadow_site(tree: Path, site: Path) -> Path:
    """A folder that imports ``qdq_conformance`` from ``tree`` (a checkout) as an install would."""
    pkg = site / "qdq_conformance"
    shutil.copytree(tree / "conformance", pkg, symlinks=True)
    for sub, folder in SUBPACKAGES.items():
        (pkg / sub).symlink_to(tree / folder, target_is_directory=True)
    return site


def _env(site: Path | None, cache: Path) -> dict[str, str]:
    env = dict(os.environ, QDQ_CACHE_DIR=str(cache))
    if site is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(site), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def _where(env: dict[str, str]) -> str:
    return subprocess.run([sys.executable, "-c", "import qdq_conformance; print(qdq_conformance.__file__)"],
                          env=env, capture_output=True, text=True, check=True).stdout.strip()


def plugin_args(tree: Path) -> list[str]:
    """How pytest loads the tree's plugin: through the venv's entry point (this tree's), or, for a tree from
    before the entry point moved (``plugin/entry.py``, 056602d), its hooks module by name instead."""
    if (tree / "conformance" / "plugin" / "entry.py").exists():
        return []
    return ["-p", "no:qdq_conformance", "-p", "qdq_conformance.plugin.hooks"]


def _run(env: dict[str, str], cwd: Path, results: Path, select: list[str]) -> tuple[float, int, str]:
    cmd = [sys.executable, "-m", "pytest", *RUN_FLAGS, *plugin_args(cwd), "--backend=ort", "--form", "both",
           "--results", str(results), *select]
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    cases = sum(1 for line in results.read_text().splitlines() if '"type": "case"' in line) \
        if results.exists() else 0
    tail = (done.stdout.strip().splitlines() or ["(no output)"])[-1]
    return seconds, cases, tail


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", default="1777058", help="the commit to compare with (default: %(default)s)")
    ap.add_argument("--rounds", type=int, default=1, help="timed runs of each tree (default: %(default)s)")
    ap.add_argument("-k", default=None, help="a pytest -k selection (default: the whole default corpus)")
    args = ap.parse_args()
    select = ["-k", args.k] if args.k else []
    work = Path(tempfile.mkdtemp(prefix="qdq-bench-graph-"))
    old = work / "baseline"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(old), args.baseline],
                   check=True, capture_output=True)
    try:
        site = shadow_site(old, work / "site")
        trees = {"baseline": (old, _env(site, work / "cache-baseline")),
                 "this tree": (ROOT, _env(None, work / "cache-new"))}
        for name, (tree, env) in trees.items():
            where, expected = _where(env), site if tree == old else tree
            assert where.startswith(str(expected)), f"{name}: imports {where}, not from {expected}"
            subprocess.run([sys.executable, "-m", "pytest", *plugin_args(tree), "--backend=ort",
                            "--collect-only",
                            # fills the cache
                            "-q", *select], env=env, cwd=tree, capture_output=True, check=False)
        times: dict[str, list[float]] = {name: [] for name in trees}
        for r in range(args.rounds):
            for name, (tree, env) in trees.items():
                label = re.sub(r"\W", "", name)
                seconds, cases, tail = _run(env, tree, work / f"{label}-{r}.jsonl", select)
                times[name].append(seconds)
                print(f"round {r + 1}: {name:9} {seconds:7.1f} s, {cases:,} case-forms ({tail})", flush=True)
        base, new = (statistics.median(times[n]) for n in trees)
        ratio = new / base
        print(f"ort full default corpus, both forms: baseline {args.baseline} {base:.1f} s, this tree "
              f"{new:.1f} s: {ratio:.2f}x (target <= {TARGET}x: {'met' if ratio <= TARGET else 'NOT met'})")
        return 0
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(old)], check=False,
                       capture_output=True)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
