"""The ``qdq-conformance`` command line: the table of subcommands (:data:`COMMANDS`) and the small ones.

A subcommand's modules are imported when its parser is built (each entry of :data:`COMMANDS` is a function
that imports them), and ``qdq-conformance NAME ...`` builds NAME's parser alone: importing every command's
modules cost about a second of processor time (measured: 1.1 s, against 0.6 s for ``run``'s own), paid again
by every ``run``, ``report`` or ``repro-check`` a script, CI or a self-test starts. ``qdq-conformance --help``
(or anything that names no subcommand) builds them all."""

from __future__ import annotations

import argparse
import sys
import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import __version__


def _cmd_mutants(args: argparse.Namespace) -> int:
    """Run the corpus against every mutant (the kernel with one shortcut) and print the mutation score."""
    from .mutants import mutants_cmd  # (lazy: the module docstring says why)
    return mutants_cmd.run(args)


def _cmd_fuzz(args: argparse.Namespace) -> int:
    """Search for failing cases the corpus does not hold (Hypothesis), shrink them and keep them as case
    files."""
    from .fuzz import fuzz_cmd  # (lazy: the module docstring says why)
    return fuzz_cmd.run(args)


def _cmd_run(args: argparse.Namespace) -> int:
    """Run the conformance corpus against a backend (pytest with the same options) and report."""
    import pytest  # (lazy: the module docstring says why)

    # (lazy, as pytest)
    from .plugin.options import RUN_FLAGS, cache_flags, habits_to_pytest, to_pytest_args

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
        from . import frommodel_cmd  # (lazy: --model alone needs it)
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
    from .checker import check_cmd  # (lazy: the module docstring says why)
    return check_cmd.run(args)


def _cmd_build_quark(args: argparse.Namespace) -> int:
    """Build AMD Quark's custom-op library (com.amd.quark) for the `quark` backend, once, into a cache."""
    # (lazy: the module docstring says why)
    from .backends.quark import DEFAULT_QUARK_VERSION, BuildError, build
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


def _add_run_arguments(p: argparse.ArgumentParser) -> None:
    from .plugin.options import add_habits, add_to_argparse  # (lazy: the module docstring says why)
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


def _spec_commands() -> list[Command]:
    from . import spec_cmd  # (lazy: the module docstring says why)
    return [Command(name, _doc(run).splitlines()[0], add, run, _doc(run)) for name, add, run in (
        ("demo", None, spec_cmd.run_demo), ("specs", None, spec_cmd.run_specs),
        ("ambiguities", spec_cmd.add_ambiguities_arguments, spec_cmd.run_ambiguities))]


def _generate() -> Command:
    from . import generate_cmd  # (lazy: the module docstring says why)
    return Command("generate", _doc(generate_cmd.run_generate), generate_cmd.add_generate_arguments,
                   generate_cmd.run_generate)


def _run() -> Command:
    from .plugin.terminal import EXIT_STATUS  # (lazy: the module docstring says why)
    return Command(
        "run", _doc(_cmd_run), _add_run_arguments, _cmd_run, _doc(_cmd_run)
        + " Arguments after -- go to pytest (e.g. -- -k quantizelinear-21 -n 2). On a terminal, one "
        "progress line; elsewhere, a line a minute; at the end, after pytest's own lines, the run's "
        "summary: counts per status, expected vs unexpected, where the results and report are, and "
        "the exit status's meaning.",
        "exit status:\n"
        + "\n".join(textwrap.fill(v, 100, initial_indent=f"  {k}  ", subsequent_indent="     ",
                                  break_on_hyphens=False)  # (--backend-timeout)
                    for k, v in EXIT_STATUS.items()),
        raw_description=True)


def _report_commands() -> list[Command]:
    from .reports import reports_cmd as r  # (lazy: the module docstring says why)
    return [Command("report", r.REPORT_HELP, r.add_report_arguments, r.run_report, r.REPORT_DESCRIPTION),
            Command("findings", r.FINDINGS_HELP, r.add_findings_arguments, r.run_findings,
                    r.FINDINGS_DESCRIPTION),
            Command("diff", r.DIFF_HELP, r.add_diff_arguments, r.run_diff, r.DIFF_DESCRIPTION)]


