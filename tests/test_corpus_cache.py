"""The runner's corpus cache: the same cases as a fresh expansion, byte for byte (every input, every expected
output, every catalogued reading's outputs and the model of each graph form), and a new entry when the file
changes."""

from __future__ import annotations

import shutil

import numpy as np

from qdq_conformance.domain import FORMS
from qdq_conformance.generators import cache
from qdq_conformance.generators.case import ConcreteCase
from qdq_conformance.generators.corpus import CASES_DIR, load_file


def _bytes(a: np.ndarray | None) -> tuple[str, tuple[int, ...], bytes] | None:
    return None if a is None else (a.dtype.str + a.dtype.name, a.shape, np.ascontiguousarray(a).tobytes())


def _content(c: ConcreteCase) -> tuple[object, ...]:
    """Everything a run takes from a case, as bytes."""
    return (c.id, [(name, _bytes(v)) for name, v in c.inputs], [_bytes(e) for e in c.expected or []],
            [(r.key, None if r.outputs is None else [_bytes(o) for o in r.outputs]) for r in c.readings],
            [c.model(form).SerializeToString() for form in FORMS])


def test_cached_expansion_equals_fresh_and_follows_edits(tmp_path, monkeypatch):
    monkeypatch.setenv("QDQ_CACHE_DIR", str(tmp_path / "cache"))
    src = tmp_path / "quark_boundaries.yaml"  # (one output of 1,563 elements: str() shows 6 of them)
    shutil.copy(CASES_DIR / "quark_boundaries.yaml", src)
    fresh = load_file(src, ("default",))
    first = cache.load_file_cached(src, ("default",))
    entries = list((tmp_path / "cache" / "corpus").glob("*.pkl"))
    assert len(entries) == 1
    again = cache.load_file_cached(src, ("default",))  # (read back from the entry)
    assert [_content(c) for c in again] == [_content(c) for c in fresh] == [_content(c) for c in first]
    assert sum(c.expected is not None and any(e.size > 1000 for e in c.expected) for c in fresh) > 0
    src.write_text(src.read_text() + "# edited\n")
    cache.load_file_cached(src, ("default",))
    assert len(list((tmp_path / "cache" / "corpus").glob("*.pkl"))) == 2  # the edit made a new key
    monkeypatch.setenv("QDQ_CORPUS_CACHE", "0")
    cache.load_file_cached(src, ("large",))
    assert len(list((tmp_path / "cache" / "corpus").glob("*.pkl"))) == 2  # disabled: nothing written
