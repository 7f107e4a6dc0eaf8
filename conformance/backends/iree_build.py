"""IREE's half of the ``iree`` backend that turns ONNX models into one compiled module: the torch-mlir ONNX
importer shipped with ``iree-base-compiler`` (``iree.compiler.extras.onnx_importer``, what
``iree-import-onnx`` runs) and ``iree-compile`` for the llvm-cpu target.

Compiling one model costs about a second (0.5-0.6 s of processor time, most of it fixed), and most of a bigger
module's cost is per *public* function (each gets ABI wrappers and host code that module-wide passes walk
again and again). So a batch of models is imported as private functions (``@c0``, ``@c1``, ...) called by one
public function, ``@batch``, that takes every model's inputs and returns every model's outputs; the inliner
folds them into one host function (measured on 136 cases: 15 s of processor time as 136 public functions, 4 s
as one).

A model that fails to compile must not sink its batch. ``iree-compile`` reports an error at the line of the
operation it failed on, so the error names its case (the private function around that line): that case is
refused with the message and the batch is compiled again without it. An error no line names (a crash of the
compiler, a time-out) splits the batch in two, down to the single case that causes it.
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import onnx

#: rounds of "drop the cases the errors name, compile again" before a batch is split in two instead
MAX_ROUNDS = 6

_ERROR_LINE = re.compile(r"^<stdin>:(\d+):\d+: error: (.*)$", re.MULTILINE)
_FUNC_LINE = re.compile(r"^  func\.func private @c(\d+)\(")


@dataclass
class Refusal:
    """Why one model did not become a function of a module: ``stage`` import or compile, the tool's
    message."""

    stage: str
    message: str


@dataclass
class Slot:
    """One model as a function of the batch: its private function's name and the types of its inputs and
    outputs (as MLIR spells them)."""

    index: int  # its position in the batch given to ``compile_batch``
    inputs: list[str]
    outputs: list[str]
    text: str  # the private function
    kinds: tuple[int, ...] = ()  # the element type of its first input (cases alike fail alike)
    resources: list[str] = field(default_factory=list)  # its constants' blobs (``name: "0x..."``)


@dataclass
class Built:
    """What became of a batch: the compiled modules (one, or more when a batch was split), each with the batch
    positions of its slots in the order of ``@batch``'s arguments and results, and the refusals by
    position."""

    modules: list[tuple[bytes, list[int]]] = field(default_factory=list)
    refused: dict[int, Refusal] = field(default_factory=dict)
    compiles: int = 0
    seconds: float = 0.0


def import_slots(models: Sequence[onnx.ModelProto]) -> tuple[dict[int, Slot], dict[int, Refusal]]:
    """Each model as a private function ``@cK`` (K its position), or why the importer refused it (the kit's
    importer, as a repro script runs it)."""
    from .kits import iree as kit  # (the iree extra: the kit imports IREE)

    context = kit.Context()
    slots: dict[int, Slot] = {}
    refused: dict[int, Refusal] = {}
    for k, model in enumerate(models):
        try:
            module = kit.imported(model, f"c{k}", context, private=True)
            func = module.regions[0].blocks[0].operations[0]
            ftype = func.attributes["function_type"].value
            text = module.get_asm()
        except Exception as e:  # noqa: BLE001 - the importer raises OnnxImportError, KeyError, ValueError ...
            refused[k] = Refusal("import", f"{type(e).__name__}: {e}")
            continue
        try:
            body, resources = split_module(text)
        except ValueError as e:
            refused[k] = Refusal("import", str(e))
            continue
        kinds = tuple(v.type.tensor_type.elem_type for v in model.graph.input[:1])
        slots[k] = Slot(k, [str(t) for t in ftype.inputs], [str(t) for t in ftype.results], body, kinds,
                        resources)
    return slots, refused


_RESOURCE = re.compile(r'^\s+([\w.$-]+): ("0x[0-9A-Fa-f]*"),?$')


def split_module(text: str) -> tuple[str, list[str]]:
    """An imported module's text as the function inside ``module { ... }`` and the blobs of its constants:
    the importer turns a model's initializers into ``dense_resource<name>`` constants whose bytes follow the
    module in a ``{-# dialect_resources: {builtin: {name: "0x..."}} #-}`` section (names unique within one
    MLIR context, so the slots of one batch can share one section)."""
    head, sep, tail = text.partition("\n{-#")
    lines = head.strip().splitlines()
    if not lines or lines[0] != "module {" or lines[-1] != "}":
        raise ValueError("the importer's module is not one function in 'module { ... }'")
    resources: list[str] = []
    if sep:
        for line in tail.splitlines():
            m = _RESOURCE.match(line)
            if m:
                resources.append(f"{m.group(1)}: {m.group(2)}")
            elif line.strip() not in ("", "dialect_resources: {", "builtin: {", "}", "#-}"):
                raise ValueError("the importer's module has a resource the batch cannot hold: "
                                 f"{line.strip()[:80]}")
    return "\n".join(lines[1:-1]), resources


def module_text(slots: Sequence[Slot]) -> str:
    """The MLIR module: every slot's private function and ``@batch`` calling each in turn."""
    lines = ["module {"]
    args: list[str] = []
    calls: list[str] = []
    results: list[str] = []
    types: list[str] = []
    n = 0
    for s in slots:
        lines.append(s.text)
        names = [f"%a{n + i}" for i in range(len(s.inputs))]
        n += len(s.inputs)
        args += [f"{a}: {t}" for a, t in zip(names, s.inputs, strict=True)]
        outs = [f"%r{s.index}_{i}" for i in range(len(s.outputs))]
        rtype = f"({', '.join(s.outputs)})" if len(s.outputs) != 1 else s.outputs[0]
        if outs:
            calls.append(f"    {', '.join(outs)} = func.call @c{s.index}({', '.join(names)}) : "
                         f"({', '.join(s.inputs)}) -> {rtype}")
        results += outs
        types += s.outputs
    lines.append(f"  func.func @batch({', '.join(args)}) -> ({', '.join(types)}) attributes "
                 "{torch.onnx_meta.opset_version = 21 : si64} {")  # (no ONNX operation of its own)
    lines += calls
    lines.append(f"    return {', '.join(results)} : {', '.join(types)}" if results else "    return")
    lines += ["  }", "}", ""]
    blobs = [r for s in slots for r in s.resources]
    if blobs:  # (after the module: the functions' line numbers, which name a failing case, stay as they are)
        lines += ["{-#", "  dialect_resources: {", "    builtin: {", ",\n".join(f"      {b}" for b in blobs),
                  "    }", "  }", "#-}", ""]
    return "\n".join(lines)


