"""``qdq-conformance cases --from-model`` on a 500-node model with several hundred MiB of external weights:
time and peak memory, side by side with ``onnx.load`` of the same model with and without its data.

Builds (once, in the folder given) a model of 500 quantization nodes: 48 per-channel int8 weight
DequantizeLinear nodes over [2560, 2560] weights and 16 blocked int4 ones over [4096, 1024] (block 32), about
350 MiB stored externally, and 218 QuantizeLinear -> DequantizeLinear steps on an activation (uint8, int8 and
int16, zero points zero and not), the first 48 into a Gemm with those weights (transB, per output channel),
the others into a Relu; the blocked weights feed weight-only MatMuls of a float input. Its compute patterns
become graph cases holding a slice of the model's weights, read from the external file. It then measures in
fresh processes (the fastest of ``--repeat``) the command writing its cases into a new folder, and
``onnx.load`` with and without the external data. Target
(issue 40): at most 30 s, and no weight loaded (peak memory far below the weights' size).

    python benchmarks/bench_from_model.py [--dir DIR] [--repeat N]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_checker import measure

WEIGHTS, W_SHAPE = 48, (2560, 2560)
BLOCKED, B_SHAPE, BLOCK = 16, (4096, 1024), 32
STEPS = 218


def build(folder: Path) -> Path:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    path = folder / "big500.onnx"
    data = folder / "big500.bin"
    if path.exists() and data.exists():
        return path
    inits, nodes, outs = [], [], []
    offset = 0
    rng = np.random.default_rng(0)
    with open(data, "wb") as fh:
        def external(name: str, elem: int, dims: tuple[int, ...], nbytes: int) -> TensorProto:
            nonlocal offset
            t = TensorProto(name=name, data_type=elem, dims=list(dims), data_location=TensorProto.EXTERNAL)
            for k, v in (("location", data.name), ("offset", str(offset)), ("length", str(nbytes))):
                t.external_data.add(key=k, value=v)
            fh.write(b"\x11" * nbytes)
            offset += nbytes
            return t

        for k in range(WEIGHTS):  # (each read by the Gemm of step k below)
            inits += [external(f"w{k}", TensorProto.INT8, W_SHAPE, W_SHAPE[0] * W_SHAPE[1]),
                      numpy_helper.from_array(rng.uniform(0.001, 0.02, W_SHAPE[0]).astype(np.float32),
                                              f"ws{k}"),
                      numpy_helper.from_array(np.zeros(W_SHAPE[0], np.int8), f"wz{k}")]
            nodes.append(helper.make_node("DequantizeLinear", [f"w{k}", f"ws{k}", f"wz{k}"], [f"wd{k}"],
                                          name=f"w{k}_dq", axis=0))
        blocks = (B_SHAPE[0] // BLOCK, B_SHAPE[1])
        for k in range(BLOCKED):
            inits += [external(f"b{k}", TensorProto.INT4, B_SHAPE, B_SHAPE[0] * B_SHAPE[1] // 2),
                      numpy_helper.from_array(rng.uniform(-0.02, 0.02, blocks).astype(np.float32), f"bs{k}")]
            nodes += [helper.make_node("DequantizeLinear", [f"b{k}", f"bs{k}"], [f"bd{k}"],
                                       name=f"b{k}_dq", axis=0, block_size=BLOCK),
                      helper.make_node("MatMul", ["xb", f"bd{k}"], [f"bm{k}"], name=f"b{k}_matmul")]
            outs.append(f"bm{k}")
    types = (TensorProto.UINT8, TensorProto.INT8, TensorProto.INT16)
    prev = "x"
    for k in range(STEPS):
        elem = types[k % 3]
        zp = 0 if k % 2 else {TensorProto.UINT8: 128, TensorProto.INT8: -3, TensorProto.INT16: 7}[elem]
        inits += [helper.make_tensor(f"s{k}", TensorProto.FLOAT, [], [0.01 + k * 1e-4]),
                  helper.make_tensor(f"z{k}", elem, [], [zp])]
        nodes += [helper.make_node("QuantizeLinear", [prev, f"s{k}", f"z{k}"], [f"q{k}"], name=f"q{k}"),
                  helper.make_node("DequantizeLinear", [f"q{k}", f"s{k}", f"z{k}"], [f"d{k}"], name=f"dq{k}"),
                  helper.make_node("Gemm", [f"d{k}", f"wd{k}"], [f"r{k}"], name=f"gemm{k}", transB=1)
                  if k < WEIGHTS else helper.make_node("Relu", [f"d{k}"], [f"r{k}"], name=f"relu{k}")]
        prev = f"r{k}"
    outs.append(prev)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", W_SHAPE[1]])
    xb = helper.make_tensor_value_info("xb", TensorProto.FLOAT, ["N", B_SHAPE[0]])
    g = helper.make_graph(nodes, "big500", [x, xb],
                          [helper.make_empty_tensor_value_info(o) for o in outs], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])
    m.ir_version = 10
    onnx.save(m, path)
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path, default=None, help="where to build the model (default: a temporary "
                                                           "folder)")
    ap.add_argument("--repeat", type=int, default=3, metavar="N",
                    help="processes per row, the fastest counts (default: %(default)s)")
    ap.add_argument("--build-only", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.build_only:
        build(args.dir)
        return
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.dir or Path(tmp) / "models"
        folder.mkdir(parents=True, exist_ok=True)
        # built in a child process: the measuring parent stays small
        subprocess.run([sys.executable, __file__, "--build-only", "--dir", str(folder)], check=True)
        model = folder / "big500.onnx"
        size = sum(p.stat().st_size for p in (model, folder / "big500.bin")) / 2**20
        out = Path(tmp) / "cases"
        make = ("import contextlib, io, shutil; from qdq_conformance.frommodel_cmd import make; "
                f"shutil.rmtree({str(out)!r}, ignore_errors=True); "
                "said = io.StringIO(); quiet = contextlib.redirect_stdout(said); quiet.__enter__(); "
                f"status = make([{str(model)!r}], __import__('pathlib').Path({str(out)!r}))[0]; "
                "quiet.__exit__(None, None, None); "
                "assert status == 0 and '500 quantization nodes: 500 in cases' in said.getvalue(), "
                "said.getvalue(); "
                f"doc = __import__('json').loads(open({str(out / 'from-model.json')!r}).read()); "
                "made = {g['family'] for g in doc['graphs'] if g['cases']}; "
                "assert {'graph-compute-matmul', 'graph-compute-float-output'} <= made, made")
        rows = {"cases --from-model": make,
                "onnx.load (with data)": f"import onnx; onnx.load({str(model)!r})",
                "onnx.load (no data)": f"import onnx; onnx.load({str(model)!r}, load_external_data=False)"}
        print(f"model: {WEIGHTS + BLOCKED + 2 * STEPS} quantization nodes, {size:.0f} MiB on disk")
        results = {name: min(measure(code) for _ in range(args.repeat)) for name, code in rows.items()}
        ref = results["onnx.load (with data)"][0]
        for name, (dt, rss) in results.items():
            print(f"  {name:25} {dt:7.2f} s  ({dt / ref:5.2f}x onnx.load with data)  peak RSS {rss:7.0f} MiB")
        print(f"  target: cases --from-model at most 30 s: {results['cases --from-model'][0]:.2f} s")


if __name__ == "__main__":
    main()
