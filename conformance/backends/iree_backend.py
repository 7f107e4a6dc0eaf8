"""IREE (``iree-base-compiler`` + ``iree-base-runtime``, the ``iree`` extra): the torch-mlir ONNX importer
shipped with the compiler, ``iree-compile`` for the llvm-cpu target (a generic x86-64 processor), and the
runtime's ``local-sync`` driver.

IREE compiles every model (about a second each), so the backend compiles the cases it is handed in batches
(``prepare``: the runner's worker gives it each batch of cases before running them one by one; see
``iree_build`` for one module per batch and how a case that fails to compile leaves its batch) and keeps what
it compiled in the cache directory (``$QDQ_CACHE_DIR/iree/``): per model (a hash of the model without its
names), the module and function slot that holds it, or why IREE refused it. A later run compiles nothing it
has seen. ``prepare`` also runs the batch's module once with every case's inputs; ``run`` then hands each case
its own outputs, or runs the case by itself (compiled on its own when no batch held it).

Unsupported or rejected is decided from the importer's and the compiler's messages, by the markers of
:data:`MARKERS` (each tested against the installed IREE in tests/test_iree.py): a refusal a marker matches is
unsupported (the message ends with ``[unsupported: iree says ...]``), anything else is a rejection, which for
a valid model is an error of IREE's.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import TypedDict, cast

import numpy as np
import onnx

from ..cachedir import cache_root
from . import iree_build, kits
from .base import Rejected, Unsupported
from .iree_runtime import Runtime, Signature, signature
from .markers import Marker, MarkerSet

#: Fragments of IREE's messages that mean "not implemented" (the case is unsupported), each tested against the
#: installed IREE (tests/test_iree.py); a whole run reports one that matched no refusal (markers.MarkerWatch).
MARKERS = MarkerSet("iree", (
    Marker("Unknown ONNX tensor element type",
           "the importer has no MLIR type for the element type (float4, float6, float8e8m0, 2-bit)"),
    Marker("failed to legalize operation 'torch.operator'",
           "torch-mlir's ONNX conversion has no pattern for the operator with these types or attributes"),
    Marker("unimplemented:", "a torch-mlir lowering says it is not implemented"),
))

#: seconds one batch may spend compiling in ``prepare`` (under the runner's 60 s per-case time limit)
BATCH_BUDGET = 40.0
#: cases the runner hands a worker at once (each batch one module): fewer costs more of the compiler's fixed
#: second per module, more makes each compile of a batch that holds failing cases longer
BATCH = 96


def versions() -> tuple[str, str]:
    return metadata.version("iree-base-compiler"), metadata.version("iree-base-runtime")


def model_key(model: onnx.ModelProto, version: str) -> str:
    """A hash of the model without its names and documentation (the same node in every case that has it), and
    of the compiler's flags."""
    from .kits import iree as kit  # (the iree extra: the kit imports IREE)

    m = onnx.ModelProto()
    m.CopyFrom(model)
    m.doc_string = m.graph.name = m.graph.doc_string = ""
    for node in m.graph.node:
        node.name = node.doc_string = ""
    h = hashlib.sha256(version.encode() + b"\0" + " ".join(kit.COMPILE_FLAGS).encode() + b"\0")
    h.update(m.SerializeToString(deterministic=True))
    return h.hexdigest()


def args_key(args: Sequence[np.ndarray]) -> str:
    """A hash of a case's arguments (types, shapes and bytes)."""
    h = hashlib.sha256()
    for a in args:
        a = np.ascontiguousarray(a)
        h.update(f"{a.dtype.str}\0{a.shape}\0".encode() + a.view(np.uint8).tobytes())
    return h.hexdigest()


def classify(stage: str, message: str, version: str) -> Exception:
    """A refusal as Unsupported (a marker matches) or Rejected."""
    where = "the ONNX importer" if stage == "import" else "iree-compile"
    reason = MARKERS.reason(f"IREE {version} does not implement this ({where}: {message[:400]})")
    if reason is not None:
        return Unsupported(reason)
    return Rejected(f"IREE {version} refused the model ({where}: {message[:600]})")


