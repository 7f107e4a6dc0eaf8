"""One case in detail, from its results record: the per-element table (inputs at each index, expected and
actual values with their bit codes, which elements differ and why), the backend's error without this tool's
frames, and a finding's plain sentence. The HTML report's case page (its script draws the table from what
:func:`page_data` adds), ``qdq-conformance show`` (:func:`render_text`) and the findings (:func:`plain`) read
it.

Which rows are marked is decided by the verdict's own comparison (:func:`qdq_conformance.compare.differs`: bit
patterns, any NaN matching any NaN, a case's ULP bound, an ``interval`` case's acceptable values), on arrays
rebuilt from the record's bit codes; values are shown at their type's own precision
(:func:`qdq_conformance.types.texts`), whatever the file's text says. An ``interval`` case's rows also say
which values are acceptable and where the actual one falls (:func:`qdq_conformance.compare.outside_by`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal, TypedDict, cast

from qdq_conformance.compare import differing_codes, from_codes, outside_by, rule_ulp
from qdq_conformance.resources import package_dir
from qdq_conformance.results import CaseRecord, PreviewRecord
from qdq_conformance.types import TYPES, texts

#: One previewed element of an output (:func:`rows`): its index, the input and parameters there, expected and
#: actual (value, code), whether it differs and why it is hard.
Row = TypedDict("Row", {"index": int, "x": str, "scale": str, "zero point": str, "expected": str,
                        "expected_code": str, "actual": str, "actual_code": str, "differs": bool, "why": str,
                        "acceptable": str}, total=False)
_ROLES: tuple[Literal["scale", "zero point"], ...] = ("scale", "zero point")

_FRAME = re.compile(r'^\s*File "([^"]+)", line \d+')
_TRACEBACK = "Traceback (most recent call last):"
#: where this tool's own code lives: its frames are left out of a backend's traceback
_OWN = (str(package_dir("qdq_conformance")), "/qdq_conformance/")


def ulp_of(rec: CaseRecord) -> int:
    """The ULP bound of the record's comparison rule (0: exact)."""
    return rule_ulp(rec.get("comparison"))


def _array(p: PreviewRecord | None) -> Any:
    """A preview as the array its codes stand for (None when its type is not one of the registry's)."""
    if not p or p.get("type") not in TYPES or not p.get("codes"):
        return None
    try:
        return from_codes(p["type"], p["codes"])
    except (ValueError, IndexError, TypeError, OverflowError):
        return None


def retext(p: PreviewRecord | None) -> PreviewRecord | None:
    """A preview whose values are rewritten from its codes at the type's own precision (older results files
    wrote float32 at float64 precision)."""
    a = _array(p)
    if a is None or p is None:
        return p
    return {**p, "values": texts(a)}


def _bound_codes(p: PreviewRecord) -> tuple[list[int], list[int]] | None:
    low, high = p.get("low"), p.get("high")
    return None if low is None or high is None else (low, high)


def marks(rec: CaseRecord) -> list[list[int]]:
    """Per output, the previewed elements (flat indices) that differ, by the verdict's comparison."""
    ulp = ulp_of(rec)
    out: list[list[int]] = []
    for e, a in zip(rec.get("expected") or [], rec.get("actual") or [], strict=False):
        ep, ap = e or cast(PreviewRecord, {}), a or cast(PreviewRecord, {})
        out.append(differing_codes(str(ep.get("type")), ep.get("codes") or [], str(ap.get("type")),
                                   ap.get("codes") or [], ulp, _bound_codes(ep)))
    return out


