"""The ``-k`` / ``-m`` expressions the collection narrows by (``conformance/plugin/selection.py``, which reads
them with a parser of its own: pytest's is not public API), pinned side by side with pytest's own behaviour,
under the installed pytest and the oldest the package accepts (tests/pytest_versions.py):

- the grammar: for a table of expressions, the plugin's parser reads only what pytest's reads, and where both
  read one, it evaluates as pytest's does, for ``-k``'s matcher (a case-insensitive substring of any name) and
  ``-m``'s (a marker name), over several sets of names;
- the collection: for a table of selections, the items collected with the narrowing are exactly those
  collected without it (``QDQ_COLLECT_ALL=1``: pytest deselects on its own).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

EXPRESSIONS = [
    "a", "A", "not a", "a and b", "a or b", "a or b and c", "(a or b) and c", "not a and b", "not (a and b)",
    "not not a", "a and (b or not (c and d))", "((a))", "a or not b or c and not d",
    "quantizelinear-21", "QuantizeLinear-21", "x_int8", "y_int8[runtime]", "per-tensor", "a.b:c/d\\e+f",
    "and", "or", "not", "a and", "or a", "a b", "(a", "a)", "()", "", "   ", "a(b=1)", "a(", "!a", "a, b",
    "True", "None", "a == b", "a-", "-a", "[", "]", "1.5", "v21 and not v23",
]
#: the names an item could carry (node names, extra keywords, markers), lower- and mixed-case
NAME_SETS = [
    [], ["a"], ["A"], ["a", "b"], ["b", "c", "d"], ["a", "c"], ["xa_b"], ["True", "None"],
    ["quantizelinear-21-ties-float-int8[runtime]", "x_int8", "y_int8", "v21", "per_tensor"],
    ["QuantizeLinear", "per-tensor", "a.b:c/d\\e+f", "v23", "1.5"],
]
GRAMMAR = """
import json, sys
import pytest
from _pytest.mark.expression import Expression as Theirs  # (pytest's own parser, as -k / -m use it)
from qdq_conformance.plugin.selection import Expression as Ours
expressions, name_sets = json.loads(sys.argv[1])
rows = []
for text in expressions:
    try:
        theirs = Theirs.compile(text)
    except Exception:
        theirs = None
    try:
        ours = Ours(text)
    except ValueError:
        ours = None
    row = {"text": text, "pytest": theirs is not None, "ours": ours is not None, "k": [], "m": []}
    if theirs is not None and ours is not None:
        for names in name_sets:
            low = [n.lower() for n in names]
            def keyword(sub, **_):  # pytest's KeywordMatcher
                return any(sub.lower() in n for n in low)
            def marker(name, **_):  # pytest's MarkMatcher (no arguments)
                return name in names
            row["k"].append([bool(theirs.evaluate(keyword)), bool(ours.evaluate(keyword))])
            row["m"].append([bool(theirs.evaluate(marker)), bool(ours.evaluate(marker))])
    rows.append(row)
print(json.dumps({"pytest": pytest.__version__, "rows": rows}))
"""


def test_the_plugins_expressions_read_and_evaluate_as_pytests(which_pytest):
    env, version = which_pytest
    p = subprocess.run([sys.executable, "-c", GRAMMAR, json.dumps([EXPRESSIONS, NAME_SETS])], cwd=ROOT,
                       env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    got = json.loads(p.stdout)
    assert got["pytest"] == version
    rows = got["rows"]
    # the plugin reads nothing pytest refuses (an expression it cannot read collects every file)
    assert [r["text"] for r in rows if r["ours"] and not r["pytest"]] == []
    # ... and reads the expressions users write
    read = {r["text"] for r in rows if r["ours"]}
    assert {"a", "not a", "a or b and c", "(a or b) and c", "quantizelinear-21", "y_int8[runtime]",
            "a.b:c/d\\e+f", "v21 and not v23"} <= read
    differ = [(r["text"], NAME_SETS[k], which) for r in rows for which in ("k", "m")
              for k, (theirs, ours) in enumerate(r[which]) if theirs != ours]
    assert differ == [], (version, differ[:10])
    assert sum(len(r["k"]) for r in rows) >= 250


#: case files of several operators and kinds (single nodes, graphs, another domain), copied into a folder
FILES = ("quantize_types.yaml", "quark_boundaries.yaml", "dynamic_quantize_linear.yaml", "graph_quark.yaml")
SELECTIONS = [("-k", "dynamicquantizelinear or bnd-ties"), ("-k", "quark and not graph and initializer"),
              ("-m", "graph and op_extendedquantizelinear"), ("-m", "v11 or (com_amd_quark and y_int8)")]


@pytest.fixture(scope="module")
def case_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("cases")
    for name in FILES:
        shutil.copy(ROOT / "cases" / name, folder / name)
    return folder


def _collected(folder: Path, env: dict[str, str], *args: str) -> list[str]:
    p = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--backend=oracle",
                        "--workers", "1", "--cases", str(folder), "--collect-only", "-q", *args], cwd=ROOT,
                       capture_output=True, text=True, timeout=900, env=env)
    assert p.returncode in (0, 5), p.stdout[-2000:] + p.stderr[-2000:]
    return sorted(line for line in p.stdout.splitlines() if "::" in line)


@pytest.mark.parametrize("selection", SELECTIONS, ids=[" ".join(s) for s in SELECTIONS])
def test_the_narrowed_collection_is_pytests_selection(which_pytest, case_folder, selection):
    env, version = which_pytest
    narrowed = _collected(case_folder, env, *selection)
    everything = _collected(case_folder, {**env, "QDQ_COLLECT_ALL": "1"}, *selection)
    assert narrowed and narrowed == everything, (version, selection)
    assert len({line.split("::")[0] for line in narrowed}) < len(FILES)  # (some file was left out)


def test_a_named_file_the_selection_leaves_empty_costs_nothing_else(which_pytest, case_folder):
    """Two case files named on the command line, -k selecting cases of one only: the other's cases are
    deselected as pytest deselects, not an error that collects nothing ("not found", exit 4 or 5)."""
    env, version = which_pytest
    files = [str(case_folder / "dynamic_quantize_linear.yaml"), str(case_folder / "quark_boundaries.yaml")]
    narrowed = _collected(case_folder, env, "-k", "dynamicquantizelinear", *files)
    everything = _collected(case_folder, {**env, "QDQ_COLLECT_ALL": "1"}, "-k", "dynamicquantizelinear",
                            *files)
    assert narrowed and narrowed == everything, version
    assert all("dynamic_quantize_linear.yaml::" in line for line in narrowed)
