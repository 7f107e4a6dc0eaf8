"""The limits that keep one case file from costing minutes and gigabytes (docs/case-format.md, "Limits").

A case file is bounded as it is read (``loader.py``: its size, nesting depth and nodes with aliases expanded)
and as it is expanded (here: elements per tensor, concrete cases per template, counted before any is built).
Each is far above what the corpus needs; going over one is a CaseFileError naming the file, the line and the
key.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

from .loader import MAX_DEPTH, MAX_FILE_BYTES, MAX_NODES
from .template import Template

__all__ = ["MAX_CASES", "MAX_DEPTH", "MAX_ELEMENTS", "MAX_FILE_BYTES", "MAX_ID_LENGTH", "MAX_NODES",
           "SAFE_ID", "check_cases", "check_elements", "check_id"]

#: the alphabet and length of a concrete case id: it names the case's folder and files in an exported suite
MAX_ID_LENGTH = 160
SAFE_ID = re.compile(rf"[a-z0-9][a-z0-9-]{{0,{MAX_ID_LENGTH - 1}}}")

#: the most elements of one input tensor (the corpus's largest, in the large tier, has 1,048,583)
MAX_ELEMENTS = 1 << 22
#: the most concrete cases one template may expand into, counted before recipes that do not apply drop some
#: (the corpus's largest, a large-tier sweep, has 33,600 of which 28,320 remain)
MAX_CASES = 50_000


def check_elements(tpl: Template, key: str, shape: Iterable[int]) -> None:
    """Refuse a tensor shape of more than MAX_ELEMENTS elements before anything is allocated."""
    dims = list(shape)
    n = math.prod(dims)
    if n > MAX_ELEMENTS:
        shown = ("x".join(str(d) if d < 10**12 else "huge" for d in dims[:8])
                 + ("x..." if len(dims) > 8 else ""))
        count = f"{n:,}" if n < 10**18 else "more than 10**18"
        raise tpl.error(key,
                        f"shape {shown} has {count} elements, more than the {MAX_ELEMENTS:,} allowed per "
                        "tensor")


def check_cases(tpl: Template, count: int) -> None:
    """Refuse a template that expands into more than MAX_CASES cases (called while counting, before
    building)."""
    if count > MAX_CASES:
        raise tpl.error("", f"expands into more than {MAX_CASES:,} cases (versions x types x zero points x "
                        "granularity variants x attribute values); split the template")


def check_id(tpl: Template, case_id: str) -> None:
    """Refuse a case id that could not name a folder: at most MAX_ID_LENGTH characters of a-z, 0-9 and '-'
    (the template id, type names, and attribute names and values all flow into it)."""
    if not SAFE_ID.fullmatch(case_id):
        raise tpl.error("id", f"the case id {case_id[:80]!r} must be at most {MAX_ID_LENGTH} characters of "
                        "a-z, 0-9 and '-' (it names folders and files): shorten the template id or an "
                        "attribute")
