"""A persistent cache of expanded case files, for the runner's collection.

Expanding the corpus (values, oracle outputs, alternative readings) takes seconds per process, and every
pytest (-xdist worker) process collects the whole corpus. The cache keeps each file's expansion, pickled,
under a key made of the file's bytes, the selected tiers, and a fingerprint of everything expansion depends
on: the code of ``generators`` and of the kernel, types and specs in ``conformance``, the ambiguity catalogue,
the case schema, and the versions of Python, numpy, ml_dtypes and onnx. Any change gives a new key; stale
entries are simply unused.

Location: ``$QDQ_CACHE_DIR/corpus`` (default ``~/.cache/onnx-qdq-conformance/corpus``); ``QDQ_CORPUS_CACHE=0``
turns it off.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import platform
import tempfile
from collections.abc import Sequence
from functools import cache
from pathlib import Path

import ml_dtypes
import numpy
import onnx

from qdq_conformance.cachedir import cache_root
from qdq_conformance.gcpause import gc_paused
from qdq_conformance.resources import cases_dir, data_dir, package_dir, schema_path

from .case import ConcreteCase
from .loader import read_case_file


def enabled() -> bool:
    return os.environ.get("QDQ_CORPUS_CACHE", "1") not in ("0", "false", "no", "off")


@cache
def fingerprint() -> str:
    h = hashlib.sha256()
    for part in (platform.python_version(), numpy.__version__, ml_dtypes.__version__, onnx.__version__):
        h.update(part.encode() + b"\0")
    conf = package_dir("qdq_conformance")
    gen = package_dir("qdq_conformance.generators")
    sources = [*((gen, p) for p in gen.rglob("*.py")),
               *((conf, p) for p in (conf / "reference").rglob("*.py")),
               *((conf, conf / n)
                 for n in ("types.py", "opspecs.py", "ambiguities.py", "errors.py", "rules.py",
                           "modelbuild.py", "compare.py")),
               *((conf, p) for p in data_dir().glob("*")), (cases_dir(), schema_path())]
    for base, p in sorted(sources, key=lambda bp: (str(bp[0]), str(bp[1]))):
        if p.is_file():
            h.update(str(p.relative_to(base)).encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


def entry_key(data: bytes, tiers: Sequence[str]) -> str:
    """The cache key of a case file's bytes expanded for ``tiers`` (with the code's :func:`fingerprint`)."""
    return hashlib.sha256(fingerprint().encode() + b"\0" + ",".join(tiers).encode() + b"\0"
                          + data).hexdigest()


def load_file_cached(path: Path, tiers: Sequence[str]) -> list[ConcreteCase]:
    """``corpus.load_file(path, tiers)``, from the cache when an entry for exactly this input exists."""
    # imported on a cache miss only: a warm collection (each pytest-xdist worker's) skips the imports of the
    # expansion and the kernel behind it, 0.1 s a process (measured with -X importtime)
    from .corpus import load_file

    if not enabled():
        return load_file(path, tiers)
    data = read_case_file(path)  # (raises CaseFileError: unreadable, or over the size limit)
    key = entry_key(data, tiers)
    folder = cache_root() / "corpus"
    entry = folder / f"{path.stem}-{key[:24]}.pkl"
    try:
        with entry.open("rb") as fh, gc_paused():
            cached: list[ConcreteCase] = pickle.load(fh)
        for case in cached:
            # the same bytes may have been cached from a file of the same name elsewhere
            case.file = str(path)
        return cached
    except Exception:  # (missing, truncated, or from other code: any entry that cannot be read is recomputed)
        pass
    cases = load_file(path, tiers)  # raises CaseFileError, which is never cached
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
