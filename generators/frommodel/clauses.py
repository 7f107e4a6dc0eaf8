"""The spec sentence a generated case cites: quoted from the node's own operator version.

ai.onnx sentences are read from ``onnx.defs`` (the version's documentation), so a case of QuantizeLinear-10
quotes version 10's words; the contrib domains' operators are not in ``onnx.defs``, and their sentences are
the ones the corpus's contrib case files quote. An invalid node cites the sentence of the rule it breaks
(``rules.RULES``).
"""

from __future__ import annotations

import re
from functools import cache

import onnx.defs

from qdq_conformance.opspecs import AI_ONNX, MS, QUARK
from qdq_conformance.rules import RULES

#: per operator kind and family: the phrases whose lines of the version's documentation the clause quotes
#: (each sentence holding one, when the version has it; at least one must be there)
PHRASES: dict[tuple[str, str], tuple[str, ...]] = {
    ("Q", "boundary-ties"): ("quantization formula is", "to the nearest even"),
    ("Q", "boundary-range"): ("quantization formula is", "saturates to [0, 255]",
                              "Saturation is done according"),
    ("Q", "boundary-specials"): ("quantization formula is",),
    ("Q", "random"): ("quantization formula is",),
    ("DQ", "boundary-dq"): ("dequantization formula is", "The output type also determines the precision"),
    ("DQ", "all-codes"): ("dequantization formula is",),
    ("DQ", "int32-extremes"): ("In the case of dequantizing",),
    ("DQL", "dynamic"): ("y_scale = (maximum(0, max(x))", "intermediate_zero_point = qmin",
                         "y = saturate (round"),
}
#: the sentence a per-axis or blocked node's case adds (the first of these phrases the version has)
GRANULARITY: dict[str, tuple[str, ...]] = {
    "per-axis": ("Per-axis quantization:", "for per-axis quantization"),
    "blocked": ("Blocked quantization:", "for blocked quantization"),
}
#: the contrib operators' sentences (as the corpus's contrib_microsoft.yaml and contrib_quark.yaml quote them)
CONTRIB: dict[tuple[str, str], str] = {
    (MS, "Q"): "The quantization formula is y = saturate ((x / y_scale) + y_zero_point). For (x / y_scale), "
               "it's rounding to nearest ties to even.",
    (MS, "DQ"): "The dequantization formula is y = (x - x_zero_point) * x_scale.",
    (QUARK, "Q"): "The quantization formula is y = saturate((x / y_scale) + y_zero_point). For (x / "
                  "y_scale), it rounds to the nearest even.",
    (QUARK, "DQ"): "The dequantization formula is y = (x - x_zero_point) * x_scale.",
}


def _sentence(doc: str, phrase: str) -> str | None:
    """The sentence of the documentation holding ``phrase`` (whitespace collapsed; a sentence ends at ". " or
    at the end of its paragraph, so a list the sentence introduces comes with it)."""
    for paragraph in re.split(r"\n\s*\n", doc):
        text = " ".join(paragraph.split())
        at = text.find(phrase)
        if at < 0:
            continue
        begin = text.rfind(". ", 0, at)
        end = text.find(". ", at + len(phrase))
        return text[begin + 2 if begin >= 0 else 0:end + 1 if end >= 0 else len(text)]
    return None


@cache
def clause(domain: str, op: str, version: int, kind: str, family: str, granularity: str) -> dict[str, str]:
    """``{operator, versions, text}`` for a case of ``family`` on this operator version and granularity."""
    if domain != AI_ONNX:
        return {"operator": f"{domain} {op}", "versions": str(version), "text": CONTRIB[(domain, kind)]}
    doc = onnx.defs.get_schema(op, version, "").doc or ""
    quoted: list[str] = []
    for phrase in PHRASES[(kind, family)]:
        found = _sentence(doc, phrase)
        if found and found not in quoted:
            quoted.append(found)
    for phrase in GRANULARITY.get(granularity, ()):
        found = _sentence(doc, phrase)
        if found:
            quoted += [] if found in quoted else [found]
            break
    if not quoted:
        raise LookupError(f"{op}-{version}: no sentence of its documentation for {family}")
    return {"operator": op, "versions": str(version), "text": " ".join(quoted)}


def rule_clause(domain: str, op: str, version: int, rule: str) -> dict[str, str]:
    """The clause an invalid case cites: the sentence of the rule its node breaks."""
    name = op if domain == AI_ONNX else f"{domain} {op}"
    return {"operator": name, "versions": str(version), "text": RULES[rule].spec}