def acceptable(exp: PreviewRecord | None, act: PreviewRecord | None) -> list[str]:
    """Per previewed element of an ``interval`` output: its acceptable values (``3``, ``3 .. 4``, a float
    interval ``[0.1, 0.10000001]``) and, for an actual value outside them, how far (``2 above``); [] for an
    output without bounds."""
    bounds = _bound_codes(exp) if exp else None
    if exp is None or bounds is None or exp.get("type") not in TYPES:
        return []
    try:
        low, high = (from_codes(exp["type"], list(c)) for c in bounds)
    except (ValueError, IndexError, TypeError, OverflowError):
        return []
    lows, highs = texts(low), texts(high)
    integer = not TYPES[exp["type"]].is_float
    out = [f"{lo}" if lo == hi else f"{lo} .. {hi}" if integer else f"[{lo}, {hi}]"
           for lo, hi in zip(lows, highs, strict=True)]
    a = _array(act) if act and act.get("type") == exp["type"] else None
    if a is not None:
        n = min(len(a), len(out))
        far = outside_by((low[:n], high[:n]), a[:n])
        for j in range(n):
            d = float(far[j])
            if d != 0 and d == d:
                out[j] += f" (actual {abs(d):g} {'above' if d > 0 else 'below'})" if integer else \
                    f" (actual {'above' if d > 0 else 'below'})"
    return out


def explained(rec: CaseRecord) -> dict[int, dict[int, str]]:
    """Per output, flat index -> why that element is hard (the boundary its x sits on), from the record's
    ``explained`` pairs, or else its ``labels`` of the first mismatching indices."""
    out: dict[int, dict[int, str]] = {}
    first = (rec.get("expected") or [None])[0]
    shape = (first.get("shape") if first else None) or []
    for m in rec.get("mismatches") or ():
        k = m.get("output") or 0
        got = out.setdefault(k, {})
        for j, text in m.get("explained") or ():
            got[int(j)] = str(text)
        for idx, text in zip(m.get("first_indices") or [], m.get("labels") or [], strict=False):
            flat = _flat(idx, shape)
            if flat is not None:
                got.setdefault(flat, str(text))
    return out


def _flat(idx: Any, shape: list[int]) -> int | None:
    idx = [int(i) for i in (idx if isinstance(idx, list) else [idx])]
    if len(idx) != len(shape):
        return idx[0] if len(idx) == 1 else None
    flat = 0
    for i, n in zip(idx, shape, strict=True):
        flat = flat * n + i
    return flat


def strip_tool_frames(message: str) -> str:
    """A backend's message with this tool's own frames taken out of its traceback (the backend's, the
    library's and Python's stay)."""
    head, sep, trace = message.partition(_TRACEBACK)
    if not sep:
        return message
    kept: list[str] = []
    skip = False
    for line in trace.splitlines():
        frame = _FRAME.match(line)
        if frame:
            skip = any(own in frame.group(1) for own in _OWN)
            if not skip:
                kept.append(line)
        elif not (skip and line.startswith("    ")):
            skip = False
            kept.append(line)
    return head + sep + "\n".join(kept) if any(_FRAME.match(k) for k in kept) else head.rstrip()


