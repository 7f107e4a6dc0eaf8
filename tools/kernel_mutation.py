"""Mutation testing of the reference kernel (``conformance/reference/``) with mutmut, judged by the corpus.

The mutation zoo (``qdq-conformance mutants``) holds shortcuts a backend engineer might take; this is the
other direction: a standard tool mutates the kernel's own code (every comparison, constant, operator,
argument it can flip) and the corpus must notice. The corpus's expected values come from the kernel, so they
are frozen first, from the unmutated kernel; the mutated kernel is then judged against them.

    python tools/kernel_mutation.py prepare --out /tmp/km       # freeze the answers, lay out mutmut's project
    cd /tmp/km && mutmut run --max-children 2 && mutmut results # mutate the kernel, judge, list survivors
    QDQ_KM_FROZEN=full mutmut run NAME ...                      # survivors against the whole corpus

``prepare`` writes, under ``--out``: ``qdq_conformance/`` (a copy of ``conformance/`` and ``generators/``:
the package as mutmut sees it, module names following file paths), ``frozen-sample.pkl`` and
``frozen-full.pkl`` (per case: the model and its feeds, and what the unmutated kernel answers: the outputs,
the rule of a refusal, every catalogued reading's outputs), ``tests/test_frozen.py`` (one test per frozen
case) and ``pyproject.toml`` (mutmut's settings: mutate ``qdq_conformance/reference/``). The sample takes up
to ``--per-template`` cases of every template, spread over its variants (the first and last included), and
every invalid case. A node case is judged through its model in the initializer form (the kernel's model
binding included) and through ``evaluate`` (the generators' path to its expected outputs), a graph case in
the runtime form with every output's interval (its acceptable values, as the generators compute them); the
kernel's readings (``reference/readings.py``) are judged too: a case's catalogued readings are part of its
frozen answer. The text of refusals and numpy's errstate headers are not mutated
(``quiet_messages``).

docs/mutants.md ("The kernel under a standard mutation tool") has the command, the figures and the triage.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import pickle
import shutil
import sys
import textwrap
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

PYPROJECT = """\
[tool.mutmut]
source_paths = ["qdq_conformance/reference/"]
also_copy = ["qdq_conformance/", "frozen-sample.pkl", "frozen-full.pkl"]
pytest_add_cli_args = ["-p", "no:qdq_conformance", "-p", "no:cacheprovider", "-p", "no:randomly", "-q",
                       "-x", "--tb=no", "-p", "no:benchmark", "-p", "no:hypothesispytest"]
