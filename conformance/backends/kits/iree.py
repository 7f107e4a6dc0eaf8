"""How qdq-conformance's ``iree`` backend runs a model: the torch-mlir ONNX importer shipped with
``iree-base-compiler`` (what ``iree-import-onnx`` runs, after ONNX's shape inference), ``iree-compile`` for
the llvm-cpu target (a generic x86-64 processor) with the flags below, and the runtime's ``local-sync``
driver; arrays go in and come out as raw bytes in a buffer view of the matching element type (float8 and
bfloat16 through their ml_dtypes bytes, int4 / uint4 packed two to a byte, low nibble first, the order IREE's
sub-byte element types use). The backend compiles the cases of a batch as private functions of one module
(the same importer, flags and conversions); this module is its run path, and every ``iree`` repro script
holds it verbatim: it imports nothing but numpy, onnx and IREE."""

import contextlib
import subprocess

import iree.runtime as rt
import numpy as np
import onnx
from iree.compiler.extras import onnx_importer
from iree.compiler.ir import Context, Operation
from iree.compiler.tools.binaries import find_tool
from onnx import helper

#: iree-compile's flags: ONNX input (torch-mlir's conversion), CPU code through LLVM for a generic x86-64
#: processor (the same code on every machine), a flatbuffer module
COMPILE_FLAGS = ("--iree-input-type=onnx", "--iree-hal-target-backends=llvm-cpu",
                 "--iree-llvmcpu-target-cpu=generic",
                 "--iree-vm-bytecode-module-output-format=flatbuffer-binary")
#: ONNX element type name -> HalElementType attribute
HAL_TYPES = {
    "float": "FLOAT_32", "float16": "FLOAT_16", "bfloat16": "BFLOAT_16", "double": "FLOAT_64",
    "int8": "SINT_8", "uint8": "UINT_8", "int16": "SINT_16", "uint16": "UINT_16", "int32": "SINT_32",
    "uint32": "UINT_32", "int64": "SINT_64", "uint64": "UINT_64", "int4": "SINT_4", "uint4": "UINT_4",
    "float8e4m3fn": "FLOAT_8_E4M3_FN", "float8e4m3fnuz": "FLOAT_8_E4M3_FNUZ", "float8e5m2": "FLOAT_8_E5M2",
    "float8e5m2fnuz": "FLOAT_8_E5M2_FNUZ", "bool": "BOOL_8",
}
FOUR_BITS = (onnx.TensorProto.INT4, onnx.TensorProto.UINT4)


def imported(model: onnx.ModelProto, name: str = "main", context: Context | None = None,
             private: bool = False) -> Operation:
    """``model`` as an MLIR module holding one function ``@name`` (after ONNX's shape inference: the importer
    types a node's outputs from the model's value_info)."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    with contextlib.suppress(Exception):  # (an invalid model: the importer says what it makes of it)
        m = onnx.shape_inference.infer_shapes(m)
    m.graph.name = name
    info = onnx_importer.ModelInfo(m)
    module = info.create_module(context=context or Context()).operation
    onnx_importer.NodeImporter.define_function(info.main_graph, module, private=private).import_all()
    module.verify()
    return module


def compile_text(text: str, timeout: float | None = None) -> "subprocess.CompletedProcess[bytes]":
    """``iree-compile`` on a module's text (stdin) to a flatbuffer (stdout)."""
    return subprocess.run([str(find_tool("iree-compile")), "-", *COMPILE_FLAGS, "-o", "-"],
                          input=text.encode(), capture_output=True, timeout=timeout, check=False)


def compiled(model: onnx.ModelProto) -> bytes:
    """``model`` imported as ``@main`` and compiled (RuntimeError with iree-compile's message if it fails)."""
    done = compile_text(imported(model).get_asm())
    if done.returncode:
        raise RuntimeError(f"iree-compile exited with status {done.returncode}: "
                           + done.stderr.decode("utf-8", "replace")[-3000:])
    return done.stdout


def pack4(a: np.ndarray) -> bytes:
    codes = a.reshape(-1).view(np.uint8) & 0x0F
    if codes.size % 2:
        codes = np.append(codes, np.uint8(0))
    return (codes[0::2] | (codes[1::2] << 4)).astype(np.uint8).tobytes()


