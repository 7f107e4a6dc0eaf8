"""Whose fault an exception is: this tool's own code (a harness error) or the backend's.

A backend adapter of this package (``backends/``) is this tool's code wrapped around a backend library
(onnxruntime, openvino ...); an exception escaping it while a case runs is the backend's when the backend
raised it, and the harness's when this tool's own code did (an ``AttributeError`` on an API an old release
lacks, a bug in building feeds or reading outputs). The decision is made from where the exception was raised,
never from its message:

1. the traceback's frames are walked from the innermost out, passing over the frames of the libraries both
   sides call, which own no fault of their own (the standard library, numpy, ml_dtypes, protobuf, onnx but
   its reference evaluator, a backend under test);
2. the first other frame decides: a backend library's or a third-party adapter's code (anything outside this
   package) makes the exception the backend's;
3. this package's code makes it the harness's, unless the exception is one a library raises from its native
   code called there (a class of the backend library's own, or a ``RuntimeError`` / ``OSError``, which native
   extensions raise and this tool's own mistakes do not): the exception types a mistake in Python code raises
   are :data:`HARNESS_TYPES`.

An adapter that means "the backend failed" says so with its own exception (``Unsupported``, ``Rejected``, or a
``RuntimeError`` naming what the backend did), which rule 3 leaves with the backend.
"""

from __future__ import annotations

import os
import sysconfig
import traceback
from functools import lru_cache
from pathlib import Path

#: the exception types a mistake in this tool's Python code raises (an attribute an old release lacks, a wrong
#: argument, a missing key, an index out of range, a failed assertion, a bad value, arithmetic); a
#: ``RuntimeError`` or ``OSError`` is what a native library raises, and stays the backend's
HARNESS_TYPES: tuple[type[BaseException], ...] = (AttributeError, NameError, TypeError, LookupError,
                                                  ValueError, AssertionError, ArithmeticError, ImportError)

#: the libraries whose frames are passed over (both sides call them; the fault is their caller's), but onnx's
#: reference evaluator, a backend under test itself
_NEUTRAL_PACKAGES = ("numpy", "ml_dtypes", "google", "onnx")


@lru_cache(maxsize=1)
def _own_roots() -> tuple[str, ...]:
    """The folders of this package's code (the repository's ``conformance/``, ``generators/``, ``reports/``,
    wherever they are installed)."""
    from importlib.util import find_spec  # (here: this module sits below everything, and needs it once)

    roots = []
    for name in ("qdq_conformance", "qdq_conformance.generators", "qdq_conformance.reports"):
        spec = find_spec(name)
        for where in (spec.submodule_search_locations or []) if spec is not None else []:
            roots.append(str(Path(where).resolve()) + os.sep)
    return tuple(sorted(set(roots)))


@lru_cache(maxsize=1)
def _stdlib_roots() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    return tuple(sorted({str(Path(paths[k]).resolve()) + os.sep
                         for k in ("stdlib", "platstdlib") if paths.get(k)}))


_SITE = ("site-packages", "dist-packages")


@lru_cache(maxsize=4096)
def owner(filename: str) -> str:
    """``own`` (this package's code), ``neutral`` (a library both sides call) or ``backend`` (anything else:
    the backend library, a third-party adapter) for a frame's file."""
    if filename.startswith("<"):  # (<frozen importlib._bootstrap> and the like: the interpreter's own)
        return "neutral"
    path = str(Path(filename).resolve())
    if path.startswith(_own_roots()):
        return "own"
    parts = Path(path).parts
    site = max((k for k, p in enumerate(parts) if p in _SITE), default=-1)
    if site >= 0:  # an installed package: the folder right under site-packages names it
        rest = parts[site + 1:]
        if len(rest) > 1 and rest[0] in _NEUTRAL_PACKAGES and tuple(rest[:2]) != ("onnx", "reference"):
            return "neutral"
        return "backend"
    return "neutral" if path.startswith(_stdlib_roots()) else "backend"


def _library_class(e: BaseException) -> bool:
    """An exception class defined by a library outside this package and the neutral ones (the backend's)."""
    module = type(e).__module__ or ""
    top = module.split(".")[0]
    return top not in ("builtins", "qdq_conformance", *_NEUTRAL_PACKAGES)


def harness_fault(e: BaseException) -> str | None:
    """Where in this tool's own code ``e`` was raised (``file:line in function``) when it is the harness's
    fault (see the module's text), else None (the backend's)."""
    if not isinstance(e, HARNESS_TYPES) or _library_class(e):
        return None
    for frame, line in reversed(list(traceback.walk_tb(e.__traceback__))):
        filename = frame.f_code.co_filename
        who = owner(filename)
        if who == "neutral":
            continue
        if who == "backend":
            return None
        return f"{_short(filename)}:{line} in {frame.f_code.co_name}"
    return None


def _short(filename: str) -> str:
    path = str(Path(filename).resolve())
    for root in _own_roots():
        if path.startswith(root):
            return f"{Path(root).name}/{path[len(root):]}"
    return filename