pytest_add_cli_args_test_selection = ["tests/"]
use_git_change_detection = false
do_not_mutate_patterns = ["# pragma: no mutate$"]
"""

TEST = '''\
"""One test per frozen case: the (mutated) kernel must answer as the unmutated one did (tests/answers.py)."""
import os
import pickle
from pathlib import Path

import pytest

from tests.answers import answer, differences

FROZEN = pickle.loads((Path(__file__).parents[1] / f"frozen-{os.environ.get('QDQ_KM_FROZEN', 'sample')}.pkl")
                      .read_bytes())


@pytest.mark.parametrize("k", range(len(FROZEN)), ids=[c["id"] for c in FROZEN])
def test_case(k):
    assert not differences(answer(FROZEN[k]), FROZEN[k]["answer"])
'''


def _freeze_node(c: Any, forms: bool) -> dict[str, Any]:
    from kernel_answers import answer  # type: ignore[import-not-found]

    from qdq_conformance.domain import Form

    entry: dict[str, Any] = {"id": c.id, "kind": "node", "domain": c.domain, "op": c.op, "version": c.version,
                             "inputs": [v for _, v in c.inputs], "attrs": dict(c.attrs), "asked": c.ambiguity,
                             "model": c.model(Form.INITIALIZER.value).SerializeToString(),
                             "feeds": c.feeds(Form.INITIALIZER.value), "forms": forms}
    entry["answer"] = answer(entry)
    return entry


def _freeze_graph(c: Any, forms: bool) -> dict[str, Any]:
    from kernel_answers import answer

    from qdq_conformance.domain import Form

    entry = {"id": c.id, "kind": "graph", "model": c.model(Form.RUNTIME.value).SerializeToString(),
             "feeds": c.feeds(Form.RUNTIME.value), "forms": forms}
    entry["answer"] = answer(entry)
    return entry


# The lines no value of the corpus can depend on, so mutating them gives only equivalent mutants (each kind
# is listed with its reason in docs/mutants.md, "Lines not mutated"): the text of a refusal (a SpecViolation's
# detail and the names it reports: the corpus judges a refusal by its rule, which stays mutated), a whole
# raise of any other exception (no frozen case raises one: reached, the test fails whatever its arguments),
# and numpy's errstate headers (warnings only). mutmut skips a line that ends in this comment (its pragma, and
# do_not_mutate_patterns for the last line of a statement, which the pragma alone does not cover).
PRAGMA = "  # pragma: no mutate"
_REFUSALS = {"SpecViolation", "violation"}
_FAULTS = {"ValueError", "ArithmeticError", "GraphError", "TypeError", "NotImplementedError"}


def _raises(tree: ast.AST) -> list[tuple[ast.Raise, ast.Call, str]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
            f = node.exc.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if name in _REFUSALS | _FAULTS:
                found.append((node, node.exc, name))
    return sorted(found, key=lambda t: -t[0].lineno)


def quiet_messages(source: str) -> tuple[str, int]:
    """``source`` laid out so that a refusal's text sits on lines of its own, each ending in :data:`PRAGMA`.

    Only the layout changes (the syntax tree is checked equal); returns the new source and the lines marked.
    """
    lines = source.splitlines()
    for _, call, name in _raises(ast.parse(source)):  # from the bottom, so earlier positions hold
        rest = [*call.args[1:], *(k.value for k in call.keywords)]
        if name in _REFUSALS and call.args and rest:
            # ")" on a line of its own, then the text after the rule's comma on the next line
            end, col = call.end_lineno - 1, call.end_col_offset - 1  # type: ignore[operator]
            indent = " " * (call.col_offset + 4)
            lines[end:end + 1] = [lines[end][:col].rstrip(), indent[:-4] + lines[end][col:]]
            rule = call.args[0]
            r, c = rule.end_lineno - 1, lines[rule.end_lineno - 1].index(",", rule.end_col_offset) + 1  # type: ignore[operator]
            lines[r:r + 1] = [lines[r][:c], indent + lines[r][c:].lstrip()]
    new = "\n".join(lines) + "\n"
    marked: set[int] = set()
    for stmt, call, name in _raises(ast.parse(new)):
        if name in _FAULTS:
            marked.update(range(stmt.lineno, stmt.end_lineno + 1))  # type: ignore[operator]
        elif call.args and len(call.args) + len(call.keywords) > 1:
            marked.update(range(call.args[0].end_lineno + 1, call.end_lineno))  # type: ignore[operator, arg-type]
    lines = new.splitlines()
    marked.update(k + 1 for k, line in enumerate(lines) if line.strip().startswith("with np.errstate("))
    for k in marked:
        lines[k - 1] += PRAGMA
    new = "\n".join(lines) + "\n"
    if ast.dump(ast.parse(new)) != ast.dump(ast.parse(source)):
        raise AssertionError("quiet_messages changed more than the layout")
    return new, len(marked)


def _spread(cases: list[Any], k: int) -> list[Any]:
    """Up to ``k`` of ``cases``, evenly spread (the first and the last included)."""
    if len(cases) <= k:
        return cases
    return [cases[round(i * (len(cases) - 1) / (k - 1))] for i in range(k)] if k > 1 else cases[:1]


def _freeze_all(per_template: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, str]]:
    """Every default case frozen (the whole corpus), the sample, and each case's template."""
    from qdq_conformance.generators.cache import load_file_cached
    from qdq_conformance.generators.corpus import CASES_DIR, case_files
    from qdq_conformance.generators.graph_case import GraphCase

    by_template: dict[str, list[Any]] = defaultdict(list)
    for path in case_files(CASES_DIR):
        for c in load_file_cached(path, ("default",)):
            if c.tier == "default":
                by_template[f"{path.name}#{getattr(c, 'template', c.id)}"].append(c)
    full: list[dict[str, Any]] = []
    sample: list[dict[str, Any]] = []
    template = {c.id: key for key, cases in by_template.items() for c in cases}
    for cases in by_template.values():
        # one case a template (its first valid one) also judges the kernel on rewritten models
        first = next((c.id for c in cases if c.status != "invalid"), None)
        frozen = {c.id: _freeze_graph(c, c.id == first) if isinstance(c, GraphCase) else
                  _freeze_node(c, c.id == first) for c in cases}
        full += frozen.values()
        # every invalid case (the refusals are cheap, and each names the rule it breaks), and a spread of the
        # others
        picked = {c.id for c in _spread(cases, per_template)} | {c.id for c in cases if c.status == "invalid"}
        sample += [frozen[c.id] for c in cases if c.id in picked]
    return full, sample, template


