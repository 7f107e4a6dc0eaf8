"""A case record under short names, for a page that embeds one entry per case-form (the HTML report: 63,754
for a full run, where the record's own names made the data 3.4 % larger after compression, 2.16 MB -> 2.23 MB
of base64, measured on a full ONNX Runtime run).

The short names are derived from the record's keys (:class:`.records.CaseRecord`, in the order it declares
them), each the shortest prefix of its name that no earlier key took, followed by the page's own keys
(``extra``: what a page adds to an entry). A page embeds the table (:func:`expansion`) and its script expands
every entry back to the record's own names before it reads one: no short name is written anywhere else.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import get_type_hints

from .records import CaseRecord


def _derive(names: Iterable[str]) -> dict[str, str]:
    """name -> the shortest prefix of it no earlier name took (the whole name when every prefix is taken)."""
    out: dict[str, str] = {}
    taken: set[str] = set()
    for name in names:
        short = next((name[:n] for n in range(1, len(name)) if name[:n] not in taken), name)
        if short in taken:
            raise ValueError(f"no short name is left for {name!r}")
        out[name] = short
        taken.add(short)
    return out


def short_names(extra: Sequence[str] = ()) -> dict[str, str]:
    """A case record's keys, then ``extra`` (a page's own keys), each -> its short name."""
    keys = list(get_type_hints(CaseRecord))
    clash = [k for k in extra if k in keys]
    if clash:
        raise ValueError(f"a page's own keys must not be a record's: {clash}")
    return _derive([*keys, *extra])


def expansion(names: Mapping[str, str]) -> dict[str, str]:
    """The table a page embeds to expand its entries: short name -> the record's own name."""
    return {short: name for name, short in names.items()}
