"""The exported suite's layout: which kind folder a case goes to, and what each case folder holds.

    DIR/README.md, DIR/LICENSE, DIR/manifest.json
    DIR/normative/test_<id>[_initializer]/model.onnx, data.json, test_data_set_0/input_K.pb, output_K.pb
        [, bounds/low_K.pb, bounds/high_K.pb]
    DIR/implementation-defined/test_<id>[_initializer]/model.onnx, test_data_set_0/input_K.pb,
        expected/output_K.pb, readings/R/output_K.pb [, readings/R/judged_K.pb]
    DIR/invalid/test_<id>[_initializer]/model.onnx, test_data_set_0/input_K.pb

Each kind folder is a ``kind`` of ONNX's backend-test loader (``load_model_tests(data_dir=DIR, kind=...)``).
``normative`` is the one an output-comparing runner (ONNX's ``onnx.backend.test.runner.Runner``, ONNX
Runtime's ``onnx_test_runner``) judges right: every folder's ``data.json`` gives the loader rtol 0 and atol 0
(a case with a ULP bound: the smallest rtol that holds it,
:func:`qdq_conformance.compare.relative_tolerance`). The other two kinds hold no ``output_K.pb`` in their data
set, so such a runner can never count one as a pass (it finds fewer outputs than the model has): an invalid
case passes only when the backend rejects the model, an implementation-defined one when its answer matches one
of the catalogued readings under ``readings/`` (R is the reading's index in the case's ``readings`` list in
``manifest.json``; ``judged_K.pb``, a bool tensor, marks the elements a reading constrains when it leaves
others free). ``expected/`` holds the reference kernel's answer. A normative case of the ``interval`` rule (a
graph case around a compute op) also holds ``bounds/low_K.pb`` and ``bounds/high_K.pb`` for each output with
more than one acceptable value: every element's lowest and highest; its ``output_K.pb`` is one acceptable
answer, which is all ONNX's runner can compare with (``onnx_runner_blind_to`` says so). ``qdq-conformance run
--suite DIR`` reads all of it (``runner/suite.py``).

This module is the one place that knows the layout; the manifest (``export.py``) records, for every case, its
kind, its folder per graph form, its tolerance and its readings, so a reader needs nothing but the manifest.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol, TypedDict

import numpy as np
import onnx
from onnx import numpy_helper

from qdq_conformance.compare import relative_tolerance
from qdq_conformance.domain import CaseMetadata, CaseStatus, Form
from qdq_conformance.types import by_dtype, from_tensor_proto, to_tensor_proto

from .case import ConcreteCase, TemplateMetadata

#: the kind folders, what each holds, and how an output-comparing runner must treat it (manifest's ``kinds``)
KINDS: dict[str, dict[str, str]] = {
    CaseStatus.NORMATIVE.value: {
        "holds": "cases whose answer the spec decides: outputs compared bit for bit (NaN matches any NaN), "
                 "or within the ULP bound the case states",
        "onnx_runner": "run it: each folder's data.json sets rtol and atol (0 and 0 for an exact case)"},
    CaseStatus.IMPLEMENTATION_DEFINED.value: {
        "holds": "cases whose answer depends on an entry of the ambiguity catalogue: a backend conforms when "
                 "its outputs match one of the catalogued readings (readings/R/output_K.pb)",
        "onnx_runner": "do not run it as output tests: the data sets hold no outputs, so every case fails "
                       "there; judge it with qdq-conformance run --suite or against readings/"},
    CaseStatus.INVALID.value: {
        "holds": "models the spec forbids: a backend conforms when it rejects the model (at load or at run "
                 "time); the rule each breaks is the case's 'rule' in manifest.json",
        "onnx_runner": "do not run it as output tests: a rejection is the pass, which an output-comparing "
                       "runner counts as an error; the data sets hold no outputs"},
}
DATA_SET = "test_data_set_0"
MANIFEST = "manifest.json"
MODEL = "model.onnx"
EXPECTED = "expected"
READINGS = "readings"
BOUNDS = "bounds"
#: a case folder's path inside the suite, as the manifest records it
FOLDER = re.compile("(?:" + "|".join(re.escape(k) for k in KINDS) + r")/test_[a-z0-9][a-z0-9_-]*")


class Selection(TypedDict, total=False):
    """What a suite was made of: the case-id patterns and tiers asked for, and whether it holds every case of
    the corpus it was made from."""

    patterns: list[str]
    tiers: list[str]
    complete: bool


class GeneratedWith(TypedDict):
    python: str
    numpy: str
    platform: str


class ManifestEntry(CaseMetadata, total=False):
    """One case of a suite's manifest: its metadata, kind, folder per graph form, tolerance, readings' folders
    and what ONNX's own test runner cannot see of it."""

    kind: str
    folders: dict[str, str]  # graph form -> the case's folder
    tolerance: dict[str, float] | None
    reading_files: list[dict[str, Any]]
    onnx_runner_blind_to: list[str]
    bound_files: list[dict[str, str] | None]  # an interval case: per output its low and high files, or None