def param_index(flat: int, shape: list[int], pshape: list[int], attrs: Mapping[str, int | str]) -> int | None:
    """The flat index into a scale or zero point (shape ``pshape``) that applies to element ``flat`` of x / y
    (shape ``shape``): per-tensor, per-axis (``axis``) or blocked (``axis``, ``block_size``)."""
    size = 1
    for n in pshape:
        size *= n
    if size <= 1:
        return 0
    idx: list[int] = []
    rest = flat
    for n in reversed(shape):
        idx.append(rest % n if n else 0)
        rest //= max(n, 1)
    idx.reverse()
    axis = int(attrs.get("axis", 1))
    axis += len(shape) if axis < 0 else 0
    if not 0 <= axis < len(shape):
        return None
    if len(pshape) == 1:
        return idx[axis] if idx[axis] < pshape[0] else None
    block = int(attrs.get("block_size") or 0)
    if len(pshape) != len(shape) or block <= 0:
        return None
    out = 0
    for d, (i, n) in enumerate(zip(idx, pshape, strict=True)):
        out = out * n + (i // block if d == axis else i)
    return out


def rows(rec: CaseRecord, k: int = 0) -> list[Row]:
    """Output ``k``'s table: per previewed element its index, x / scale / zero point there, expected and
    actual (value and code), whether it differs, and why it is hard."""
    exp = retext(((rec.get("expected") or [])[k:k + 1] or [None])[0])
    act = retext(((rec.get("actual") or [])[k:k + 1] or [None])[0])
    if not exp:
        return []
    inputs = {name: retext(p) for name, p in (rec.get("inputs") or {}).items()}
    names = list(inputs)
    x = inputs.get(names[0]) if names else None
    params = [(role, inputs.get(n)) for role, n in zip(_ROLES, names[1:3], strict=False)]
    bad = set((marks(rec)[k:k + 1] or [[]])[0])
    why = explained(rec).get(k, {})
    sets = acceptable(exp, act)
    attrs = rec.get("attributes") or {}
    out = []
    for j, value in enumerate(exp["values"]):
        row: Row = {"index": j, "expected": value, "expected_code": _code(exp, j)}
        if x and x.get("shape") == exp.get("shape") and j < len(x["values"]):
            row["x"] = x["values"][j]
        for role, p in params:
            if p:
                at = param_index(j, exp.get("shape") or [], p.get("shape") or [], attrs)
                if at is not None and at < len(p["values"]):
                    row[role] = p["values"][at]
        if act and j < len(act["values"]):
            row["actual"], row["actual_code"] = act["values"][j], _code(act, j)
        row["differs"] = j in bad
        row["why"] = why.get(j, "") if j in bad else ""
        if j < len(sets):
            row["acceptable"] = sets[j]
        out.append(row)
    return out


def _index(flat: int, shape: list[int]) -> str:
    """``4`` of a 1-D output, ``1, 2`` (row 1, column 2) of a 2-D one."""
    if len(shape) <= 1:
        return str(flat)
    idx = []
    for n in reversed(shape):
        idx.append(flat % n if n else 0)
        flat //= max(n, 1)
    return ", ".join(map(str, reversed(idx)))


def _code(p: PreviewRecord, j: int) -> str:
    codes = p.get("codes") or []
    if j >= len(codes):
        return ""
    t = TYPES.get(p.get("type") or "")
    width = max(1, ((t.bits if t else 8) + 3) // 4)
    return f"0x{int(codes[j]):0{width}x}"


def page_data(details: CaseRecord) -> dict[str, object]:
    """What the report's case page adds to a record's details: values at their type's precision, the rows the
    verdict's comparison marks (``marks``), the per-element explanations (``why``) and the message without
    this tool's frames."""
    out: dict[str, Any] = dict(details)
    for key in ("expected", "actual"):
        if out.get(key):
            out[key] = [retext(p) for p in out[key]]
    if out.get("inputs"):
        out["inputs"] = {n: retext(p) for n, p in out["inputs"].items()}
    if out.get("expected") and out.get("actual"):
        # the table, row by row: [index, x, scale, zero point, expected, code, actual, code, differs, why,
        # acceptable values (an interval case; "" otherwise)]
        out["table"] = [[[_index(r["index"], (e or {}).get("shape") or []), r.get("x", ""),
                          r.get("scale", ""), r.get("zero point", ""), r["expected"], r["expected_code"],
                          r.get("actual", "-"), r.get("actual_code", ""), int(r["differs"]), r["why"],
                          r.get("acceptable", "")]
                         for r in rows(cast(CaseRecord, out), k)]
                        for k, e in enumerate(out["expected"])]
        out["acceptable"] = any(_bound_codes(e) for e in out["expected"] if e)
        out["shapes"] = [[(e or {}).get("type"), (e or {}).get("shape"), (a or {}).get("type"),
                          (a or {}).get("shape")]
                         for e, a in zip(out["expected"], out["actual"], strict=False)]
        del out["expected"], out["actual"]  # (the table holds them)
    if out.get("message"):
        out["message"] = strip_tool_frames(out["message"])
    return out


def first_explained(rec: CaseRecord) -> tuple[str, str, str] | None:
    """(expected, actual, why) of the first differing element that has an explanation, else of the first
    differing one (why ""), or None."""
    table = rows(rec, 0) if rec.get("expected") and rec.get("actual") else []
    bad = [r for r in table if r["differs"]]
    pick = next((r for r in bad if r["why"]), bad[0] if bad else None)
    return None if pick is None else (pick["expected"], pick.get("actual", "-"), pick["why"])


def render_text(rec: CaseRecord) -> str:
    """``qdq-conformance show``: one case-form in full."""
    spec = rec.get("spec")
    lines = [f"{rec['id']} [{rec.get('form')}] on {rec.get('backend')} {rec.get('backend_version')}: "
             f"{rec['status']}"]
    if spec:
        lines.append(f"spec ({spec.get('operator')} {spec.get('versions')}): "
                     f"\"{' '.join(str(spec.get('text')).split())}\"")
    lines.append(f"case: {rec.get('case_status')}, family {rec.get('family')}, {rec.get('granularity')}, "
                 f"comparison {rec.get('comparison')}, attributes {rec.get('attributes') or {}}"
                 + (f", ambiguity {rec['ambiguity']}" if rec.get("ambiguity") else "")
                 + (f", rule {rec['rule']}" if rec.get("rule") else ""))
    if rec.get("interval_why"):
        lines.append(f"why an interval: {rec['interval_why']}")
    if rec.get("defect"):
        lines.append(f"defect (graph case): {rec['defect']}: {rec.get('defect_why') or ''}")
    source = rec.get("source")
    if source:
        lines.append(f"made from: {', '.join(source.get('nodes') or [])}"
                     + (f" and {source['more_nodes']} more nodes" if source.get("more_nodes") else "")
                     + (f" ({source['concrete']})" if source.get("concrete") else ""))
    e = rec.get("expectation")
    lines.append("expectation: "
                 + (f"line {e.get('line')}: {e.get('status')}: {' '.join(str(e.get('reason')).split())}"
                    if e else "none"))
    if rec.get("reading") or rec.get("behaviour"):
        lines.append(f"reading followed: {rec.get('reading') or '-'}; behaviour: "
                     f"{rec.get('behaviour') or '-'}")
    lines.append("message: " + strip_tool_frames(rec.get("message") or ""))
    for name, p in (rec.get("inputs") or {}).items():
        p = retext(p)
        if p:
            lines.append(f"input {name} ({p['type']}, shape {p['shape']}): " + ", ".join(p["values"][:16])
                         + (" ..." if len(p["values"]) > 16 or p.get("truncated") else ""))
    for k, _ in enumerate(rec.get("expected") or []):
        table = rows(rec, k)
        if not table or not any("actual" in r for r in table):
            continue
        sets = any("acceptable" in r for r in table)
        lines.append(f"output {k}: expected vs actual ('*': differs by the verdict's comparison"
                     + ("; acceptable: every value a legitimate float32 evaluation can lead to)" if sets
                        else ")"))
        head = f"  {'':1} {'#':>4} {'x':>14} {'scale':>12} {'zero pt':>8} {'expected':>14} {'code':>10} " \
               f"{'actual':>14} {'code':>10}  " + ("acceptable" if sets else "why")
        lines.append(head)
        for r in table:
            lines.append(f"  {'*' if r['differs'] else ' '} {r['index']:>4} {r.get('x', ''):>14} "
                         f"{r.get('scale', ''):>12} {r.get('zero point', ''):>8} {r['expected']:>14} "
                         f"{r['expected_code']:>10} {r.get('actual', '-'):>14} "
                         f"{r.get('actual_code', ''):>10}  {r.get('acceptable', '') if sets else r['why']}")
    for m in rec.get("mismatches") or ():
        lines.append(f"mismatch: output {m.get('output')}: {m.get('reason')}"
                     + (f", {m.get('count')} of {m.get('total')} elements differ" if m.get("count") else ""))
    return "\n".join(lines)
