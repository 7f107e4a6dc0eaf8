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


def test_a_shard_is_generated_alone_and_gives_the_whole_files_cases_of_that_shard(tmp_path, monkeypatch):
    """``--shard K/N`` on a cold cache builds only the shard's cases (the floor run of CI: 1/16 of the corpus
    in an environment of its own): byte for byte the whole file's cases of that shard, in its order, for a
    single-node file whose variants skip and for a graph file; each kept as the shard's entry, and once the
    whole file is cached, a shard is read from the whole file's entry."""
    from qdq_conformance.generators import build, graph_expand
    from qdq_conformance.sharding import shard_of

    monkeypatch.setenv("QDQ_CACHE_DIR", str(tmp_path / "cache"))
    built: list[str] = []
    for module, name in ((build, "build"), (graph_expand, "_build")):
        real = getattr(module, name)

        def counting(*args, _real=real):
            case = _real(*args)
            built.append(case.id)
            return case
        monkeypatch.setattr(module, name, counting)
    import qdq_conformance.generators.expand as expand_mod

    monkeypatch.setattr(expand_mod, "build", build.build)
    for file in ("quantize_special_values.yaml", "graph_requantize.yaml"):
        src = tmp_path / file
        shutil.copy(CASES_DIR / file, src)
        whole = load_file(src, ("default",))
        for k in (1, 3):
            mine = [_content(c) for c in whole if shard_of(c.id, 3) == k]
            assert mine and len(mine) < len(whole)
            built.clear()
            part = cache.load_file_cached(src, ("default",), (k, 3))
            assert [_content(c) for c in part] == mine, (file, k)
            # nothing of the other shards, but one case of a template none of whose cases is in the shard
            # (whether it gives any case at all)
            absent = {c.template for c in whole} - {c.template for c in whole if shard_of(c.id, 3) == k}
            assert {c[0] for c in mine} <= set(built) and len(built) == len(mine) + len(absent), (file, k)
            built.clear()
            assert [_content(c) for c in cache.load_file_cached(src, ("default",), (k, 3))] == mine
            assert built == []  # (read back from the shard's entry)
        cache.load_file_cached(src, ("default",))  # the whole file's entry
        built.clear()
        assert [_content(c) for c in cache.load_file_cached(src, ("default",), (2, 3))] == \
            [_content(c) for c in whole if shard_of(c.id, 3) == 2]
        assert built == []


def test_a_template_of_no_case_is_refused_in_every_shard(tmp_path):
    """A shard that holds none of a template's cases still refuses a template that gives none at all, and
    accepts one that gives cases in other shards only."""
    from qdq_conformance.errors import CaseFileError
    from qdq_conformance.sharding import shard_of

    good = tmp_path / "good.yaml"
    good.write_text(f"description: two templates\ncases:\n{_SMALL}", encoding="utf-8")
    whole = load_file(good, ("default",))
    n = 64
    empty = next(k for k in range(1, n + 1) if not any(shard_of(c.id, n) == k for c in whole))
    assert whole and load_file(good, ("default",), (empty, n)) == []
    bad = tmp_path / "bad.yaml"
    bad.write_text(f"description: two templates\ncases:\n{_SMALL}{_NO_CASE}", encoding="utf-8")
    for shard in (None, (empty, n), (1, 2)):
        try:
            load_file(bad, ("default",), shard)
        except CaseFileError as e:
            assert "expands to no case" in str(e)
        else:
            raise AssertionError(f"{shard}: a template of no case was accepted")


#: a template of a few cases
_SMALL = """  - id: small
    description: a few cases
    spec:
      operator: QuantizeLinear
      versions: "10-28"
      text: "The quantization formula is `y = saturate((x / y_scale) + y_zero_point)`."
    operator: QuantizeLinear
    versions: [21]
    family: signed-zero
    status: normative
    types: {x: float, y: uint8}
    inputs:
      x: {recipe: signed-zero}

"""


#: a template every variant of which skips (no float8 has a "min" zero point), and which still has many ids
_NO_CASE = """  - id: no-case
    description: nothing
    spec:
      operator: QuantizeLinear
      versions: "19-28"
      text: "The quantization formula is `y = saturate((x / y_scale) + y_zero_point)`."
    operator: QuantizeLinear
    versions: "19+"
    family: signed-zero
    status: normative
    types: {y: float8}
    inputs:
      x: {recipe: signed-zero}
      zero_point: {recipe: min}

"""