def _write(path: Path, data: bytes) -> None:
    """Write atomically (several workers and runs share the cache)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)


#: the layout of the cache's files (a new one starts an empty cache)
CACHE_FORMAT = 1


class CacheEntry(TypedDict, total=False):
    """What the cache knows of one model: the module that holds it and its slot there, or why it was
    refused."""

    module: str
    slot: int
    stage: str
    message: str


class Cache:
    """Compiled modules and per-model verdicts under ``$QDQ_CACHE_DIR/iree/<version>-<format>/``."""

    def __init__(self, version: str) -> None:
        self.root = cache_root() / "iree" / f"{version}-{CACHE_FORMAT}"

    def entry(self, key: str) -> CacheEntry | None:
        try:
            text = (self.root / "models" / key[:2] / f"{key}.json").read_text()
            return cast(CacheEntry, dict(json.loads(text)))
        except (OSError, ValueError):
            return None

    def put_entry(self, key: str, entry: CacheEntry) -> None:
        _write(self.root / "models" / key[:2] / f"{key}.json", json.dumps(entry).encode())

    def module(self, key: str) -> tuple[bytes, list[Signature]] | None:
        try:
            meta = json.loads((self.root / "modules" / f"{key}.json").read_text())
            return (self.root / "modules" / f"{key}.vmfb").read_bytes(), [tuple(s)
                                                                          for s in meta["signatures"]]
        except (OSError, ValueError, KeyError):
            return None

    def put_module(self, key: str, data: bytes, signatures: list[Signature]) -> None:
        _write(self.root / "modules" / f"{key}.vmfb", data)  # (before its description: readers need both)
        _write(self.root / "modules" / f"{key}.json", json.dumps({"signatures": signatures}).encode())


class IreeBackend:
    name = "iree"
    batch = BATCH

    def __init__(self) -> None:
        from .kits import iree as kit  # (the iree extra: both halves must be installed; the kit imports them)

        self.kit = kit

        compiler, runtime = versions()
        self.version = compiler if compiler == runtime else f"{compiler}+runtime{runtime}"
        # a compiler that saves its temporaries (IREE_SAVE_TEMPS) would write every batch's files; never here
        os.environ.pop("IREE_SAVE_TEMPS", None)
        self.cache = Cache(self.version)
        self._runtime: Runtime | None = None
        self._modules: dict[str, tuple[bytes, list[Signature]]] = {}
        self._done: dict[tuple[str, str], list[np.ndarray]] = {}  # outputs of prepared cases, until run
        self.stats = {"compiles": 0, "compile_s": 0.0, "batch_calls": 0}

    @property
    def runtime(self) -> Runtime:
        if self._runtime is None:
            self._runtime = Runtime()
        return self._runtime

    def _module(self, key: str) -> tuple[bytes, list[Signature]] | None:
        got = self._modules.get(key)
        if got is None:
            got = self.cache.module(key)
            if got is not None:
                self._modules = {key: got}  # (one at a time: modules are read back in batch order)
        return got

    def prepare(self, items: Sequence[tuple[onnx.ModelProto, Mapping[str, np.ndarray]]],
                budget: float = BATCH_BUDGET) -> None:
        """Compile the models of a batch of cases that the cache does not know yet (one module), then run each
        module involved once with the cases' inputs; ``run`` hands out the outputs."""
        t0 = time.monotonic()
        keys = [model_key(m, self.version) for m, _ in items]
        entries = {k: self.cache.entry(k) for k in set(keys)}
        fresh: dict[str, onnx.ModelProto] = {}
        for k, (m, _) in zip(keys, items, strict=True):
            if entries[k] is None:
                fresh.setdefault(k, m)
        if fresh:
            self._compile(fresh, entries, budget - (time.monotonic() - t0))
        calls: dict[str, list[tuple[int, str, list[np.ndarray]]]] = {}
        for k, (m, feeds) in zip(keys, items, strict=True):
            entry = entries.get(k)
            if entry is not None and "module" in entry:
                args = self.kit.arguments(m, dict(feeds))
                calls.setdefault(entry["module"], []).append((entry["slot"], k, args))
        for module_key, wanted in calls.items():
            self._call_batch(module_key, wanted)

    def _compile(self, fresh: dict[str, onnx.ModelProto], entries: dict[str, CacheEntry | None],
                 budget: float) -> None:
        keys = list(fresh)
        slots, refused = iree_build.import_slots([fresh[k] for k in keys])
        built = iree_build.compile_batch(list(slots.values()), budget)
        self.stats["compiles"] += built.compiles
        self.stats["compile_s"] += built.seconds
        for index, why in {**refused, **built.refused}.items():
            if why.stage == "budget":  # (not a verdict: the case is compiled when it runs)
                continue
            refusal: CacheEntry = {"stage": why.stage, "message": why.message}
            entries[keys[index]] = refusal
            self.cache.put_entry(keys[index], refusal)
        for data, positions in built.modules:
            sigs = [signature(fresh[keys[p]]) for p in positions]
            module_key = hashlib.sha256("".join(keys[p] for p in positions).encode()).hexdigest()
            self.cache.put_module(module_key, data, sigs)
            self._modules = {module_key: (data, sigs)}
            for slot, p in enumerate(positions):
                held: CacheEntry = {"module": module_key, "slot": slot}
                entries[keys[p]] = held
                self.cache.put_entry(keys[p], held)

    def _call_batch(self, module_key: str, wanted: list[tuple[int, str, list[np.ndarray]]]) -> None:
        """Run a module with the inputs of the cases it holds, as few times as cases share a slot."""
        got = self._module(module_key)
        if got is None:
            return
        data, sigs = got
        while wanted:
            this: dict[int, tuple[str, list[np.ndarray]]] = {}
            rest = []
            for slot, k, args in wanted:
                if slot in this:
                    rest.append((slot, k, args))
                else:
                    this[slot] = (k, args)
            wanted = rest
            try:
                outs = self.runtime.call(module_key, data, sigs, {s: args for s, (_, args) in this.items()})
            except Exception:  # noqa: BLE001 - each case then runs on its own in run(), which says what failed
                continue
            self.stats["batch_calls"] += 1
            for s, (k, args) in this.items():
                self._done[(k, args_key(args))] = outs[s]

    def run(self, model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        key = model_key(model, self.version)
        args = self.kit.arguments(model, dict(feeds))
        done = self._done.pop((key, args_key(args)), None)
        if done is not None:
            return done
        entry = self.cache.entry(key)
        if entry is None:
            self.prepare([(model, feeds)], budget=3600.0)
            done = self._done.pop((key, args_key(args)), None)
            if done is not None:
                return done
            entry = self.cache.entry(key)
        if entry is None:
            raise RuntimeError("the model was neither compiled nor refused")
        if "module" not in entry:
            raise classify(entry["stage"], entry["message"], self.version)
        got = self._module(entry["module"])
        if got is None:
            raise RuntimeError(f"the cached module {entry['module']} cannot be read")
        data, sigs = got
        slot = entry["slot"]
        return self.runtime.call(entry["module"], data, sigs, {slot: args})[slot]

    def repro(self, model_code: str, output_names: list[str]) -> str:
        # (the case compiled on its own, as a public @main: the batch's functions are the same import, flags
        # and conversions)
        return kits.script(self.kit, model_code, ["outputs = call(compiled(model), model, feeds)"],
                           output_names)