def refreeze(project: Path) -> None:
    """Freeze the whole corpus of this checkout again into a run's ``project`` (for ``recheck``): cases added
    since the run are judged against its survivors without a new run, with this checkout's answer
    (``kernel_answers.py``). The kernel must be the run's."""
    full, _, template = _freeze_all(1)
    for where in (project, project / "mutants"):
        (where / "frozen-full.pkl").write_bytes(pickle.dumps(full))
        (where / "tests" / "test_frozen.py").write_text(TEST)
        shutil.copyfile(ROOT / "tools" / "kernel_answers.py", where / "tests" / "answers.py")
    (project / "templates.json").write_text(json.dumps(template))
    print(f"{len(full)} cases frozen into {project}")


def prepare(out: Path, per_template: int) -> None:
    full, sample, template = _freeze_all(per_template)
    out.mkdir(parents=True, exist_ok=True)
    pkg = out / "qdq_conformance"
    if pkg.exists():
        shutil.rmtree(pkg)
    shutil.copytree(ROOT / "conformance", pkg, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "generators", pkg / "generators", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "cases", pkg / "cases", ignore=shutil.ignore_patterns("__pycache__"))
    marked = 0
    for module in sorted((pkg / "reference").glob("*.py")):
        text, n = quiet_messages(module.read_text())
        module.write_text(text)
        marked += n
    (out / "tests").mkdir(exist_ok=True)
    (out / "tests" / "__init__.py").write_text("")
    (out / "tests" / "test_frozen.py").write_text(TEST)
    shutil.copyfile(ROOT / "tools" / "kernel_answers.py", out / "tests" / "answers.py")
    (out / "pyproject.toml").write_text(PYPROJECT)
    (out / "frozen-sample.pkl").write_bytes(pickle.dumps(sample))
    (out / "frozen-full.pkl").write_bytes(pickle.dumps(full))
    (out / "templates.json").write_text(json.dumps(template))
    print(f"{marked} lines of refusal text and errstate headers marked not to mutate (docs/mutants.md)")
    templates = len(set(template.values()))
    print(f"{len(sample)} of {len(full)} cases frozen as the sample ({templates} templates, up to "
          f"{per_template} each); run: cd {out} && mutmut run --max-children 2")


def _round_robin(groups: list[list[int]]) -> list[int]:
    """One case of every group, then a second ... (so a budget spent early still spans every template)."""
    out: list[int] = []
    for k in range(max(map(len, groups), default=0)):
        out += [g[k] for g in groups if k < len(g)]
    return out


