"""A persistent cache of expanded case files, for the runner's collection.

Expanding the corpus (values, oracle outputs, alternative readings) takes seconds per process, and every
pytest (-xdist worker) process collects the whole corpus. The cache keeps each file's expansion, pickled,
under a key made of the file's bytes, the selected tiers, and a fingerprint of everything expansion depends
on (:func:`fingerprint`): the source of every module of this package that expansion imports (the closure of
the imports of :data:`ROOTS`, read from the source: :func:`closure`), the versions of the other packages they
import and of Python, and the data expansion reads (the ambiguity catalogue, the case schema). Any change
gives a new key; stale entries are simply unused.

Location: ``$QDQ_CACHE_DIR/corpus`` (default ``~/.cache/onnx-qdq-conformance/corpus``); ``QDQ_CORPUS_CACHE=0``
turns it off.
"""

from __future__ import annotations

import hashlib
import importlib
import keyword
import os
import pickle
import platform
import re
import sys
import tempfile
from collections.abc import Callable, Iterable, Sequence
from functools import cache
from pathlib import Path

from qdq_conformance.cachedir import cache_root
from qdq_conformance.gcpause import gc_paused
from qdq_conformance.resources import cases_dir, data_dir, package_dir, schema_path
from qdq_conformance.sharding import Shard, in_shard

from .case import ConcreteCase
from .loader import read_case_file


def enabled() -> bool:
    return os.environ.get("QDQ_CORPUS_CACHE", "1") not in ("0", "false", "no", "off")


#: where expansion starts: a case file to its cases (``corpus.load_file``), and this module (the entries'
#: format)
ROOTS = ("qdq_conformance.generators.corpus", "qdq_conformance.generators.cache")
_PACKAGE = "qdq_conformance"
#: an import statement, at any indentation (in a function too): ``from X import (a, b)`` or ``import X, Y``,
#: read once docstrings are taken out (:func:`_code`). A pattern, not ``ast``: parsing the 44 modules took
#: 0.6 s a process under load; the whole fingerprint takes 13 ms of CPU (5 ms with the list it replaces,
#: median of 7 runs each, load 15). A line of a string that still reads like an import only adds a module to
#: the key (tests/test_corpus_cache.py checks the closure is the one ``ast`` reads).
_IMPORT = re.compile(r"^[ \t]*(?:from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n]*)"
                     r"|import[ \t]+([^\n]*))", re.M)
_COMMENT = re.compile(r"#[^\n]*")

Locate = Callable[[str], "Path | None"]


@cache
def _locate(name: str) -> Path | None:
    """The source file of module ``name`` of this package (None: not one of its modules), found in the folders
    of its top packages without importing anything (importing ``qdq_conformance.reference`` to find it would
    import the kernel, which a warm collection never does)."""
    for top, base in _tops():
        if name == top:
            return Path(base, "__init__.py")
        if name.startswith(top + "."):
            *folders, last = [base, *name[len(top) + 1:].split(".")]
            folder = os.path.join(*folders)
            if last + ".py" in _entries(folder):
                return Path(folder, last + ".py")
            if last not in _entries(folder):
                return None
            package = os.path.join(folder, last)
            return Path(package, "__init__.py") if "__init__.py" in _entries(package) else None
    return None


@cache
def _entries(folder: str) -> frozenset[str]:
    """The names in ``folder`` (none when it is not one): one listing a folder, not a stat a candidate."""
    try:
        return frozenset(os.listdir(folder))
    except OSError:
        return frozenset()


@cache
def _tops() -> tuple[tuple[str, str], ...]:
    """(package, folder) of this package's top packages, the longest name first."""
    return tuple((top, str(package_dir(top)))
                 for top in ("qdq_conformance.generators", "qdq_conformance.reports", _PACKAGE))


def _code(text: str) -> str:
    """``text`` without what triple quotes enclose (docstrings: their prose may read like an import)."""
    for quotes in ('"""', "'''"):
        if quotes in text:
            text = "".join(text.split(quotes)[::2])
    return text


def _imports(name: str, text: str, is_package: bool, locate: Locate) -> set[str]:
    """The modules of this package that module ``name`` (its source ``text``) imports, and the top-level
    names of other packages (``numpy``)."""
    package = name if is_package else name.rpartition(".")[0]
    found: set[str] = set()
    for base, names, plain in _IMPORT.findall(_code(text)):
        if "#" in names or "#" in plain:
            names, plain = _COMMENT.sub("", names), _COMMENT.sub("", plain)
        if plain:
            found |= {n.split(" as ")[0].strip() for n in plain.split(",") if n.strip()}
            continue
        level = len(base) - len(base.lstrip("."))
        module = base.lstrip(".")
        if level:
            anchor = package.rsplit(".", level - 1)[0] if level > 1 else package
            module = f"{anchor}.{module}" if module else anchor
        found.add(module)
        for item in names.strip().strip("()").replace("\n", ",").split(","):
            item = item.split(" as ")[0].strip()
            if item and item != "*" and locate(f"{module}.{item}") is not None:
                found.add(f"{module}.{item}")
    return {m for m in found if m and all(part.isidentifier() and not keyword.iskeyword(part)
                                          for part in m.split("."))}


