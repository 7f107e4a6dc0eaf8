"""The ``qdq-conformance`` command line."""

from __future__ import annotations

import argparse
import sys
import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from . import __version__, compliance_cmd, frommodel_cmd, opspecs, repro_cmd, show_cmd
from .ambiguities import catalogue
from .ambiguities import markdown as ambiguities_markdown
from .backends.quark import DEFAULT_QUARK_VERSION, BuildError, build
from .checker import check_cmd as checker_cli
from .domain import ALL_TIERS, BOTH, FORMS, Tier, forms_of, tiers_of
from .errors import SpecViolation
from .fuzz import fuzz_cmd as fuzz_cli
from .generators.cache import load_file_cached
from .generators.corpus import CASES_DIR, case_files, load
from .generators.coverage import coverage, render, render_layouts
from .generators.export import OutFolderError
from .generators.graph_coverage import graph_coverage, render_graph
from .generators.parallel import generate
from .generators.suite_archive import is_archive, top_folder
from .matrix import matrix_cmd as matrix_cli
from .mutants import mutants_cmd as mutants_cli
from .plugin.options import (
    RUN_FLAGS,
    add_habits,
    add_to_argparse,
    cache_flags,
    habits_to_pytest,
    to_pytest_args,
)
from .plugin.terminal import EXIT_STATUS
from .progress import Progress
from .reference import evaluate
from .reports import reports_cmd as report_commands


def _cmd_specs(args: argparse.Namespace) -> int:
    """List every operator version with its allowed type combinations."""
    for spec in opspecs.all_specs():
        combos = list(opspecs.type_combinations(spec))
        attrs = ", ".join(f"{k}={v}" for k, v in spec.attributes.items()) or "-"
        print(f"{spec.key:45} {len(combos):4} type combinations   attributes: {attrs}")
    return 0


def _cmd_ambiguities(args: argparse.Namespace) -> int:
    """Print the ambiguity catalogue (--markdown: as the page docs/spec-notes.md)."""
    if getattr(args, "markdown", False):
        print(ambiguities_markdown(), end="")
        return 0
    for a in catalogue().values():
        readings = "".join(f"\n    {'*' if n == a.kernel_reading else '-'} {n}: {text}\n        "
                           f"permitted by: \"{a.quotes[n]}\"" for n, text in a.readings.items())
        print(f"{a.id}\n  spec:     {a.spec}\n  question: {a.question}\n  readings (* the "
              f"kernel's):{readings}\n  kernel:   {a.kernel}\n")
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    """Run the reference kernel on a few spec examples and show the results."""
    f32 = np.float32
    examples: list[tuple[str, str, str, int, list[Any], dict[str, int]]] = [
        ("com.microsoft QuantizeLinear-1 (its documentation's example)", "com.microsoft", "QuantizeLinear", 1,
         [np.array([0, 2, 3, 1000, -254, -1000], f32), f32(2), np.uint8(128)], {}),
        ("QuantizeLinear-21 saturates beyond 2**31 and at +-inf", "ai.onnx", "QuantizeLinear", 21,
         [np.array([3e9, -3e9, np.inf, -np.inf, 2.5, 3.5], f32), f32(1), np.int8(0)], {}),
        ("DequantizeLinear-21 int32 extremes with a zero point (no overflow)", "ai.onnx", "DequantizeLinear",
         21, [np.array([-(2**31), 2**31 - 1], np.int32), f32(1), np.int32(2**31 - 1)], {}),
        ("DynamicQuantizeLinear-11", "ai.onnx", "DynamicQuantizeLinear", 11,
         [np.array([0, 2, -3, -2.5, 1.34, 0.5], f32)], {}),
    ]
    for title, domain, op, version, inputs, attrs in examples:
        print(title)
        for i, a in enumerate(inputs):
            print(f"  input {i}: {np.asarray(a).tolist()} ({np.asarray(a).dtype})")
        for i, y in enumerate(evaluate(domain, op, version, inputs, attrs)):
            print(f"  output {i}: {y.tolist()} ({y.dtype})")
    print("A model the spec forbids is refused with a named rule:")
    try:
        evaluate("ai.onnx", "QuantizeLinear", 21, [np.zeros((2, 6), f32), np.ones((2, 2), f32)],
                 {"axis": 1, "block_size": 6})
    except SpecViolation as e:
        print(f"  SpecViolation: {e}")
    return 0


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


