"""Checking a 1 GB model with external data: time and peak memory, side by side with loading it.

Builds (once, cached in the folder given) a model of 16 DequantizeLinear nodes over 64 MiB int8 weights stored
externally (1 GiB in all), per-channel scales and zero points, then measures in fresh processes: the checker
(``check_file``), ``onnx.load`` of the model with its external data, and ``onnx.load`` without it. Target
(issue 6): seconds, and no tensor data loaded beyond what rules need (peak memory far below 1 GiB).

    python benchmarks/bench_checker.py [--dir DIR]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

N, ROWS, COLS = 16, 8192, 8192


def build(folder: Path) -> Path:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    path = folder / "big.onnx"
    if path.exists() and (folder / "big.bin").exists() and (folder / "big.bin").stat().st_size >= N * ROWS * COLS:
        return path
    inits, nodes, outs = [], [], []
    w = np.ones((ROWS, COLS), np.int8)
    for k in range(N):
        inits += [numpy_helper.from_array(w, f"w{k}"), numpy_helper.from_array(np.full(COLS, 0.01, np.float32), f"s{k}"),
                  numpy_helper.from_array(np.zeros(COLS, np.int8), f"z{k}")]
        nodes.append(helper.make_node("DequantizeLinear", [f"w{k}", f"s{k}", f"z{k}"], [f"y{k}"], name=f"dq{k}", axis=1))
        outs.append(helper.make_tensor_value_info(f"y{k}", TensorProto.FLOAT, [ROWS, COLS]))
    g = helper.make_graph(nodes, "big", [], outs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])
    m.ir_version = 10
    onnx.save_model(m, path, save_as_external_data=True, all_tensors_to_one_file=True, location="big.bin",
                    size_threshold=0)
    return path


def measure(code: str) -> tuple[float, float]:
    script = textwrap.dedent("""
        import resource, sys, time
        t = time.perf_counter()
        {code}
        dt = time.perf_counter() - t
        print(dt, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    """).format(code=code)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout.split()
    return float(out[0]), float(out[1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path, default=None, help="where to build the model (default: a temporary folder)")
    ap.add_argument("--build-only", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.build_only:
        build(args.dir)
        return
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.dir or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        # built in a child process: peak RSS is inherited across fork + exec, so the measuring parent stays small
        subprocess.run([sys.executable, __file__, "--build-only", "--dir", str(folder)], check=True)
        path = folder / "big.onnx"
        size = sum(p.stat().st_size for p in folder.iterdir()) / 2**30
        rows = {
            "qdq-conformance check": f"from qdq_conformance.checker import check_file; r = check_file(__import__('pathlib')"
                                     f".Path({str(path)!r})); assert r.nodes_checked == {N} and not r.findings",
            "onnx.load (with data)": f"import onnx; onnx.load({str(path)!r})",
            "onnx.load (no data)": f"import onnx; onnx.load({str(path)!r}, load_external_data=False)",
        }
        print(f"model: {size:.2f} GiB on disk, {N} DequantizeLinear nodes")
        results = {name: measure(code) for name, code in rows.items()}
        base = results["onnx.load (with data)"][0]
        for name, (dt, rss) in results.items():
            print(f"{name:25} {dt:7.2f} s  ({dt / base:5.2f}x onnx.load with data)  peak RSS {rss:7.0f} MiB")


if __name__ == "__main__":
    main()