#: (module name, its file, the locator) -> the names it imports
ImportReader = Callable[[str, Path, Locate], Iterable[str]]


def read_imports(name: str, path: Path, locate: Locate) -> set[str]:
    """What module ``name`` (its file ``path``) imports, read with :data:`_IMPORT`."""
    return _imports(name, path.read_text(encoding="utf-8"), path.name == "__init__.py", locate)


def closure(roots: Iterable[str], locate: Locate = _locate,
            imports: ImportReader = read_imports) -> tuple[dict[str, Path], set[str]]:
    """(module name -> source file of every module of this package the ``roots`` import, transitively, each
    package's ``__init__`` included; the top-level names of the other packages they import). ``imports``
    reads a module's imports (a test reads them with ``ast`` instead, to check the pattern)."""
    files: dict[str, Path] = {}
    others: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in files:
            continue
        path = locate(name)
        if path is None:
            others.add(name.split(".")[0])
            continue
        files[name] = path
        parent = name.rpartition(".")[0]
        if parent:
            todo.append(parent)  # (importing a module runs its package's __init__)
        todo += imports(name, path, locate)
    return files, {o for o in others if o not in sys.stdlib_module_names and o != "__future__"}


def _version(top: str) -> str:
    module = sys.modules.get(top) or importlib.import_module(top)
    return str(getattr(module, "__version__", "?"))


def fingerprint(roots: Iterable[str] = ROOTS, locate: Locate = _locate,
                data: Iterable[tuple[Path, Path]] | None = None) -> str:
    """What expansion depends on, hashed: the source of every module :func:`closure` finds (by module name),
    the versions of the other packages they import and of Python, and the data files expansion reads
    (``data``: (base, file) pairs; default the ambiguity catalogue and the case schema)."""
    if roots == ROOTS and locate is _locate and data is None:
        return _fingerprint()
    return _hash(roots, locate, data)


@cache
def _fingerprint() -> str:
    return _hash(ROOTS, _locate, None)


def _hash(roots: Iterable[str], locate: Locate, data: Iterable[tuple[Path, Path]] | None) -> str:
    files, others = closure(roots, locate)
    h = hashlib.sha256(f"python {platform.python_version()}\0".encode())
    for top in sorted(others):
        h.update(f"{top} {_version(top)}\0".encode())
    for name in sorted(files):
        h.update(name.encode() + b"\0" + files[name].read_bytes() + b"\0")
    if data is None:
        data = [*((data_dir(), p) for p in data_dir().glob("*")), (cases_dir(), schema_path())]
    for base, p in sorted(data, key=lambda bp: (str(bp[0]), str(bp[1]))):
        if p.is_file():
            h.update(str(p.relative_to(base)).encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


def entry_key(data: bytes, tiers: Sequence[str], shard: Shard | None = None) -> str:
    """The cache key of a case file's bytes expanded for ``tiers`` (with the code's :func:`fingerprint`), and
    for one ``shard`` (K, N) of its cases."""
    part = b"" if shard is None else f"\0shard {shard[0]}/{shard[1]}".encode()
    return hashlib.sha256(fingerprint().encode() + b"\0" + ",".join(tiers).encode() + part + b"\0"
                          + data).hexdigest()


def load_file_cached(path: Path, tiers: Sequence[str], shard: Shard | None = None) -> list[ConcreteCase]:
    """``corpus.load_file(path, tiers, shard)``, from the cache when an entry for exactly this input exists.
    A shard's cases are those of the whole file's entry when there is one (filtered: the same cases, in the
    same order, as generating twice gives the same bytes), else of the shard's own entry, else expanded for
    that shard only and kept as its entry."""
    # imported on a cache miss only: a warm collection (each pytest-xdist worker's) skips the imports of the
    # expansion and the kernel behind it, 0.1 s a process (measured with -X importtime)
    from .corpus import load_file

    if not enabled():
        return load_file(path, tiers, shard)
    data = read_case_file(path)  # (raises CaseFileError: unreadable, or over the size limit)
    folder = cache_root() / "corpus"
    whole = _read(folder / f"{path.stem}-{entry_key(data, tiers)[:24]}.pkl", path)
    keep = in_shard(shard)
    if whole is not None:
        return whole if keep is None else [c for c in whole if keep(c.id)]
    entry = folder / f"{path.stem}-{entry_key(data, tiers, shard)[:24]}.pkl"
    if shard is not None:
        part = _read(entry, path)
        if part is not None:
            return part
    cases = load_file(path, tiers, shard)  # raises CaseFileError, which is never cached
    for case in cases:
        case.prepare()  # metadata and serialized models, computed once and kept with the case
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            pickle.dump(cases, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, entry)  # atomic: concurrent xdist workers never read a half-written entry
    except OSError:
        pass  # a read-only home: run without the cache
    return cases


def _read(entry: Path, path: Path) -> list[ConcreteCase] | None:
    """The cases an entry holds (None: none can be read), as cases of ``path``."""
    try:
        with entry.open("rb") as fh, gc_paused():
            cached: list[ConcreteCase] = pickle.load(fh)
        for case in cached:
            # the same bytes may have been cached from a file of the same name elsewhere
            case.file = str(path)
        return cached
    except Exception:  # (missing, truncated, or from other code: any entry that cannot be read is recomputed)
        return None