def _cmd_generate(args: argparse.Namespace) -> int:
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


def _cmd_mutants(args: argparse.Namespace) -> int:
    """Run the corpus against every mutant (the kernel with one shortcut) and print the mutation score."""
    return mutants_cli.run(args)


def _cmd_fuzz(args: argparse.Namespace) -> int:
    """Search for failing cases the corpus does not hold (Hypothesis), shrink them and keep them as case
    files."""
    return fuzz_cli.run(args)


def _cmd_coverage(args: argparse.Namespace) -> int:
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


def _cmd_run(args: argparse.Namespace) -> int:
    """Run the conformance corpus against a backend (pytest with the same options) and report."""

    if not args.qdq_backend:
        print("error: --backend is required (e.g. --backend ort)", file=sys.stderr)
        return 2
    extra = args.pytest_args[1:] if args.pytest_args[:1] == ["--"] else args.pytest_args
    model_cases: list[str] = []
    if args.models:
        if args.qdq_cases or args.qdq_suite:
            print("error: --model makes its own cases; it does not go with --cases or --suite",
                  file=sys.stderr)
            return 2
        folder = frommodel_cmd.model_cases_dir(args.models)
        status, _ = frommodel_cmd.make(args.models, folder)
        if status in (2, 3):
            return status
        model_cases = ["--cases", str(folder)]
    # (pytest's last -q / --tb wins: the habits given after RUN_FLAGS override its --tb=no)
    pytest_args = [*to_pytest_args(args), *model_cases, *RUN_FLAGS, *cache_flags(), *habits_to_pytest(args),
                   *extra]
    return int(pytest.main(pytest_args))


def _cmd_check(args: argparse.Namespace) -> int:
    """Check every quantization node of ONNX models against its opset's spec (the same rules as the
    kernel)."""
    return checker_cli.run(args)


def _cmd_build_quark(args: argparse.Namespace) -> int:
    """Build AMD Quark's custom-op library (com.amd.quark) for the `quark` backend, once, into a cache."""
    try:
        lib = build(Path(args.source) if args.source else None, args.quark_version or DEFAULT_QUARK_VERSION,
                    force=args.force)
    except BuildError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"the quark backend will load {lib} (override with QDQ_QUARK_LIBRARY)")
    return 0


def _doc(fn: object) -> str:
    return (fn.__doc__ or "").strip()


def _exit_statuses(statuses: Mapping[int, str]) -> str:
    return "exit status: " + "; ".join(f"{k}: {v}" for k, v in statuses.items())


@dataclass(frozen=True)
class Command:
    """One subcommand: its name, its one-line help (``qdq-conformance --help``), its description and epilog
    (``qdq-conformance NAME --help``), what adds its arguments, and what runs it (returns the exit status)."""

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None] | None
    run: Callable[[argparse.Namespace], int]
    description: str = ""  # (default: the help)
    epilog: str | None = None
    raw_description: bool = False  # description and epilog keep their line breaks


def _add_ambiguities_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--markdown", action="store_true", help="print it as the Markdown page docs/spec-notes.md")


def _add_generate_arguments(p: argparse.ArgumentParser) -> None:
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


def _add_run_arguments(p: argparse.ArgumentParser) -> None:
    add_to_argparse(p)
    p.add_argument("--model", action="append", default=[], metavar="MODEL", dest="models",
                   help="run the cases made from this model's own quantization nodes (cases --from-model) "
                        "instead of the corpus; repeat for more models")
    add_habits(p)
    p.add_argument("pytest_args", nargs=argparse.REMAINDER, help="extra pytest arguments, after --")


