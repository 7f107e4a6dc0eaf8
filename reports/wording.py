"""Findings in words: a failing case's plain sentence (a finding's first line), what a backend's error says
without its boilerplate, and text cut to a length.
"""

from __future__ import annotations

import re

from qdq_conformance.domain import RunStatus
from qdq_conformance.results import CaseRecord
from qdq_conformance.rules import RULES

from .casepage import first_explained
from .signature import RUNNER_WORDS, first_part


def nodes_text(nodes: list[str], more: int = 0, shown: int = 4) -> str:
    """The model nodes behind a case or a finding (a case made from a model: its ``source``), the first few
    and how many more: ``m.onnx: node 3 'conv_q', m.onnx: node 7 'relu_q' and 12 more``."""
    rest = len(nodes) - shown + more if len(nodes) > shown else more
    return ", ".join(nodes[:shown]) + (f" and {rest} more" if rest > 0 else "")


def shorten(text: str, limit: int, middle: bool = True) -> str:
    """``text`` in at most about ``limit`` characters, cut at word boundaries, an ellipsis for what is left
    out: its start and its end (``middle``: where a backend's error says what went wrong, after its
    boilerplate), or its start."""
    if len(text) <= limit:
        return text
    if not middle:
        cut = text[: limit - 1]
        return (cut[: cut.rfind(" ")] if " " in cut[limit // 2:] else cut).rstrip(" ,;:") + " …"
    head, tail = text[: limit // 3], text[-(limit - limit // 3 - 3):]
    head = head[: head.rfind(" ")] if " " in head[limit // 6:] else head
    tail = tail[tail.find(" ") + 1:] if " " in tail[: limit // 4] else tail
    return f"{head.rstrip(' ,;:')} … {tail}"



_VERBS = {RunStatus.ERROR: "fails with an error", RunStatus.CRASHED: "crashes",
          RunStatus.TIMEOUT: "does not finish within the time limit"}
#: a C++ function signature an error starts with (``Status ns::Op<T>::Compute(Ctx*) const [with T = ...]``)
_SIGNATURE = re.compile(r"^[\w:<>,*& ]*::[\w:<>,*& ]*\([^)]*\)\s*(?:const)?\s*(?:\[with [^\]]*\])?\s*")
_STATUS_MESSAGE = re.compile(r"Status Message:\s*(?:\S+\.(?:cc|cpp|h|py):\d+\s+(?:\S+\s+)?)?")


def gist(message: str) -> str:
    """What a backend's error says, without its boilerplate (ONNX Runtime's ``[ONNXRuntimeError] : 1 : FAIL :
    Non-zero status ... Status Message: <source>:<line> <function>``), in at most about 160 characters."""
    text = first_part(message)
    text = RUNNER_WORDS.sub("", text)
    parts = _STATUS_MESSAGE.split(text, maxsplit=1)
    text = (parts[-1] if len(parts) > 1
            else re.sub(r"^.*?\[ONNXRuntimeError\]\s*:\s*\d+\s*:\s*\w+\s*:\s*", "", text))
    text = text.split("; no catalogued reading rejects this model")[0]
    text = _SIGNATURE.sub("", text, count=1)
    condition, false, after = text.partition(" was false.")
    if false:
        text = after.strip() or f"its check {condition.strip()} failed"
    return shorten(text.strip(), 160, middle=False)


def plain(rec: CaseRecord) -> str:
    """One plain sentence of what goes wrong in a failing case, from its per-element explanations and its
    family (never from an expectation file's reason), for a finding's first line."""
    family = rec.get("family") or "these"
    status = rec["status"]
    first = first_explained(rec) if rec.get("actual") else None
    counts = [(m.get("count"), m.get("total")) for m in rec.get("mismatches") or () if m.get("count")]
    share = f" ({counts[0][0]} of {counts[0][1]} elements)" if counts else ""
    if first is not None:
        expected, actual, why = first
        where = f"for an input {why}" if why else "for some inputs"
        return (f"In {family} cases, {where}, the backend returns {actual} where the spec gives {expected}"
                f"{share}.")
    if status == RunStatus.INVALID_ACCEPTED:
        rule = rec.get("rule")
        summary = RULES[rule].summary if rule in RULES else "a model the spec forbids"
        return f"In {family} cases, the backend runs a model the spec forbids ({rule}: {summary}) instead " \
               "of rejecting it."
    if status in _VERBS:
        said = gist(rec.get("message") or "")
        return (f"In {family} cases, the backend {_VERBS[RunStatus(status)]}" + (f": {said}" if said else "")
                +
                ("" if said.endswith(".") else "."))
    said = gist(rec.get("message") or "")
    return (f"In {family} cases, the backend's outputs differ from the spec's" + (f": {said}" if said else "")
            + ".")


