"""Concepts with one owner stay there (issue 30, points 2 and 3), read from the source with :mod:`ast`.

- Comparing outputs: only ``qdq_conformance.compare`` calls numpy's equality and closeness helpers, compares
  bit patterns with ``==`` / ``!=``, matches NaN against NaN (two ``isnan`` combined) or writes / reads the
  rule text ``ulp<=N``. What this can see: those spellings. What it cannot: a plain ``a != b`` on two arrays,
  since the types of ``a`` and ``b`` are not in the source; the agreement test (test_compare_agreement.py)
  holds every view to the verdict on the values where a hand-written comparison would go wrong (NaN, -0, ULP).
- A reading's key ``entry:reading``: only ``qdq_conformance.ambiguities`` formats it (an f-string putting a
  ``.ambiguity`` before a ``:``, a string literal starting with a catalogue entry's id and ``:``) or splits
  one (``partition`` / ``split`` at ``:`` of something named reading).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from qdq_conformance.ambiguities import catalogue

from .sources import modules

COMPARE = "qdq_conformance.compare"
AMBIGUITIES = "qdq_conformance.ambiguities"
#: numpy's ways of deciding arrays (or elements) are equal or close
_NUMPY_EQUALITY = {"array_equal", "array_equiv", "allclose", "isclose", "assert_array_equal",
                   "assert_allclose", "assert_equal", "assert_array_almost_equal", "assert_almost_equal",
                   "assert_array_max_ulp", "assert_array_almost_equal_nulp"}
#: calls whose results are bit patterns
_BITS = {"code_of", "tobytes", "view", "bit_patterns"}
#: (module, function) that compare bit patterns of what is not an output, and why that is no verdict
ALLOWED = {
    ("qdq_conformance.mutants.rewrites", "_equal"): "a model's scale and zero point, the same by value",
    ("qdq_conformance.mutants.around", "_same"): "a graph's constants (a Pad's, a Q's), the same by value",
    ("qdq_conformance.generators.graph_coverage", "_same_values"): "a graph's parameters, the same by value",
    ("qdq_conformance.reports.signature", "_element_kind"): "the kind of an element the verdict marked",
}


def _name(call: ast.expr) -> str:
    if not isinstance(call, ast.Call):
        return ""
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def _functions(tree: ast.AST) -> Iterator[tuple[str, ast.AST]]:
    """(enclosing function's name, node) for every node ("" at module level)."""
    def walk(node: ast.AST, where: str) -> Iterator[tuple[str, ast.AST]]:
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else where
            yield inner, child
            yield from walk(child, inner)
    yield from walk(tree, "")


def _comparisons(node: ast.AST) -> str | None:
    """What in ``node`` compares outputs by hand, or None."""
    if isinstance(node, ast.Call) and _name(node) in _NUMPY_EQUALITY:
        return f"numpy's {_name(node)}"
    if isinstance(node, ast.Compare) and any(isinstance(o, (ast.Eq, ast.NotEq)) for o in node.ops) and \
            any(_name(x) in _BITS for x in (node.left, *node.comparators)):
        return "bit patterns compared with == / !="
    pair: list[ast.expr] = []
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.BitAnd, ast.BitOr)):
        pair = [node.left, node.right]
    elif isinstance(node, ast.Compare):
        pair = [node.left, *node.comparators]
    elif isinstance(node, ast.BoolOp):
        pair = node.values
    if sum(_name(x) == "isnan" for x in pair) >= 2:
        return "NaN matched against NaN"
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("ulp<="):
        return "the rule text ulp<=N"
    return None


#: the start of a key of each catalogue entry (a string literal starting with one is a key written by hand)
_ENTRY_PREFIXES = tuple(f"{a}:" for a in catalogue())


def _reading_keys(node: ast.AST) -> str | None:
    """What in ``node`` formats or splits a reading's key by hand, or None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
            node.value.startswith(_ENTRY_PREFIXES):
        return f"a reading key written out ({node.value!r})"
    if isinstance(node, ast.JoinedStr):
        parts = node.values
        for a, b in zip(parts, parts[1:], strict=False):
            if isinstance(a, ast.FormattedValue) and isinstance(a.value, ast.Attribute) and \
                    a.value.attr == "ambiguity" and isinstance(b, ast.Constant) and \
                    str(b.value).startswith(":"):
                return "an f-string formatting entry:reading"
    if isinstance(node, ast.Call) and _name(node) in ("partition", "split", "rsplit", "rpartition") and \
            node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value == ":" and \
            isinstance(node.func, ast.Attribute) and "reading" in ast.unparse(node.func.value).lower():
        return "a reading key split at ':'"
    return None


def _found(owner: str, check: object) -> list[str]:
    out = []
    for name, (path, _) in sorted(modules().items()):
        if name == owner:
            continue
        for where, node in _functions(ast.parse(path.read_text(encoding="utf-8"))):
            what = check(node)  # type: ignore[operator]
            if what and (name, where) not in ALLOWED:
                out.append(f"{path}:{getattr(node, 'lineno', '?')} ({where or 'module'}): {what}")
    return out


def test_only_compare_compares_outputs() -> None:
    assert _found(COMPARE, _comparisons) == []


def test_only_the_catalogue_formats_and_reads_reading_keys() -> None:
    assert _found(AMBIGUITIES, _reading_keys) == []


def test_the_checks_see_what_they_look_for() -> None:
    """Each check finds its spellings (a check that can find nothing would pass whatever the source holds)."""
    samples = {
        "np.array_equal(a, b)": _comparisons, "code_of(a) != code_of(b)": _comparisons,
        "a.tobytes() == b.tobytes()": _comparisons, "np.isnan(a) & np.isnan(b)": _comparisons,
        "math.isnan(e) != math.isnan(a)": _comparisons, "'ulp<=' + str(n)": _comparisons,
        "f'{r.ambiguity}:{r.name}'": _reading_keys, "reading.partition(':')": _reading_keys,
        "rec['reading'].split(':')": _reading_keys, "Mutant(reading='dq-precision:float32')": _reading_keys,
    }
    for source, check in samples.items():
        assert any(check(n) for n in ast.walk(ast.parse(source))), source
    harmless = ["a != b", "np.isnan(a).any()", "f'{spec.domain}::{spec.name}'", "line.partition(':')"]
    for source in harmless:
        nodes = list(ast.walk(ast.parse(source)))
        assert not any(c(n) for n in nodes for c in (_comparisons, _reading_keys)), source