def _add_build_quark_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--source", metavar="PATH", help="amd-quark's custom_ops folder or an amd_quark-*.whl")
    p.add_argument("--quark-version", metavar="V",
                   help="amd-quark release to download when no source is given "
                   "(default: the tested one)")
    p.add_argument("--force", action="store_true", help="rebuild even when the cache has the library")


def _add_coverage_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--strict", action="store_true", help="exit 1 when any gap remains")
    p.add_argument("--layouts", action="store_true",
                   help="also print, per operator version, the rank x axis x axis spelling x types crossing "
                        "of per-axis and blocked nodes (+ covered, - a required gap, . neither)")
    _add_corpus_options(p)


#: Every subcommand, in the order ``qdq-conformance --help`` lists them: the one place a subcommand is
#: registered.
COMMANDS: tuple[Command, ...] = (
    Command("demo", _doc(_cmd_demo).splitlines()[0], None, _cmd_demo, _doc(_cmd_demo)),
    Command("specs", _doc(_cmd_specs).splitlines()[0], None, _cmd_specs, _doc(_cmd_specs)),
    Command("ambiguities", _doc(_cmd_ambiguities).splitlines()[0], _add_ambiguities_arguments,
            _cmd_ambiguities, _doc(_cmd_ambiguities)),
    Command("generate", _doc(_cmd_generate), _add_generate_arguments, _cmd_generate),
    Command("run", _doc(_cmd_run), _add_run_arguments, _cmd_run, _doc(_cmd_run)
            + " Arguments after -- go to pytest (e.g. -- -k quantizelinear-21 -n 2). On a terminal, one "
            "progress line; elsewhere, a line a minute; at the end, after pytest's own lines, the run's "
            "summary: counts per status, expected vs unexpected, where the results and report are, and "
            "the exit status's meaning.",
            "exit status:\n"
            + "\n".join(textwrap.fill(v, 100, initial_indent=f"  {k}  ", subsequent_indent="     ",
                                      break_on_hyphens=False)  # (--backend-timeout)
                        for k, v in EXIT_STATUS.items()),
            raw_description=True),
    Command("report", report_commands.REPORT_HELP, report_commands.add_report_arguments,
            report_commands.run_report, report_commands.REPORT_DESCRIPTION),
    Command("findings", report_commands.FINDINGS_HELP, report_commands.add_findings_arguments,
            report_commands.run_findings, report_commands.FINDINGS_DESCRIPTION),
    Command("diff", report_commands.DIFF_HELP, report_commands.add_diff_arguments, report_commands.run_diff,
            report_commands.DIFF_DESCRIPTION),
    Command("show", "Show one case in full (spec clause, inputs, expected vs actual with bit codes, why each "
            "differing element is hard, expectation, reading), from a results file or a fresh run of that "
            "case.",
            show_cmd.add_arguments, show_cmd.run, _doc(show_cmd), _exit_statuses(show_cmd.EXIT)),
    Command("cases", _doc(frommodel_cmd.run_cases), frommodel_cmd.add_arguments, frommodel_cmd.run_cases,
            _doc(frommodel_cmd.run_cases)
            + " One case file per distinct node configuration (operator version, types, zero point,"
            + " granularity, axis and its spelling, block size, attributes; nodes and models deduplicated),"
            + " with the node's own scale and zero point (large ones sliced, keeping their per-axis and"
            + " blocked structure) and concrete small shapes, x from the corpus's boundary recipes; graph"
            + " cases for the small graphs around the nodes the corpus judges (round trips, requantization,"
            + " data movement, activations, and compute ops with the model's own weights, sliced, judged by"
            + " the interval oracle); from-model.json accounts for"
            + " every node. Run them with `qdq-conformance run --backend NAME --cases DIR`, or in one step"
            + " with `run --model MODEL`.", _exit_statuses(frommodel_cmd.EXIT)),
    Command("repro-check", "Run the repro script of a sample of each finding's cases and check it fails as "
            "the case did in the run.", repro_cmd.add_arguments, repro_cmd.run, _doc(repro_cmd),
            _exit_statuses(repro_cmd.EXIT)),
    Command("check", _doc(_cmd_check), checker_cli.add_arguments, _cmd_check, _doc(_cmd_check)
            + " Covers QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, com.microsoft QuantizeLinear "
              "/ "
            "DequantizeLinear and com.amd.quark ExtendedQuantizeLinear / ExtendedDequantizeLinear in the "
            "main graph, subgraphs and local functions, every problem of a node (each rule once, blamed on "
            "the input at fault), and the model around them (node order, IR version); other quantization "
            "operators are named in notes (QDQ024). `qdq-conformance check --rules` lists the rules.",
            _exit_statuses(checker_cli.EXIT)),
    Command("build-quark", _doc(_cmd_build_quark), _add_build_quark_arguments, _cmd_build_quark,
            _doc(_cmd_build_quark) + " Sources: an installed amd-quark, --source (its custom_ops folder or a "
            "wheel), or else the amd-quark wheel downloaded with `pip download --no-deps` (never installed; "
            "onnx and onnxruntime stay as they are). Cache: $QDQ_CACHE_DIR or "
            "~/.cache/onnx-qdq-conformance/quark. Exit status 1 (one line saying why) when the library "
            "cannot be built: a source that is not one, no compiler, a failed compilation, a cache that "
            "cannot be written."),
    Command("compliance", _doc(compliance_cmd.run), compliance_cmd.add_arguments, compliance_cmd.run),
    Command("matrix", _doc(matrix_cli), matrix_cli.add_arguments, matrix_cli.run,
            _doc(matrix_cli) + " Each release's environment is made with uv (wheels cached under the cache "
            "folder), this tool installed into it from its source tree; the runs are sharded like any run "
            "(--shard), one results file per release in --out; --keep keeps them small in "
            "docs/results/history for the compliance page. Every release runs with the backend's "
            "expectations: the table tells, per release, its exit status and its stale entries; "
            "--write-expectations rewrites the file by version range from the runs.",
            _exit_statuses(matrix_cli.EXIT)),
    Command("mutants", _doc(_cmd_mutants), mutants_cli.add_arguments, _cmd_mutants, _doc(_cmd_mutants)
            + " A mutant is killed by the first normative case on which a real run (--backend mutant:ID "
              "--expectations none) gives a wrong value (failed); a refusal of a valid model (error) is no "
              "kill. A mutant that accepts what it must refuse is killed by an invalid case it runs "
              "(invalid-accepted).", _exit_statuses(mutants_cli.EXIT)),
    Command("fuzz", _doc(_cmd_fuzz), fuzz_cli.add_arguments, _cmd_fuzz, _doc(_cmd_fuzz)
            + " Examples run in the backend's worker process and are judged as corpus cases are (oracle, "
              "readings, "
            "expectations); failures are grouped by signature (operator version, types, zero point, "
            "granularity, attributes, form, kind of mismatch), one minimal example each, written to --out as "
            "case files with model, data and repro, and every example's result to --out/results.jsonl.",
            _exit_statuses(fuzz_cli.EXIT)),
    Command("coverage", _doc(_cmd_coverage), _add_coverage_arguments, _cmd_coverage),
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="qdq-conformance",
        description="Conformance suite and reference kernel for ONNX QuantizeLinear / DequantizeLinear.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for c in COMMANDS:
        extra: dict[str, Any] = ({"formatter_class": argparse.RawDescriptionHelpFormatter}
                                 if c.raw_description else {})
        p = sub.add_parser(c.name, help=c.help, description=c.description or c.help, epilog=c.epilog, **extra)
        if c.add_arguments is not None:
            c.add_arguments(p)
        p.set_defaults(func=c.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        if args.command == "run":
            print(f"error: qdq-conformance run: unrecognized arguments: {' '.join(unknown)}\n"
                  f"hint: put pytest arguments after --, e.g. qdq-conformance run --backend ort -- "
                  f"{' '.join(unknown)}", file=sys.stderr)
            return 2
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    try:
        return int(args.func(args))
    except BrokenPipeError:  # output piped into `head` and the like
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
