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
binding included), a graph case in the runtime form; the kernel's readings (``reference/readings.py``) are
judged too: a case's catalogued readings are part of its frozen answer.

docs/mutants.md ("The kernel under a standard mutation tool") has the command, the figures and the triage.
"""

from __future__ import annotations

import argparse
import pickle
import shutil
import sys
import textwrap
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
"""

TEST = '''\
"""One test per frozen case: the (mutated) kernel must answer as the unmutated one did."""
import os
import pickle
from pathlib import Path

import numpy as np
import pytest

from qdq_conformance.compare import compare
from qdq_conformance.errors import SpecViolation
from qdq_conformance.reference import run_any
from qdq_conformance.reference.readings import readings

FROZEN = pickle.loads((Path(__file__).parents[1] / f"frozen-{os.environ.get('QDQ_KM_FROZEN', 'sample')}.pkl")
                      .read_bytes())


def _same(a, b):
    return (a is None) == (b is None) and (a is None or (len(a) == len(b) and all(
        compare(np.asarray(x), np.asarray(y)) is None for x, y in zip(a, b))))


def _same_masks(a, b):
    return (a is None) == (b is None) and (a is None or (len(a) == len(b) and all(
        (x is None) == (y is None) and (x is None or np.array_equal(x, y)) for x, y in zip(a, b))))


def _answer(c):
    import onnx

    try:
        outputs = run_any(onnx.load_model_from_string(c["model"]), c["feeds"])
        if c["kind"] == "graph":
            return {"outputs": outputs}
    except SpecViolation as e:
        return {"rule": e.rule}
    found = readings(c["domain"], c["op"], c["version"], c["inputs"], c["attrs"], outputs, c["asked"])
    return {"outputs": outputs, "readings": {r.key: (r.outputs, r.judged) for r in found}}


@pytest.mark.parametrize("k", range(len(FROZEN)), ids=[c["id"] for c in FROZEN])
def test_case(k):
    c = FROZEN[k]
    got, want = _answer(c), c["answer"]
    assert got.get("rule") == want.get("rule")
    assert _same(got.get("outputs"), want.get("outputs"))
    assert set(got.get("readings", {})) == set(want.get("readings", {}))
    for key, (outs, judged) in want.get("readings", {}).items():
        g_outs, g_judged = got["readings"][key]
        assert _same(g_outs, outs) and _same_masks(g_judged, judged), key
'''


def _freeze_node(c: Any) -> dict[str, Any]:
    from qdq_conformance.domain import Form
    from qdq_conformance.errors import SpecViolation
    from qdq_conformance.reference import evaluate
    from qdq_conformance.reference.readings import readings

    inputs = [v for _, v in c.inputs]
    # judged through the model in the initializer form, as a backend receives it (the kernel's model binding
    # included); the readings from the node's inputs
    entry: dict[str, Any] = {"id": c.id, "kind": "node", "domain": c.domain, "op": c.op, "version": c.version,
                             "inputs": inputs, "attrs": dict(c.attrs),
                             "asked": (c.ambiguity,) if c.ambiguity else (),
                             "model": c.model(Form.INITIALIZER.value).SerializeToString(),
                             "feeds": c.feeds(Form.INITIALIZER.value)}
    try:
        outputs = evaluate(c.domain, c.op, c.version, inputs, dict(c.attrs))
    except SpecViolation as e:
        entry["answer"] = {"rule": e.rule}
        return entry
    found = readings(c.domain, c.op, c.version, inputs, dict(c.attrs), outputs, entry["asked"])
    entry["answer"] = {"outputs": outputs, "readings": {r.key: (r.outputs, r.judged) for r in found}}
    return entry


def _freeze_graph(c: Any) -> dict[str, Any]:
    from qdq_conformance.domain import Form
    from qdq_conformance.reference import run_any

    model = c.model(Form.RUNTIME.value)
    feeds = c.feeds(Form.RUNTIME.value)
    return {"id": c.id, "kind": "graph", "model": model.SerializeToString(), "feeds": feeds,
            "answer": {"outputs": run_any(model, feeds)}}


def _spread(cases: list[Any], k: int) -> list[Any]:
    """Up to ``k`` of ``cases``, evenly spread (the first and the last included)."""
    if len(cases) <= k:
        return cases
    return [cases[round(i * (len(cases) - 1) / (k - 1))] for i in range(k)] if k > 1 else cases[:1]


def prepare(out: Path, per_template: int) -> None:
    from qdq_conformance.generators.cache import load_file_cached
    from qdq_conformance.generators.corpus import CASES_DIR, case_files
    from qdq_conformance.generators.graph_case import GraphCase

    by_template: dict[str, list[Any]] = defaultdict(list)
    for path in case_files(CASES_DIR):
        for c in load_file_cached(path, ("default",)):
            if c.tier == "default":
                by_template[f"{path.name}#{getattr(c, 'template', c.id)}"].append(c)
    full, sample = [], []
    for cases in by_template.values():
        frozen = {c.id: _freeze_graph(c) if isinstance(c, GraphCase) else _freeze_node(c) for c in cases}
        full += frozen.values()
        # every invalid case (the refusals are cheap, and each names the rule it breaks), and a spread of the
        # others
        picked = {c.id for c in _spread(cases, per_template)} | {c.id for c in cases if c.status == "invalid"}
        sample += [frozen[c.id] for c in cases if c.id in picked]
    out.mkdir(parents=True, exist_ok=True)
    pkg = out / "qdq_conformance"
    if pkg.exists():
        shutil.rmtree(pkg)
    shutil.copytree(ROOT / "conformance", pkg, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "generators", pkg / "generators", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "cases", pkg / "cases", ignore=shutil.ignore_patterns("__pycache__"))
    (out / "tests").mkdir(exist_ok=True)
    (out / "tests" / "__init__.py").write_text("")
    (out / "tests" / "test_frozen.py").write_text(TEST)
    (out / "pyproject.toml").write_text(PYPROJECT)
    (out / "frozen-sample.pkl").write_bytes(pickle.dumps(sample))
    (out / "frozen-full.pkl").write_bytes(pickle.dumps(full))
    print(f"{len(sample)} of {len(full)} cases frozen as the sample ({len(by_template)} templates, up to "
          f"{per_template} each); run: cd {out} && mutmut run --max-children 2")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=textwrap.dedent(__doc__ or "").split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    prep = sub.add_parser("prepare", help="freeze the corpus's answers and lay out mutmut's project")
    prep.add_argument("--out", type=Path, required=True, help="a folder of its own (rewritten)")
    prep.add_argument("--per-template", type=int, default=6, metavar="K",
                      help="cases of each template in the sample (default: %(default)s)")
    args = p.parse_args(argv)
    prepare(args.out, args.per_template)
    return 0


if __name__ == "__main__":
    sys.exit(main())