def recheck(project: Path, names: list[str], budget: float, out: Path, first: tuple[str, ...] = ()) -> None:
    """Judge mutants of a mutmut run (its survivors by default) against the whole frozen corpus.

    Per mutant, in a forked process with the mutant in force: the cases of every template one of whose sampled
    cases reaches the mutated function (mutmut's own record), one case a template at a time, until a case
    fails (killed) or ``budget`` CPU seconds are spent. Writes one JSON line per mutant to ``out``: status
    ``killed`` (with the case), ``survived`` (every candidate judged), ``budget`` (the number judged) or
    ``unreached`` (no sampled case reaches the function: no candidate). The templates of the case files named
    in ``first`` (new files, which the run's sample did not hold) are judged first, for every mutant.
    """
    os.chdir(project / "mutants")
    sys.path.insert(0, ".")
    os.environ["QDQ_KM_FROZEN"] = "full"
    import tests.test_frozen as frozen  # type: ignore[import-not-found]

    template = json.loads((project / "templates.json").read_text())
    stats = json.loads(Path("mutmut-stats.json").read_text())["tests_by_mangled_function_name"]
    by_template: dict[str, list[int]] = defaultdict(list)
    for k, c in enumerate(frozen.FROZEN):
        by_template[template[c["id"]]].append(k)
    with out.open("a") as sink:
        for name in names:
            reached = {template[t.partition("[")[2][:-1]] for t in stats.get(name.split("__mutmut_")[0], [])}
            extra = sorted(t for t in by_template if t.partition("#")[0] in first)
            order = _round_robin([by_template[t] for t in extra])
            order += _round_robin([by_template[t] for t in sorted(reached) if t not in extra])
            if not order:
                sink.write(json.dumps({"mutant": name, "candidates": 0, "status": "unreached"}) + "\n")
                continue
            read, write = os.pipe()
            pid = os.fork()
            if pid == 0:  # the child: the mutant in force, fail fast
                os.close(read)
                _in_force(PACKAGE + name.removeprefix(PACKAGE))
                start, verdict = time.process_time(), {"status": "survived", "judged": len(order)}
                for n, k in enumerate(order):
                    try:
                        frozen.test_case(k)
                    except Exception as e:  # noqa: BLE001 - any failure of the test is a kill, as in mutmut
                        verdict = {"status": "killed", "case": frozen.FROZEN[k]["id"], "by": type(e).__name__}
                        break
                    if time.process_time() - start > budget:
                        verdict = {"status": "budget", "judged": n + 1}
                        break
                os.write(write, json.dumps(verdict).encode())
                os._exit(0)
            os.close(write)
            with os.fdopen(read) as r:
                text = r.read()
            os.waitpid(pid, 0)
            verdict = json.loads(text) if text else {"status": "crashed"}
            sink.write(json.dumps({"mutant": name, "candidates": len(order), **verdict}) + "\n")
            sink.flush()
            print(name, verdict, flush=True)


def _in_force(name: str) -> None:
    """Put mutant ``name`` in force in this (forked) process: mutmut's switch, and the modules whose tables
    are built at import by a mutated function (readings.COMPUTED from division_entry and _validity) imported
    again, so that their mutants are in force too."""
    import importlib

    from mutmut.mutation.trampoline import set_mutant_under_test

    set_mutant_under_test(name)
    if name.split(".x")[0].rpartition(".")[2] in RELOADED:
        for module in RELOADED:
            importlib.reload(sys.modules[PACKAGE + module])


#: the modules :func:`_in_force` imports again (in the order they import each other)
RELOADED = ("reading_divisions", "reading_dynamic", "readings")
#: mutmut's module prefix, which the triage file leaves out of a mutant's name
PACKAGE = "qdq_conformance.reference."
#: functions whose body runs when their module is imported and whose module cannot be imported again in a
#: mutant's process (exact_ops: graph_oracle holds its table): their mutants are judged by applying them to
#: the source (`mutmut apply`) and running the sample (docs/mutants.md)
IMPORT_TIME = frozenset({"x__compare_op"})


