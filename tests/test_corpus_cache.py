"""The runner's corpus cache: the same cases as a fresh expansion, byte for byte (every input, every expected
output, every catalogued reading's outputs and the model of each graph form), and a new entry when the file
changes."""

from __future__ import annotations

import shutil
from pathlib import Path

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


def _imports_by_ast(name: str, path: Path, locate: object) -> set[str]:
    """What the import-direction test reads with ``ast`` (every import, at any depth)."""
    from .sources import modules
    from .test_layers import _imports

    return _imports(name, path, path.name == "__init__.py", modules())


def test_the_key_covers_every_module_expansion_imports():
    """The fingerprint's modules are the closure of what expansion imports, as ``ast`` reads the imports: not
    a list kept by hand (which missed domain.py, imported by generators/case.py and ten other modules)."""
    files, others = cache.closure(cache.ROOTS)
    assert set(files) == set(cache.closure(cache.ROOTS, imports=_imports_by_ast)[0])
    assert {"qdq_conformance.domain", "qdq_conformance.reference.quantize", "qdq_conformance.types",
            "qdq_conformance.generators.case", "qdq_conformance"} <= set(files)
    assert others == {"numpy", "ml_dtypes", "onnx", "yaml"}


def test_a_new_dependency_changes_the_key(tmp_path):
    """In a package of three modules, the key follows what the root imports: a change to a module it does not
    import changes nothing; once it imports that module (in a function, relatively), the key changes, and so
    does every change to that module; an import of another package adds its version."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text('"""import c (a docstring, not an import)"""\nfrom .b import helper\n')
    (pkg / "b.py").write_text("def helper():\n    return 1\n")
    (pkg / "c.py").write_text("VALUE = 1\n")

    def locate(name: str):
        parts = name.split(".")
        if parts[0] != "pkg":
            return None
        path = tmp_path.joinpath(*parts)
        return path / "__init__.py" if path.is_dir() else path.with_suffix(".py") if \
            path.with_suffix(".py").is_file() else None

    def key() -> str:
        return cache.fingerprint(("pkg.a",), locate, data=[])

    before = key()
    assert set(cache.closure(("pkg.a",), locate)[0]) == {"pkg", "pkg.a", "pkg.b"}
    (pkg / "c.py").write_text("VALUE = 2\n")
    assert key() == before  # (a module expansion does not import)
    (pkg / "a.py").write_text((pkg / "a.py").read_text() + "def f():\n    from . import c\n    return c\n")
    with_c = key()
    assert with_c != before and "pkg.c" in cache.closure(("pkg.a",), locate)[0]
    (pkg / "c.py").write_text("VALUE = 3\n")
    assert key() not in (before, with_c)
    (pkg / "b.py").write_text("import numpy  # a package of its own\n" + (pkg / "b.py").read_text())
    assert cache.closure(("pkg.a",), locate)[1] == {"numpy"}