def _show() -> Command:
    from . import show_cmd  # (lazy: the module docstring says why)
    return Command(
        "show", "Show one case in full (spec clause, inputs, expected vs actual with bit codes, why each "
        "differing element is hard, expectation, reading), from a results file or a fresh run of that case.",
        show_cmd.add_arguments, show_cmd.run, _doc(show_cmd), _exit_statuses(show_cmd.EXIT))


def _cases() -> Command:
    from . import frommodel_cmd  # (lazy: the module docstring says why)
    return Command(
        "cases", _doc(frommodel_cmd.run_cases), frommodel_cmd.add_arguments, frommodel_cmd.run_cases,
        _doc(frommodel_cmd.run_cases)
        + " One case file per distinct node configuration (operator version, types, zero point,"
        + " granularity, axis and its spelling, block size, attributes; nodes and models deduplicated),"
        + " with the node's own scale and zero point (large ones sliced, keeping their per-axis and"
        + " blocked structure) and concrete small shapes, x from the corpus's boundary recipes; graph"
        + " cases for the small graphs around the nodes the corpus judges (round trips, requantization,"
        + " data movement, activations, and compute ops with the model's own weights, sliced, judged by"
        + " the interval oracle); from-model.json accounts for"
        + " every node. Run them with `qdq-conformance run --backend NAME --cases DIR`, or in one step"
        + " with `run --model MODEL`.", _exit_statuses(frommodel_cmd.EXIT))


def _repro_check() -> Command:
    from . import repro_cmd  # (lazy: the module docstring says why)
    return Command("repro-check", "Run the repro script of a sample of each finding's cases and check it "
                   "fails as the case did in the run.", repro_cmd.add_arguments, repro_cmd.run,
                   _doc(repro_cmd), _exit_statuses(repro_cmd.EXIT))


def _check() -> Command:
    from .checker import check_cmd as checker_cli  # (lazy: the module docstring says why)
    return Command(
        "check", _doc(_cmd_check), checker_cli.add_arguments, _cmd_check, _doc(_cmd_check)
        + " Covers QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, com.microsoft QuantizeLinear "
          "/ "
        "DequantizeLinear and com.amd.quark ExtendedQuantizeLinear / ExtendedDequantizeLinear in the "
        "main graph, subgraphs and local functions, every problem of a node (each rule once, blamed on "
        "the input at fault), and the model around them (node order, IR version); other quantization "
        "operators are named in notes (QDQ024). `qdq-conformance check --rules` lists the rules.",
        _exit_statuses(checker_cli.EXIT))


def _build_quark() -> Command:
    return Command(
        "build-quark", _doc(_cmd_build_quark), _add_build_quark_arguments, _cmd_build_quark,
        _doc(_cmd_build_quark) + " Sources: an installed amd-quark, --source (its custom_ops folder or a "
        "wheel), or else the amd-quark wheel downloaded with `pip download --no-deps` (never installed; "
        "onnx and onnxruntime stay as they are). Cache: $QDQ_CACHE_DIR or "
        "~/.cache/onnx-qdq-conformance/quark. Exit status 1 (one line saying why) when the library "
        "cannot be built: a source that is not one, no compiler, a failed compilation, a cache that "
        "cannot be written.")


def _compliance() -> Command:
    from . import compliance_cmd  # (lazy: the module docstring says why)
    return Command("compliance", _doc(compliance_cmd.run), compliance_cmd.add_arguments, compliance_cmd.run)