def confirm(project: Path, triage: Path) -> int:
    """Judge every ``killed`` verdict of ``triage`` again: its mutant in force (a forked process each), the
    case it names must fail. Prints each verdict that does not hold; returns how many."""
    import yaml

    os.chdir(project / "mutants")
    sys.path.insert(0, ".")
    os.environ["QDQ_KM_FROZEN"] = "full"
    import tests.test_frozen as frozen  # type: ignore[import-not-found]

    index = {c["id"]: k for k, c in enumerate(frozen.FROZEN)}
    wrong = checked = at_import = 0
    for group in yaml.safe_load(triage.read_text())["verdicts"]:
        if group["verdict"] != "killed":
            continue
        for short in group["mutants"]:
            if short.rpartition(".")[2].split("__mutmut_")[0] in IMPORT_TIME:
                at_import += 1  # a trampoline cannot put it in force: judged with `mutmut apply`
                continue
            name = PACKAGE + short
            checked += 1
            k = index.get(group["case"])
            if k is None:
                print(f"{name}: case {group['case']} is not in the corpus", flush=True)
                wrong += 1
                continue
            pid = os.fork()
            if pid == 0:
                _in_force(name)
                try:
                    frozen.test_case(k)
                except Exception:  # noqa: BLE001 - the case fails: the verdict holds
                    os._exit(0)
                os._exit(1)
            _, status = os.waitpid(pid, 0)
            if os.waitstatus_to_exitcode(status) != 0:
                print(f"{name}: {group['case']} does not fail with it", flush=True)
                wrong += 1
    print(f"{checked} killed verdicts judged, {wrong} do not hold ({at_import} of import-time functions, "
          "judged with `mutmut apply`, not here)")
    return wrong


def survivors(project: Path, statuses: tuple[int, ...] = (0,)) -> list[str]:
    """The mutants of the last mutmut run in ``project`` with one of ``statuses`` (mutmut's exit codes: 0
    survived, 33 no tests)."""
    found = []
    for meta in sorted((project / "mutants" / "qdq_conformance" / "reference").glob("*.meta")):
        codes = json.loads(meta.read_text())["exit_code_by_key"]
        found += [k for k, v in codes.items() if v in statuses]
    return found


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=textwrap.dedent(__doc__ or "").split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    prep = sub.add_parser("prepare", help="freeze the corpus's answers and lay out mutmut's project")
    prep.add_argument("--out", type=Path, required=True, help="a folder of its own (rewritten)")
    prep.add_argument("--per-template", type=int, default=6, metavar="K",
                      help="cases of each template in the sample (default: %(default)s)")
    again_f = sub.add_parser("refreeze", help="this checkout's corpus into a run's project")
    again_f.add_argument("--project", type=Path, required=True, help="the folder prepare wrote, after a run")
    conf = sub.add_parser("confirm", help="judge every killed verdict of a triage file again")
    conf.add_argument("--project", type=Path, required=True, help="the folder prepare wrote (or refreeze)")
    conf.add_argument("--triage", type=Path, default=ROOT / "tools" / "kernel_mutation_triage.yaml")
    again = sub.add_parser("recheck", help="judge mutants of a run (its survivors) against the whole corpus")
    again.add_argument("--project", type=Path, required=True, help="the folder prepare wrote, after a run")
    again.add_argument("--budget", type=float, default=60.0, metavar="S", help="CPU seconds a mutant")
    again.add_argument("--out", type=Path, required=True, help="JSON lines, one a mutant (appended)")
    again.add_argument("--first", action="append", default=[], metavar="FILE",
                       help="a case file (name) whose templates every mutant meets first (repeatable)")
    again.add_argument("names", nargs="*", help="mutant names (default: the run's survivors)")
    args = p.parse_args(argv)
    if args.command == "prepare":
        prepare(args.out, args.per_template)
    elif args.command == "refreeze":
        refreeze(args.project)
    elif args.command == "confirm":
        return 1 if confirm(args.project, args.triage.resolve()) else 0
    else:
        recheck(args.project, args.names or survivors(args.project), args.budget, args.out.resolve(),
                tuple(args.first))
    return 0


if __name__ == "__main__":
    sys.exit(main())