class Manifest(TypedDict, total=False):
    """A suite's ``manifest.json``: what the suite is and was made from, which folder is which, every case."""

    manifest_version: int
    suite: str
    suite_version: str
    onnx_version: str
    corpus_sha256: str
    generated_with: GeneratedWith
    forms: list[str]
    selection: Selection
    kinds: dict[str, dict[str, str | int]]  # kind -> its folder, description and number of cases
    files: list[str]
    case_count: int
    templates: dict[str, TemplateMetadata]
    cases: list[ManifestEntry]


def input_file(k: int) -> str:
    """The file of the model's k-th graph input in a data set (ONNX's backend-test layout)."""
    return f"input_{k}.pb"


def bound_file(end: str, k: int) -> str:
    """The file of the K-th output's ``low`` or ``high`` end under ``bounds/`` (an ``interval`` case)."""
    return f"{BOUNDS}/{end}_{k}.pb"


def bound_files(case: ConcreteCase) -> list[dict[str, str] | None]:
    """The manifest's ``bound_files``: per output, its low and high files (None: the output is exact); [] for
    a case that is not of the ``interval`` rule."""
    bounds = case.output_bounds()
    if bounds is None or case.status != CaseStatus.NORMATIVE:
        return []
    return [None if b is None else {"low": bound_file("low", k), "high": bound_file("high", k)}
            for k, b in enumerate(bounds)]


def output_file(k: int) -> str:
    """The file of the model's k-th graph output in a data set (or in ``expected/``, ``readings/R/``)."""
    return f"output_{k}.pb"


def read_tensor(path: str | os.PathLike[str]) -> np.ndarray:
    """A TensorProto file of the layout as an array of its element type."""
    with open(path, "rb") as fh:
        return tensor_of(fh.read())


def tensor_of(data: bytes) -> np.ndarray:
    """A TensorProto file's bytes as an array of its element type."""
    t = onnx.TensorProto()
    t.ParseFromString(data)
    return from_tensor_proto(t)


def kind_of(case: ConcreteCase) -> str:
    """The kind folder of a case: its status."""
    return CaseStatus(case.status).value


def test_name(case: ConcreteCase, form: str) -> str:
    """The name of the case's folder in ``form``: ``test_<id>[_<form>]`` (ONNX's loader names a test after
    it)."""
    return f"test_{case.id}" if form == Form.RUNTIME else f"test_{case.id}_{form}"


def folder_name(case: ConcreteCase, form: str) -> str:
    """The case's folder in ``form``, relative to the suite: ``KIND/test_<id>[_<form>]``."""
    return f"{kind_of(case)}/{test_name(case, form)}"


def tolerance(case: ConcreteCase) -> dict[str, float] | None:
    """What a normative case's data.json tells ONNX's loader (None for the other kinds, which hold no
    outputs)."""
    if case.status != CaseStatus.NORMATIVE or case.expected is None:
        return None
    rtol, atol = relative_tolerance(case.expected, case.ulp)
    return {"rtol": rtol, "atol": atol}


def onnx_runner_blind_to(case: ConcreteCase) -> list[str]:
    """What ONNX's backend-test runner cannot see in a normative case's outputs, even at rtol 0 and atol 0
    (``numpy.testing.assert_allclose``): the sign of a zero (an expected float zero), and a difference within
    two bfloat16 ULPs (the runner raises rtol to 2**-6 for bfloat16 outputs)."""
    if case.status != CaseStatus.NORMATIVE or case.expected is None:
        return []
    blind = []
    if case.output_bounds() is not None:
        blind.append("interval (output_K.pb is one acceptable answer; bounds/ holds every element's lowest "
                     "and highest: only qdq-conformance run --suite judges the set)")
    floats = [e for e in case.expected if by_dtype(e.dtype).is_float]
    if any(np.any(e.astype(np.float32) == 0) for e in floats):
        blind.append("signed zero")
    if any(by_dtype(e.dtype).name == "bfloat16" for e in floats):
        blind.append("bfloat16 within 2 ULP")
    return blind


def reading_files(case: ConcreteCase) -> list[dict[str, Any]]:
    """The manifest's description of an implementation-defined case's readings: entry, reading, and the folder
    of its outputs inside the case folder (None: the reading rejects the model), in the order the runner tries
    them (the kernel's first)."""
    return [{"ambiguity": r.ambiguity, "name": r.name,
             "outputs": None if r.outputs is None else f"{READINGS}/{k}",
             "judged": None if r.outputs is None or r.judged is None else [m is not None for m in r.judged]}
            for k, r in enumerate(case.readings)]


class Sink(Protocol):
    """Where a suite's files go: a folder (:class:`Files`) or an archive's part
    (``suite_archive.PartWriter``). Paths are ``/``-separated; a folder comes before the files in it."""

    def folder(self, path: str) -> None: ...

    def write(self, path: str, data: bytes) -> None: ...