def unpack4(raw: bytes, count: int, dtype: np.dtype) -> np.ndarray:
    b = np.frombuffer(raw, np.uint8)
    codes = np.empty(b.size * 2, np.uint8)
    codes[0::2], codes[1::2] = b & 0x0F, b >> 4
    return codes[:count].view(dtype)


def to_view(device: rt.HalDevice, array: np.ndarray, elem: int) -> rt.HalBufferView:
    """A buffer view on ``device`` of ``array`` as ONNX element type ``elem`` (KeyError: IREE's runtime has
    no element type for it)."""
    kind = getattr(rt.HalElementType, HAL_TYPES[onnx.TensorProto.DataType.Name(elem).lower()])
    # (keeps a 0-d array 0-d, as ascontiguousarray does not)
    a = np.array(array, dtype=helper.tensor_dtype_to_np_dtype(elem), order="C")
    raw = pack4(a) if elem in FOUR_BITS else a.reshape(-1).view(np.uint8).tobytes()
    usage = rt.BufferUsage.DEFAULT | rt.BufferUsage.MAPPING
    buf = device.allocator.allocate_buffer(rt.MemoryType.DEVICE_LOCAL | rt.MemoryType.HOST_VISIBLE, usage,
                                           max(1, len(raw)))
    if raw:
        mapped = buf.map().asarray([len(raw)], np.dtype(np.uint8))
        mapped[:] = np.frombuffer(raw, np.uint8)
    return rt.HalBufferView(buf, list(a.shape), kind)


def from_view(view: rt.HalBufferView, elem: int) -> np.ndarray:
    """A buffer view's elements as an array of ONNX element type ``elem`` (ml_dtypes for float8, 4-bit)."""
    dtype = np.dtype(helper.tensor_dtype_to_np_dtype(elem))
    shape = list(view.shape)
    count = int(np.prod(shape)) if shape else 1
    raw = bytes(view.map().asarray([view.byte_length], np.dtype(np.uint8)).tobytes())
    if elem in FOUR_BITS:
        return unpack4(raw, count, dtype).reshape(shape)
    return np.frombuffer(raw, np.uint8)[:count * dtype.itemsize].view(dtype).reshape(shape).copy()


def signature(model: onnx.ModelProto) -> tuple[list[tuple[int, list[int]]], list[tuple[int, list[int]]]]:
    """The element types and shapes of a model's inputs (those the importer makes arguments: not the
    initialized ones) and outputs (an unknown dimension counts as 1)."""
    def one(vi: onnx.ValueInfoProto) -> tuple[int, list[int]]:
        tt = vi.type.tensor_type
        return tt.elem_type, [d.dim_value if d.HasField("dim_value") else 1 for d in tt.shape.dim]

    held = {t.name for t in model.graph.initializer}
    return [one(v) for v in model.graph.input if v.name not in held], [one(v) for v in model.graph.output]


def arguments(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """The feeds in the order of the compiled function's arguments: the graph's inputs that are not
    initializers."""
    held = {t.name for t in model.graph.initializer}
    return [np.asarray(feeds[i.name]) for i in model.graph.input if i.name not in held]


def call(vmfb: bytes, model: onnx.ModelProto, feeds: dict[str, np.ndarray],
         function: str = "main") -> list[np.ndarray]:
    """The outputs of ``function`` of the compiled module ``vmfb`` (which holds ``model``) on ``feeds``."""
    config = rt.Config("local-sync")
    module = rt.VmModule.copy_buffer(config.vm_instance, vmfb)
    context = rt.VmContext(config.vm_instance,
                           modules=[rt.create_hal_module(config.vm_instance, config.device), module])
    inputs, outputs = signature(model)
    args = rt.VmVariantList(len(inputs))
    for (elem, _), value in zip(inputs, arguments(model, feeds), strict=True):
        args.push_ref(to_view(config.device, value, elem))
    results = rt.VmVariantList(len(outputs))
    context.invoke(module.lookup_function(function), args, results)
    return [from_view(results.get_as_object(k, rt.HalBufferView), elem)
            for k, (elem, _) in enumerate(outputs)]