def _matrix() -> Command:
    from .matrix import matrix_cmd as matrix_cli  # (lazy: the module docstring says why)
    return Command(
        "matrix", _doc(matrix_cli), matrix_cli.add_arguments, matrix_cli.run,
        _doc(matrix_cli) + " Each release's environment is made with uv (wheels cached under the cache "
        "folder), this tool installed into it from its source tree; the runs are sharded like any run "
        "(--shard), one results file per release in --out; --keep keeps them small in "
        "docs/results/history for the compliance page. Every release runs with the backend's "
        "expectations: the table tells, per release, its exit status and its stale entries; "
        "--write-expectations rewrites the file by version range from the runs.",
        _exit_statuses(matrix_cli.EXIT))


def _mutants() -> Command:
    from .mutants import mutants_cmd as mutants_cli  # (lazy: the module docstring says why)
    return Command(
        "mutants", _doc(_cmd_mutants), mutants_cli.add_arguments, _cmd_mutants, _doc(_cmd_mutants)
        + " A mutant is killed by the first normative case on which a real run (--backend mutant:ID "
          "--expectations none) gives a wrong value (failed); a refusal of a valid model (error) is no "
          "kill. A mutant that accepts what it must refuse is killed by an invalid case it runs "
          "(invalid-accepted).", _exit_statuses(mutants_cli.EXIT))


def _fuzz() -> Command:
    from .fuzz import fuzz_cmd as fuzz_cli  # (lazy: the module docstring says why)
    return Command(
        "fuzz", _doc(_cmd_fuzz), fuzz_cli.add_arguments, _cmd_fuzz, _doc(_cmd_fuzz)
        + " Examples run in the backend's worker process and are judged as corpus cases are (oracle, "
          "readings, "
        "expectations); failures are grouped by signature (operator version, types, zero point, "
        "granularity, attributes, form, kind of mismatch), one minimal example each, written to --out as "
        "case files with model, data and repro, and every example's result to --out/results.jsonl.",
        _exit_statuses(fuzz_cli.EXIT))


def _coverage() -> Command:
    from . import generate_cmd  # (lazy: the module docstring says why)
    return Command("coverage", _doc(generate_cmd.run_coverage), generate_cmd.add_coverage_arguments,
                   generate_cmd.run_coverage)


def _one(make: Callable[[], Command]) -> Callable[[], list[Command]]:
    return lambda: [make()]


#: Every subcommand, in the order ``qdq-conformance --help`` lists them, each with the function that imports
#: its modules and makes it (one function may make several): the one place a subcommand is registered.
COMMANDS: tuple[tuple[tuple[str, ...], Callable[[], list[Command]]], ...] = (
    (("demo", "specs", "ambiguities"), _spec_commands),
    (("generate",), _one(_generate)),
    (("run",), _one(_run)),
    (("report", "findings", "diff"), _report_commands),
    (("show",), _one(_show)),
    (("cases",), _one(_cases)),
    (("repro-check",), _one(_repro_check)),
    (("check",), _one(_check)),
    (("build-quark",), _one(_build_quark)),
    (("compliance",), _one(_compliance)),
    (("matrix",), _one(_matrix)),
    (("mutants",), _one(_mutants)),
    (("fuzz",), _one(_fuzz)),
    (("coverage",), _one(_coverage)),
)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every subcommand; with ``only``, a subcommand's name, of that one alone (only its
    modules are imported)."""
    parser = argparse.ArgumentParser(
        prog="qdq-conformance",
        description="Conformance suite and reference kernel for ONNX QuantizeLinear / DequantizeLinear.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for names, make in COMMANDS:
        if only is not None and only not in names:
            continue
        for c in make():
            if only is not None and c.name != only:
                continue
            extra: dict[str, Any] = ({"formatter_class": argparse.RawDescriptionHelpFormatter}
                                     if c.raw_description else {})
            p = sub.add_parser(c.name, help=c.help, description=c.description or c.help, epilog=c.epilog,
                               **extra)
            if c.add_arguments is not None:
                c.add_arguments(p)
            p.set_defaults(func=c.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    given = list(sys.argv[1:] if argv is None else argv)
    named = given[0] if given and any(given[0] in names for names, _ in COMMANDS) else None
    parser = build_parser(named)
    args, unknown = parser.parse_known_args(given)
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
