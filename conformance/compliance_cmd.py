"""``qdq-conformance compliance``: several backends over the corpus, each run kept (``docs/results``), then
their scoreboard, the compliance table and the findings page."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from .backends.names import BUILTIN_NAMES
from .backends.registry import unavailable
from .domain import BOTH, FORMS, Form
from .plugin.options import RUN_FLAGS, cache_flags
from .reports import compliance
from .reports import release_table as history
from .reports.render import render as render_page
from .results import ResultsError
from .results import kept as archive
from .results.merge import load_run

COMPLIANCE_BACKENDS = ",".join(n for n in BUILTIN_NAMES if n != "oracle")
COMPLIANCE_COMMAND = "qdq-conformance compliance"
#: The graph forms a backend's compliance run covers when --form is not given: the runtime form, but both for
#: tract, which refuses a scale fed at run time (its runtime form is all but unsupported), and tinygrad, whose
#: frontend folds constants into its kernels (each form is a different path through it).
COMPLIANCE_FORMS = {"tract": BOTH, "tinygrad": BOTH}
KEPT_RESULTS = "docs/results"
#: the folder under --kept where `qdq-conformance matrix --keep` keeps each release's run
HISTORY = "history"
#: what each backend's history section is called
HISTORY_TITLES = {"ort": "ONNX Runtime across releases", "openvino": "OpenVINO across releases"}


def run(args: argparse.Namespace) -> int:
    """Run several backends over the corpus, then write their scoreboard (HTML), the compliance table and the
    findings page beside it (Markdown); a backend that cannot run here keeps its column from its last kept
    results (--kept), dated."""
    out = Path(args.results_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths, kept_only = [], []
    from_kept = {b.strip() for b in (args.from_kept or "").split(",") if b.strip()}
    for name in [b.strip() for b in args.backends.split(",") if b.strip()]:
        path = out / f"{name}.jsonl"
        kept = archive.kept_path(Path(args.kept), name)
        why = "--from-kept" if name in from_kept else None
        if args.reuse and path.exists() and not why:
            print(f"{name}: reusing {path}")
        elif (why := why or unavailable(name)) is not None:
            if not kept.exists():
                print(f"{name}: left out: not run ({why}) and {kept} does not exist", flush=True)
                continue
            print(f"{name}: not run ({why}); its column comes from {kept}", flush=True)
            paths.append(kept)
            kept_only.append(kept)
            continue
        else:
            form = args.form or COMPLIANCE_FORMS.get(name, Form.RUNTIME.value)
            cmd = [sys.executable, "-m", "pytest", f"--backend={name}", *RUN_FLAGS, *cache_flags(), "--tb=no",
                   "--no-header", f"--form={form}", f"--results={path}", "-o", "console_output_style=count"]
            cmd += ["--workers", str(args.workers)]
            print(f"{name}: {' '.join(cmd[2:])}", flush=True)
            r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            print(f"{name}: {(r.stdout.strip().splitlines() or ['(no output)'])[-1]}", flush=True)
            if not path.exists():
                print(f"error: {name} wrote no results", file=sys.stderr)
                return 2
            try:  # (a reused file was kept by the run that wrote it)
                print(f"{name}: kept as {archive.keep(path, kept)}", flush=True)
            except (ResultsError, OSError) as e:
                print(f"error: cannot keep {path} as {kept}: {e}", file=sys.stderr)
                return 2
        paths.append(path)
    if not paths:
        print("error: no backend could run and none has kept results", file=sys.stderr)
        return 2
    try:
        runs = compliance.load_marked(paths, kept_only)
    except ResultsError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    board = render_page(runs, Path(args.scoreboard))
    try:
        appendix = histories(Path(args.kept) / HISTORY)
    except ResultsError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    md = compliance.write(runs, Path(args.markdown), command=COMPLIANCE_COMMAND, appendix=appendix)
    print(f"wrote {board}, {md} and {md.parent / compliance.FINDINGS_PAGE}")
    return 0


def histories(folder: Path) -> str:
    """The history table of each backend whose releases ``matrix --keep`` kept in ``folder`` (Markdown)."""
    by_backend: dict[str, list[Path]] = {}
    for path in sorted(folder.glob(f"*{archive.SUFFIX}")):
        by_backend.setdefault(path.name.rpartition("-")[0], []).append(path)
    parts = []
    order = list(HISTORY_TITLES)  # (the backends named there first, in that order)
    rank = {name: order.index(name) if name in order else len(order) for name in by_backend}
    for backend, paths in sorted(by_backend.items(), key=lambda kv: (rank[kv[0]], kv[0])):
        table = history.history([load_run([p]) for p in paths])
        title = HISTORY_TITLES.get(backend, f"{backend} across releases")
        parts.append(history.markdown(table, title, level=2)
                     + f"\nFrom the kept results of `qdq-conformance matrix --backend {backend} --keep` "
                       f"({folder}/{backend}-*{archive.SUFFIX}).\n")
    return "\n".join(parts)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--backends", default=COMPLIANCE_BACKENDS, metavar="A,B,...",
                   help="backends to run (default: %(default)s)")
    p.add_argument("--results-dir", default="out/compliance", metavar="DIR",
                   help="where the results files go (default: %(default)s)")
    p.add_argument("--markdown", default="docs/compliance.md", metavar="PATH",
                   help="the Markdown table to write (default: %(default)s)")
    p.add_argument("--scoreboard", default="docs/scoreboard.html", metavar="PATH",
                   help="the HTML scoreboard to write (default: %(default)s)")
    p.add_argument("--form", choices=(*FORMS, BOTH), default=None,
                   help="graph form(s) to run (default: runtime; both for tract, whose runtime form is all "
                        "but unsupported, and tinygrad)")
    p.add_argument("--kept", default=KEPT_RESULTS, metavar="DIR",
                   help="where each backend's last results are kept, gzipped without the fields the table "
                        "does not read (default: %(default)s); a backend that cannot run here keeps its "
                        "column from them, dated")
    p.add_argument("--from-kept", metavar="A,B,...",
                   help="backends not to run this time even if they can: their "
                   "columns come from their kept results (a slow backend's last full run, say)")
    p.add_argument("-n", "--workers", default="auto", metavar="N",
                   help="backend worker processes per run (default: auto, the usable cores up to 4)")
    p.add_argument("--reuse", action="store_true", help="keep results files that already exist")
