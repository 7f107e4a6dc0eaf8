"""`qdq-conformance generate` of the default tier: seconds, and the ratio to an earlier version of the code,
measured side by side in one run.

The earlier version (``--baseline``, a git revision, default: where this branch left main, ``git merge-base
HEAD main``) is taken from this checkout with
``git archive`` into a temporary folder and imported from there; both versions run the same command line
(``generate --out DIR -j JOBS``, default tier, runtime form) as child processes, alternating (baseline,
current, current, baseline, ...) so that a change in the machine's load weighs on both. Prints, per run, wall
seconds and the CPU seconds of the process and its workers; then the medians, the ratio current / baseline,
the files and distinct inodes written, and whether two runs of the current code wrote identical bytes. Target
(issue 26): the default tier generates in <= 60 s on 2 cores with -j 2.

    python benchmarks/bench_generate.py [--baseline REV] [--rounds 2] [--jobs 2] [--dir DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: the repository's folders and where the installed package has them (pyproject's package-dir)
PACKAGES = {"generators": "generators", "reports": "reports", "cases": "cases",
            "expectations": "expectations"}


def checkout(revision: str, where: Path) -> Path:
    """``revision``'s tree under ``where``, importable as ``qdq_conformance`` from the returned folder."""
    src = where / "src"
    src.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", revision], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(src)], input=archive, check=True)
    for sub, folder in PACKAGES.items():  # qdq_conformance.generators is generators/, and so on
        (src / "conformance" / sub).symlink_to(src / folder, target_is_directory=True)
    site = where / "site"
    site.mkdir()
    (site / "qdq_conformance").symlink_to(src / "conformance", target_is_directory=True)
    return site


def run(site: Path | None, out: Path, jobs: int, cache: Path) -> tuple[float, float]:
    """One generate (of the code under ``site``; None: this checkout's); (wall seconds, CPU seconds)."""
    env = {**os.environ, "QDQ_CACHE_DIR": str(cache)}
    code = "import sys; from qdq_conformance.cli import main; sys.exit(main(sys.argv[1:]))"
    if site is not None:
        env["PYTHONPATH"] = str(site)
        code = f"import sys; sys.path.insert(0, {str(site)!r}); " + code
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", code, "generate", "--out", str(out), "-j", str(jobs)], env=env,
                       capture_output=True, text=True, cwd=out.parent)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise SystemExit(f"generate failed ({'baseline' if site else 'current'}): {p.stderr[-2000:]}")
    if "Warning" in p.stdout + p.stderr:
        print(f"  (warning text in its output: {(p.stdout + p.stderr).strip().splitlines()[:2]})")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def tree(root: Path) -> tuple[int, int, str]:
    """(files, distinct inodes, sha256 over every file's path and bytes)."""
    h = hashlib.sha256()
    files, inodes = 0, set()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            path = Path(dirpath) / name
            files += 1
            inodes.add(path.stat().st_ino)
            h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return files, len(inodes), h.hexdigest()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", default=None,
                    help="git revision of the earlier code (default: git merge-base "
                    "HEAD main)")
    ap.add_argument("--rounds", type=int, default=2, help="runs of each version (default: %(default)s)")
    ap.add_argument("--jobs", type=int, default=2, help="generate -j (default: %(default)s)")
    ap.add_argument("--dir", default=None, help="where to write (default: a temporary folder)")
    args = ap.parse_args()
    if args.baseline is None:
        args.baseline = subprocess.run(["git", "-C", str(ROOT), "merge-base", "HEAD", "main"], check=True,
                                       capture_output=True, text=True).stdout.strip()
    base = Path(args.dir or tempfile.mkdtemp(prefix="qdq-bench-generate-"))
    base.mkdir(parents=True, exist_ok=True)
    revision = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", args.baseline], check=True,
                              capture_output=True, text=True).stdout.strip()
    site = checkout(args.baseline, base / "baseline")
    print(f"baseline {args.baseline} ({revision}) vs current checkout; generate -j {args.jobs}, default "
          f"tier, runtime form; load average at start: {os.getloadavg()[0]:.1f}")
    times: dict[str, list[tuple[float, float]]] = {"baseline": [], "current": []}
    outs: dict[str, list[Path]] = {"baseline": [], "current": []}
    order = [label for k in range(args.rounds) for label in
             (("baseline", "current") if k % 2 == 0 else ("current", "baseline"))]
    for n, label in enumerate(order):
        out = base / f"{label}-{n}"
        # each version its own cache folder (generate reads none today; a version that does is measured cold)
        wall, cpu = run(site if label == "baseline" else None, out, args.jobs, base / f"cache-{label}-{n}")
        times[label].append((wall, cpu))
        outs[label].append(out)
        print(f"  {label:8} run {n + 1}: {wall:6.1f} s wall, {cpu:6.1f} s CPU (load "
              f"{os.getloadavg()[0]:.1f})",
              flush=True)
    med = {label: (statistics.median(w for w, _ in t), statistics.median(c for _, c in t))
           for label, t in times.items()}
    for label, (wall, cpu) in med.items():
        files, inodes, _ = tree(outs[label][0])
        print(f"{label:8} median {wall:6.1f} s wall, {cpu:6.1f} s CPU; {files} files, {inodes} inodes")
    print(f"current / baseline: wall {med['current'][0] / med['baseline'][0]:.2f}, "
          f"CPU {med['current'][1] / med['baseline'][1]:.2f}")
    if len(outs["current"]) >= 2:
        same = tree(outs["current"][0])[2] == tree(outs["current"][1])[2]
        print(f"two runs of the current code wrote identical bytes: {'yes' if same else 'NO'}")
    # (deleted only now: on a disk mounted with discard, deleting slows the writes that follow)
    if args.dir is None:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