class Files:
    """Writes a suite's files into a folder, each distinct content once: a file whose bytes an earlier one of
    this writer holds becomes a hard link to it. The default tier's export is ~412,000 files of ~123,000
    distinct contents (the same scale, zero point, data.json in thousands of cases), and on a journaling file
    system creating a file (an inode) costs many times what linking one does (measured on this project's
    shared ext4 machine: 0.35-0.8 ms against 0.015 ms of CPU). Where links cannot be made (a file system
    without them, a file at its link limit), the file is written, and becomes the one later copies link to.
    Paths are plain strings: pathlib cost a fifth of the writing."""

    def __init__(self) -> None:
        self._first: dict[bytes, str] = {}

    def folder(self, path: str) -> None:
        os.mkdir(path)

    def write(self, path: str, data: bytes) -> None:
        key = hashlib.sha256(data).digest()
        first = self._first.get(key)
        if first is not None:
            try:
                os.link(first, path)
                return
            except OSError:
                pass
        with open(path, "wb") as fh:
            fh.write(data)
        self._first[key] = path


def _tensor(array: np.ndarray, name: str) -> bytes:
    """A tensor file's bytes. Most are made before: the same scale, zero point or input in many cases (the
    default export's 240,000 tensor files hold 44,000 contents), and a TensorProto costs 50 us to build."""
    array = np.asarray(array)
    return _serialized(name, array.dtype.name, array.dtype, array.shape, array.tobytes())


@lru_cache(maxsize=8192)
def _serialized(name: str, dtype_name: str, dtype: np.dtype, shape: tuple[int, ...], data: bytes) -> bytes:
    array = np.frombuffer(data, dtype=dtype).reshape(shape)
    return to_tensor_proto(array, name).SerializeToString(deterministic=True)


@lru_cache(maxsize=64)
def _data_json(rtol: float, atol: float) -> bytes:
    return (json.dumps({"atol": atol, "rtol": rtol}, sort_keys=True) + "\n").encode()


def _outputs(files: Sink, folder: str, names: Sequence[str], values: Sequence[np.ndarray]) -> None:
    for k, (name, value) in enumerate(zip(names, values, strict=True)):
        files.write(f"{folder}/{output_file(k)}", _tensor(value, name))


def write_case(root: str | Path, case: ConcreteCase, form: str, files: Sink | None = None) -> str:
    """Write one case in one graph form under ``root``; return its folder (relative to ``root``). The kind
    folder must exist (:func:`make_kind_folders`); ``files``: the writer of the other cases of the suite (a
    folder's by default)."""
    name = folder_name(case, form)
    if not FOLDER.fullmatch(name):  # ids are a-z, 0-9 and '-' (limits.py); never write outside the root
        raise ValueError(f"case id {case.id[:80]!r} does not name a folder inside {root}")
    write_folder(f"{os.fspath(root)}/{name}", case, form, files)
    return name


def write_folder(folder: str | Path, case: ConcreteCase, form: str, files: Sink | None = None) -> None:
    """Make ``folder`` (its parent must exist) and write the case's files in ``form`` into it."""
    files = files if files is not None else Files()
    folder = os.fspath(folder)
    data_dir = f"{folder}/{DATA_SET}"
    files.folder(folder)
    files.folder(data_dir)
    model = case.model(form)
    files.write(f"{folder}/{MODEL}", model.SerializeToString(deterministic=True))
    feeds = case.feeds(form)
    for k, inp in enumerate(model.graph.input):
        files.write(f"{data_dir}/{input_file(k)}", _tensor(feeds[inp.name], inp.name))
    tol = tolerance(case)
    if tol is not None:
        assert case.expected is not None
        _outputs(files, data_dir, case.output_names, case.expected)
        files.write(f"{folder}/data.json", _data_json(tol["rtol"], tol["atol"]))
        bounds = case.output_bounds() or []
        if any(b is not None for b in bounds):
            files.folder(f"{folder}/{BOUNDS}")
        for k, b in enumerate(bounds):
            if b is not None:
                name = case.output_names[k]
                files.write(f"{folder}/{bound_file('low', k)}", _tensor(b[0], f"{name}_low"))
                files.write(f"{folder}/{bound_file('high', k)}", _tensor(b[1], f"{name}_high"))
    elif case.status == CaseStatus.IMPLEMENTATION_DEFINED:
        assert case.expected is not None
        files.folder(f"{folder}/{EXPECTED}")
        _outputs(files, f"{folder}/{EXPECTED}", case.output_names, case.expected)
        files.folder(f"{folder}/{READINGS}")
        for k, r in enumerate(case.readings):
            if r.outputs is None:
                continue
            where = f"{folder}/{READINGS}/{k}"
            files.folder(where)
            _outputs(files, where, case.output_names, r.outputs)
            for j, mask in enumerate(r.judged or ()):
                if mask is not None:
                    files.write(f"{where}/judged_{j}.pb", numpy_helper.from_array(
                        np.asarray(mask, dtype=bool), f"judged_{j}").SerializeToString(deterministic=True))


def make_kind_folders(root: Path) -> None:
    for kind in KINDS:
        (root / kind).mkdir(parents=True, exist_ok=True)
