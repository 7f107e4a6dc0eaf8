"""``qdq-conformance generate`` and ``coverage``: the corpus expanded, written as an exported suite, or
measured against what each operator version allows."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .domain import ALL_TIERS, BOTH, FORMS, Tier, forms_of, tiers_of
from .generators.cache import load_file_cached
from .generators.corpus import CASES_DIR, case_files, load
from .generators.coverage import coverage, render, render_layouts
from .generators.export import OutFolderError
from .generators.graph_coverage import graph_coverage, render_graph
from .generators.parallel import generate
from .generators.suite_archive import is_archive, top_folder
from .progress import Progress


def _load_corpus(args: argparse.Namespace):  # noqa: ANN202 - generators.corpus.Corpus

    root = Path(args.cases) if args.cases else CASES_DIR
    tiers = tiers_of(args.tier)
    corpus = load(case_files(root), tiers=tiers, select=args.select, loader=load_file_cached)
    for err in corpus.errors:
        print(f"error: {err}", file=sys.stderr)
    return corpus


def _add_corpus_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("select", nargs="*", metavar="PATTERN",
                   help="case-id glob patterns to keep (default: every case), e.g. 'quantizelinear-21-*'")
    p.add_argument("--cases", metavar="DIR", help="folder of case files (default: the repository's cases/)")
    p.add_argument("--tier", choices=(*Tier.values(), ALL_TIERS), default=Tier.DEFAULT.value,
                   help="which size tier to include (default: %(default)s; 'large' has >= 1M-element cases)")


def run_generate(args: argparse.Namespace) -> int:
    """Expand the case files and write them in ONNX's backend-test layout with manifest.json, as one .tar.gz
    archive (or a folder)."""
    forms = forms_of(args.form)
    tiers = tiers_of(args.tier)
    archive = args.format == "tar.gz"
    if archive and not is_archive(args.out):
        print(f"error: --out {args.out}: an archive's name ends in .tar.gz or .tgz (--format tar.gz, the "
              "default); for a folder, add --format folder", file=sys.stderr)
        return 2
    files = case_files(Path(args.cases) if args.cases else CASES_DIR)
    try:
        manifest, errors = generate(files, Path(args.out), forms, tiers, args.select, args.jobs,
                                    progress=Progress("generate (case files)"), archive=archive)
    except OutFolderError as e:  # --out is not generate's to write (one line; nothing replaced)
        print(f"error: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # --out cannot be written
        where = f" ({e.filename})" if e.filename and str(e.filename) != str(args.out) else ""
        print(f"error: --out {args.out}: cannot write{where}: {e.strerror or e}", file=sys.stderr)
        return 2
    for err in errors:
        print(f"error: {err}", file=sys.stderr)
    if not manifest["case_count"]:
        print("error: no case selected", file=sys.stderr)
        return 2
    kinds = ", ".join(f"{v['cases']} {k}" for k, v in manifest["kinds"].items())
    readme = f"its {top_folder(args.out)}/README.md" if archive else str(Path(args.out) / "README.md")
    print(f"wrote {manifest['case_count']} cases x {len(forms)} form(s) to {args.out} ({kinds}); "
          f"{readme} says how to run them")
    return 1 if errors else 0


def run_coverage(args: argparse.Namespace) -> int:
    """Per operator version: covered / allowed type combinations, granularities, edge families, and gaps."""
    corpus = _load_corpus(args)
    result = coverage(corpus.cases)
    print(render(result))
    if args.layouts:
        print(render_layouts(result))
    graphs = graph_coverage(corpus.cases)
    print(render_graph(graphs))
    gaps = sum(len(c.gaps()) for c in result) + len(graphs.gaps())
    return 1 if corpus.errors or (args.strict and gaps) else 0


def add_generate_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", required=True, metavar="PATH",
                   help="where to write: NAME.tar.gz (or .tgz), an archive holding the folder NAME/, for "
                   "--format tar.gz; a folder for --format folder. Either is new, or one an earlier generate "
                   "wrote, which is replaced (a folder: the cases its manifest.json lists); anything else is "
                   "refused")
    p.add_argument("--format", choices=("tar.gz", "folder"), default="tar.gz",
                   help="tar.gz: one gzipped tar archive (the whole default tier in both forms: tens of MB), "
                   "which run --suite reads as it is and tar -xzf turns into the folder; folder: that folder "
                   "(hundreds of thousands of files, over 1 GB on disk) (default: %(default)s)")
    p.add_argument("--jobs", "-j", type=int, default=None, metavar="N",
                   help="worker processes (default: one per core)")
    p.add_argument("--form", choices=(*FORMS, BOTH), default=BOTH,
                   help="graph form: inputs fed at run time, scale / zero point as initializers, or both, as "
                        "a run of the corpus has them (default: %(default)s: the suite holds every failure a "
                        "run of the same cases finds)")
    _add_corpus_options(p)


def add_coverage_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--strict", action="store_true", help="exit 1 when any gap remains")
    p.add_argument("--layouts", action="store_true",
                   help="also print, per operator version, the rank x axis x axis spelling x types crossing "
                        "of per-axis and blocked nodes (+ covered, - a required gap, . neither)")
    _add_corpus_options(p)