def _owners(text: str, stderr: str) -> dict[int, str]:
    """The slots an error message names (by the line it points at), with the first error said of each."""
    starts: list[tuple[int, int]] = []
    for number, line in enumerate(text.splitlines(), 1):
        m = _FUNC_LINE.match(line)
        if m:
            starts.append((number, int(m.group(1))))
    out: dict[int, str] = {}
    for line, message in _ERROR_LINE.findall(stderr):
        owner = None
        for start, index in starts:
            if start > int(line):
                break
            owner = index
        if owner is not None and owner not in out:
            out[owner] = message.strip()
    return out


def _tail(stderr: str) -> str:
    lines = [ln for ln in stderr.strip().splitlines()
             if ln.strip() and not ln.startswith(("Stack dump", " #", "0."))]
    return " / ".join(lines[:3])[:500]


Compiler = Callable[[str, float], "subprocess.CompletedProcess[bytes]"]


def run_compiler(text: str, timeout: float) -> subprocess.CompletedProcess[bytes]:
    """``iree-compile`` on a module's text (stdin) to a flatbuffer (stdout), in this process's group, with the
    kit's flags."""
    from .kits import iree as kit  # (the iree extra)

    return kit.compile_text(text, timeout)


def compile_batch(slots: Sequence[Slot], budget: float, compiler: Compiler = run_compiler) -> Built:
    """Compile ``slots`` into one module, leaving out (and refusing) the ones the compiler fails on;
    ``budget``: seconds this may take in all (what is left when it runs out is refused with stage "budget",
    not compiled)."""
    t0 = time.monotonic()
    built = Built()
    todo: list[list[Slot]] = [list(slots)]
    while todo:
        group = todo.pop()
        rounds = 0
        while group:
            left = budget - (time.monotonic() - t0)
            if left <= 1:
                for s in group:
                    built.refused[s.index] = Refusal("budget", "not compiled: the batch's time ran out")
                group = []
                break
            text = module_text(group)
            built.compiles += 1
            try:
                done = compiler(text, left)
            except subprocess.TimeoutExpired:
                done = None
            if done is not None and done.returncode == 0:
                built.modules.append((done.stdout, [s.index for s in group]))
                group = []
                break
            stderr = done.stderr.decode("utf-8", "replace") if done is not None else ""
            named = _owners(text, stderr) if done is not None else {}
            rounds += 1
            if named and rounds <= MAX_ROUNDS:
                for index, message in named.items():
                    built.refused[index] = Refusal("compile", message)
                # the compiler stops at the first pass that fails (its verifier at the first operation): cases
                # whose first input has the element type of one named are likely next, so they go on as a
                # group of their own
                failing = {s.kinds for s in group if s.index in named}
                suspects = [s for s in group if s.index not in named and s.kinds in failing]
                group = [s for s in group if s.index not in named and s.kinds not in failing]
                if suspects:
                    todo.append(suspects)
                continue
            if len(group) == 1:
                why = "timed out" if done is None else \
                    f"exited with status {done.returncode}" + (f": {_tail(stderr)}" if _tail(stderr) else "")
                built.refused[group[0].index] = Refusal("compile", f"iree-compile {why}")
                group = []
                break
            half = len(group) // 2
            todo += [group[half:], group[:half]]
            group = []
    built.seconds = time.monotonic() - t0
    return built
