"""Message markers: fragments of a runtime's error text that say "not implemented", for backends whose runtime
has no other way to tell a refusal of an unimplemented feature from the rejection of an invalid model.

Each marker of a :class:`MarkerSet` names what it stands for and, optionally, the graph forms whose refusals
it is for; the backend's tests check each one on the installed release (one model each that the runtime
refuses with that fragment). A whole run reports the markers that matched none of its refusals
(:class:`MarkerWatch`), as it reports stale expectation entries: a new release that rewords its messages would
otherwise turn "unsupported" into "rejected" silently.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
import onnx

from ..types import TYPES

#: numpy's own element types (what runtimes' Python APIs that know no ml_dtypes exchange): bool, integers,
#: float16/32/64. ml_dtypes' types are left out, float8e5m2 included (numpy reports its kind as 'f').
NUMPY_TYPES = frozenset(np.dtype(t)
                        for t in (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                                  np.uint32, np.uint64, np.float16, np.float32, np.float64))


def exotic_io(model: onnx.ModelProto) -> str | None:
    """The registry name of the first element type of a graph input or output that is not one of numpy's own
    (:data:`NUMPY_TYPES`), or None."""
    by_proto = {t.proto: t for t in TYPES.values()}
    for vi in [*model.graph.input, *model.graph.output]:
        t = by_proto.get(vi.type.tensor_type.elem_type)
        if t is not None and t.dtype not in NUMPY_TYPES:
            return t.name
    return None


@dataclass(frozen=True)
class Marker:
    fragment: str  # a substring of the runtime's message (case-sensitive)
    meaning: str  # what the runtime refuses when it says this
    forms: tuple[str, ...] = ()  # the graph forms whose refusals it is for (empty: every form)


@dataclass(frozen=True)
class MarkerSet:
    backend: str
    markers: tuple[Marker, ...]

    def match(self, text: str) -> Marker | None:
        """The first marker ``text`` contains, or None."""
        return next((m for m in self.markers if m.fragment in text), None)

    def reason(self, text: str) -> str | None:
        """The reason an Unsupported carries when a marker matches ``text`` (None: no marker does)."""
        m = self.match(text)
        return None if m is None else f"{text} [unsupported: {self.backend} says {m.fragment!r}: {m.meaning}]"


@dataclass
class MarkerWatch:
    """Which markers the refusals of a run matched, as the results arrive in the pytest process."""

    markers: MarkerSet
    unseen: list[Marker] = field(default_factory=list)
    hits: Counter[tuple[str, str]] = field(default_factory=Counter)  # (form, fragment) -> refusals it matched

    def __post_init__(self) -> None:
        self.unseen = list(self.markers.markers)

    def see(self, reason: str | None, form: str = "") -> None:
        m = self.markers.match(reason) if reason else None
        if m is not None:
            self.hits[(form, m.fragment)] += 1
            if m in self.unseen:
                self.unseen.remove(m)

    def commonest(self, form: str) -> tuple[Marker, int] | None:
        """The marker that matched the most refusals of ``form``, with their number."""
        best = max(((n, f) for (fm, f), n in self.hits.items() if fm == form), default=None)
        return (None if best is None
                else (next(m for m in self.markers.markers if m.fragment == best[1]), best[0]))

    def stale(self, forms: Iterable[str]) -> list[str]:
        """Sentences for the markers that matched no refusal although a form they are for ran."""
        ran = set(forms)
        return [f"stale marker of the {self.markers.backend} backend: {m.fragment!r} ({m.meaning}) matched "
                f"no refusal of this run (does {self.markers.backend} still say it? "
                "tests/test_new_backends.py checks each marker on the installed release)"
                for m in self.unseen if not m.forms or ran & set(m.forms)]
