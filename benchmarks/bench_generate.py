"""`qdq-conformance generate` of the default tier, both graph forms, from a cold cache: seconds and the
export's size, and their ratios to an earlier version of the code, measured side by side in one run.

The earlier version (``--baseline``, a git revision, default: where this branch left main, ``git merge-base
HEAD main``) is taken from this checkout with
``git archive`` into a temporary folder and imported from there; both versions run ``generate --out OUT -j
JOBS`` (default tier, their default graph forms and format: a version with ``--format`` writes
``OUT.tar.gz``, an earlier one a folder) as child processes, each with a cache folder of its own (cold: the
case files are expanded), alternating (baseline, current, current, baseline, ...) so that a change in the
machine's load weighs on both. Prints, per run, wall seconds and the CPU seconds of the process and its
workers; then the medians, the ratios current / baseline, each export's files, bytes and size on disk, and
whether two runs of the current code wrote identical bytes. Targets (issue 36 point 7): the default tier
generates in <= 60 s cold on 2 cores with -j 2; the export is <= 100 MiB.

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


def writes_archives(site: Path | None) -> bool:
    """Whether that version's generate has --format (and writes a .tar.gz by default)."""
    env = {**os.environ, **({"PYTHONPATH": str(site)} if site is not None else {})}
    code = "import sys; from qdq_conformance.cli import main; sys.exit(main(sys.argv[1:]))"
    if site is not None:
        code = f"import sys; sys.path.insert(0, {str(site)!r}); " + code
    p = subprocess.run([sys.executable, "-c", code, "generate", "--help"], env=env, capture_output=True,
                       text=True)
    return "--format" in p.stdout


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


def tree(root: Path) -> tuple[int, int, int, str]:
    """(files, bytes, bytes on disk, sha256 over every file's path and bytes) of a folder (hard links counted
    once on disk) or an archive file."""
    if root.is_file():
        data = root.read_bytes()
        return 1, len(data), root.stat().st_blocks * 512, hashlib.sha256(data).hexdigest()
    h = hashlib.sha256()
    files, size, inodes = 0, 0, {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        inodes[Path(dirpath).stat().st_ino] = Path(dirpath).stat().st_blocks * 512
        for name in sorted(filenames):
            path = Path(dirpath) / name
            st = path.stat()
            files += 1
            size += st.st_size
            inodes[st.st_ino] = st.st_blocks * 512
            h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return files, size, sum(inodes.values()), h.hexdigest()


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
    suffix = {"baseline": ".tar.gz" if writes_archives(site) else "", "current": ".tar.gz"}
    print(f"baseline {args.baseline} ({revision}) vs current checkout; generate -j {args.jobs}, default "
          f"tier, each version's default forms and format, cold cache; load average at start: "
          f"{os.getloadavg()[0]:.1f}")
    times: dict[str, list[tuple[float, float]]] = {"baseline": [], "current": []}
    outs: dict[str, list[Path]] = {"baseline": [], "current": []}
    order = [label for k in range(args.rounds) for label in
             (("baseline", "current") if k % 2 == 0 else ("current", "baseline"))]
    for n, label in enumerate(order):
        out = base / f"{label}-{n}" / f"suite{suffix[label]}"
        out.parent.mkdir()
        # each version its own cache folder (generate reads none today; a version that does is measured cold)
        wall, cpu = run(site if label == "baseline" else None, out, args.jobs, base / f"cache-{label}-{n}")
        times[label].append((wall, cpu))
        outs[label].append(out)
        print(f"  {label:8} run {n + 1}: {wall:6.1f} s wall, {cpu:6.1f} s CPU (load "
              f"{os.getloadavg()[0]:.1f})",
              flush=True)
    med = {label: (statistics.median(w for w, _ in t), statistics.median(c for _, c in t))
           for label, t in times.items()}
    sizes = {}
    for label, (wall, cpu) in med.items():
        files, size, disk, _ = tree(outs[label][0])
        sizes[label] = disk
        print(f"{label:8} median {wall:6.1f} s wall, {cpu:6.1f} s CPU; {outs[label][0].name}: {files} "
              f"file(s), {size / 2**20:.1f} MiB, {disk / 2**20:.1f} MiB on disk")
    print(f"current / baseline: wall {med['current'][0] / med['baseline'][0]:.2f}, CPU "
          f"{med['current'][1] / med['baseline'][1]:.2f}, on disk {sizes['current'] / sizes['baseline']:.3f}")
    print(f"targets: generate <= 60 s cold on 2 cores (current median {med['current'][0]:.1f} s wall at this "
          f"load); export <= 100 MiB (current {sizes['current'] / 2**20:.1f} MiB)")
    if len(outs["current"]) >= 2:
        same = tree(outs["current"][0])[3] == tree(outs["current"][1])[3]
        print(f"two runs of the current code wrote identical bytes: {'yes' if same else 'NO'}")
    # (deleted only now: on a disk mounted with discard, deleting slows the writes that follow)
    if args.dir is None:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
