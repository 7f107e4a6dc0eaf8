"""Reference-kernel speed and memory, measured side by side with ONNX Runtime (1 intra-op thread) and
onnx.reference in one run.

16M float32 elements quantized to uint8 (per-tensor and per-axis) and the same uint8 tensor dequantized with
the same parameters (and once more per-tensor with a zero point of 0).
Prints, per workload, the best of N runs for each engine, the kernel's time as a ratio to ORT and to
onnx.reference, and the kernel's peak traced memory as a multiple of the input size. ``alloc/ref`` is the time
of only allocating the kernel's output and touching each of its pages (the operating system zeroes them),
timed in the same rounds: a floor that no numpy kernel, which must return a new array, goes under.
Targets (issue 2): kernel <= 3x ORT, kernel <= 1/3 of onnx.reference, peak memory <= 3x the input.

    python benchmarks/bench_kernel.py [--elements N] [--repeat R]
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
import warnings
from functools import partial

import numpy as np
from onnx import TensorProto
from onnx.reference import ReferenceEvaluator

from qdq_conformance.backends.kits.ort import session
from qdq_conformance.modelbuild import single_node_model
from qdq_conformance.reference import run


def _time_interleaved(fns, repeat):
    """Best time of each function, running them in turn in every round so that drift hits all alike."""
    best = [float("inf")] * len(fns)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            t0 = time.perf_counter()
            fn()
            best[i] = min(best[i], time.perf_counter() - t0)
    return best


def _peak(fn):
    tracemalloc.start()
    tracemalloc.reset_peak()
    fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak


def _allocate_output(shape, dtype):
    out = np.empty(shape, dtype)
    out.reshape(-1)[:: 4096 // out.itemsize] = 0
    return out


def workloads(n):
    rng = np.random.default_rng(0)
    channels = 64
    x = rng.standard_normal((n // channels // 64, channels, 64)).astype(np.float32) * 40
    q8 = rng.integers(0, 256, size=x.shape).astype(np.uint8)
    yield ("quantize per-tensor", "QuantizeLinear", [("x", x), ("s", np.array(0.5, np.float32)),
                                                     ("z", np.array(128, np.uint8))], TensorProto.UINT8, {})
    yield ("quantize per-axis", "QuantizeLinear",
           [("x", x), ("s", rng.uniform(0.1, 1, channels).astype(np.float32)),
            ("z", rng.integers(0, 256, channels).astype(np.uint8))], TensorProto.UINT8, {"axis": 1})
    yield ("dequantize per-tensor", "DequantizeLinear", [("x", q8), ("s", np.array(0.5, np.float32)),
                                                         ("z", np.array(128, np.uint8))], TensorProto.FLOAT,
           {})
    # Symmetric quantization's zero point, which the kernel dequantizes without a subtraction pass.
    yield ("dequantize per-tensor z0", "DequantizeLinear", [("x", q8), ("s", np.array(0.5, np.float32)),
                                                            ("z", np.array(0, np.uint8))], TensorProto.FLOAT,
           {})
    yield ("dequantize per-axis", "DequantizeLinear",
           [("x", q8), ("s", rng.uniform(0.1, 1, channels).astype(np.float32)),
            ("z", rng.integers(0, 256, channels).astype(np.uint8))], TensorProto.FLOAT, {"axis": 1})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--elements", type=int, default=16 * 2**20)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    print(f"{args.elements:,} elements, best of {args.repeat} runs")
    print(f"{'workload':24} {'kernel s':>9} {'ORT-1t s':>9} {'onnxref s':>9} {'k/ORT':>7} {'k/ref':>7} "
          f"{'peak/f32':>8} {'alloc/ref':>9}")
    for label, op, inputs, out_type, attrs in workloads(args.elements):
        model = single_node_model("ai.onnx", op, 21, inputs, [("y", out_type, None)], attrs)
        feeds = dict(inputs)
        sess = session(model, threads=1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = ReferenceEvaluator(model)
        out_dtype = np.float32 if out_type == TensorProto.FLOAT else np.uint8
        ours, ort_t, ref_t, alloc_t = _time_interleaved(
            [partial(run, model, feeds), partial(sess.run, None, feeds), partial(ref.run, None, feeds),
             partial(_allocate_output, inputs[0][1].shape, out_dtype)], args.repeat)
        peak = _peak(partial(run, model, feeds))
        # Memory relative to the float32 tensor (the input of Q, the output of DQ): DQ must allocate its
        # own float32 output, 4x its uint8 input, so the float tensor is the meaningful unit for both.
        in_bytes = args.elements * 4
        print(f"{label:24} {ours:9.4f} {ort_t:9.4f} {ref_t:9.4f} {ours / ort_t:7.2f} {ours / ref_t:7.2f} "
              f"{peak / in_bytes:8.2f} {alloc_t / ref_t:9.2f}")


if __name__ == "__main__":
    main()
