"""Checking a 1 GB model with external data, and a model of many nodes: time and peak memory, side by side
with loading them and with the checker of another git revision.

Builds (once, cached in the folder given) a model of 16 DequantizeLinear nodes over 64 MiB int8 weights stored
externally (1 GiB in all), per-channel scales and zero points, and a model of 3,000 nodes (1,000 per-channel
QuantizeLinear -> DequantizeLinear -> Relu steps: the per-node cost and the whole-model rules) and the same
with every scale one channel short (every node has a problem to find and blame), then measures in fresh
processes (the fastest of ``--repeat``): the checker (``check_file``), ``onnx.load`` of the model with its
external data, and ``onnx.load`` without it; with ``--baseline REV`` (default ``main``; ``--baseline ''`` to
skip), the checker of that git revision too, in the same run (its ``conformance/`` extracted with ``git
archive``). Target (issue 6): seconds, and no tensor data loaded beyond what rules need (peak memory far below
1 GiB); a change to the checker says how much slower or faster it is than the baseline.

    python benchmarks/bench_checker.py [--dir DIR] [--baseline REV] [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

N, ROWS, COLS = 16, 8192, 8192
STEPS, CHANNELS = 1000, 64
ROOT = Path(__file__).resolve().parent.parent


def build(folder: Path) -> Path:
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    path = folder / "big.onnx"
    if (path.exists() and (folder / "big.bin").exists()
        and (folder / "big.bin").stat().st_size >= N * ROWS * COLS):
        return path
    inits, nodes, outs = [], [], []
    w = np.ones((ROWS, COLS), np.int8)
    for k in range(N):
        inits += [numpy_helper.from_array(w, f"w{k}"),
                  numpy_helper.from_array(np.full(COLS, 0.01, np.float32), f"s{k}"),
                  numpy_helper.from_array(np.zeros(COLS, np.int8), f"z{k}")]
        nodes.append(helper.make_node("DequantizeLinear", [f"w{k}", f"s{k}", f"z{k}"], [f"y{k}"],
                                      name=f"dq{k}", axis=1))
        outs.append(helper.make_tensor_value_info(f"y{k}", TensorProto.FLOAT, [ROWS, COLS]))
    g = helper.make_graph(nodes, "big", [], outs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])
    m.ir_version = 10
    onnx.save_model(m, path, save_as_external_data=True, all_tensors_to_one_file=True, location="big.bin",
                    size_threshold=0)
    return path


def build_many(folder: Path, broken: bool = False) -> Path:
    """x -> (QuantizeLinear -> DequantizeLinear -> Relu) * STEPS, per channel, scales and zero points shared;
    ``broken``: the scale one channel short, so that every Q/DQ node has a problem to find and blame."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    path = folder / ("many-broken.onnx" if broken else "many.onnx")
    if path.exists():
        return path
    inits = [numpy_helper.from_array(np.full(CHANNELS - broken, 0.05, np.float32), "s"),
             numpy_helper.from_array(np.zeros(CHANNELS, np.int8), "z")]
    nodes = []
    prev = "x"
    for k in range(STEPS):
        nodes += [helper.make_node("QuantizeLinear", [prev, "s", "z"], [f"q{k}"], name=f"q{k}", axis=1),
                  helper.make_node("DequantizeLinear", [f"q{k}", "s", "z"], [f"d{k}"], name=f"dq{k}", axis=1),
                  helper.make_node("Relu", [f"d{k}"], [f"r{k}"], name=f"relu{k}")]
        prev = f"r{k}"
    g = helper.make_graph(nodes, "many",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, CHANNELS, 8, 8])],
                          [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [1, CHANNELS, 8, 8])],
                          inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)])
    m.ir_version = 10
    onnx.save(m, path)
    return path


def baseline_tree(rev: str, folder: Path) -> Path | None:
    """``rev``'s ``conformance/`` as an importable ``qdq_conformance`` under ``folder`` (None: no such
    revision)."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "conformance"], capture_output=True)
    if archive.returncode:
        print(f"baseline {rev!r} skipped: {archive.stderr.decode().strip()}")
        return None
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True)
    (folder / "qdq_conformance").symlink_to(folder / "conformance")
    return folder


def measure(code: str, pythonpath: Path | None = None) -> tuple[float, float]:
    """Seconds ``code`` takes in a fresh process, its modules imported before the clock starts (``code``'s
    ``import`` statements run again, at no cost), and the process's peak RSS."""
    imports = "; ".join(part.strip() for part in code.split(";")
                        if part.strip().startswith(("import ", "from ")))
    script = textwrap.dedent("""
        import resource, sys, time
        {imports}
        t = time.perf_counter()
        {code}
        dt = time.perf_counter() - t
        print(dt, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    """).format(imports=imports, code=code)
    # (ahead of the installed package)
    env = dict(os.environ, PYTHONPATH=str(pythonpath)) if pythonpath else None
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                         env=env).stdout.split()
    return float(out[0]), float(out[1])


def _check(path: Path, nodes: int, broken: bool) -> str:
    expect = f"len({{f.node_name for f in r.findings}}) == {nodes}" if broken else "not r.findings"
    return ("from qdq_conformance.checker import check_file; r = "
            f"check_file(__import__('pathlib').Path({str(path)!r})); assert r.nodes_checked == {nodes} and "
            f"{expect}, r.findings[:3]")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path, default=None,
                    help="where to build the models (default: a temporary folder)")
    ap.add_argument("--baseline", default="main", metavar="REV",
                    help="git revision whose checker is measured beside this one (default: %(default)s; '' "
                         "skips)")
    ap.add_argument("--repeat", type=int, default=3, metavar="N",
                    help="processes per row, the fastest counts "
                    "(default: %(default)s)")
    ap.add_argument("--build-only", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.build_only:
        build(args.dir)
        build_many(args.dir)
        build_many(args.dir, broken=True)
        return
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.dir or Path(tmp) / "models"
        folder.mkdir(parents=True, exist_ok=True)
        # built in a child process: peak RSS is inherited across fork + exec, so the measuring parent stays
        # small
        subprocess.run([sys.executable, __file__, "--build-only", "--dir", str(folder)], check=True)
        base = baseline_tree(args.baseline, Path(tmp)) if args.baseline else None
        big = folder / "big.onnx"
        size = sum(p.stat().st_size for p in (big, folder / "big.bin")) / 2**30
        models = ((f"{size:.2f} GiB on disk, {N} DequantizeLinear nodes", big, N, False),
                  (f"{3 * STEPS} nodes, {2 * STEPS} of them Q/DQ", folder / "many.onnx", 2 * STEPS, False),
                  ("the same, every Q/DQ node's scale one channel short", folder / "many-broken.onnx",
                   2 * STEPS, True))
        for title, path, nodes, broken in models:
            check = _check(path, nodes, broken)
            rows: dict[str, tuple[str, Path | None]] = {"qdq-conformance check": (check, None)}
            if base is not None:
                rows[f"check at {args.baseline}"] = (check, base)
            rows["onnx.load (with data)"] = (f"import onnx; onnx.load({str(path)!r})", None)
            rows["onnx.load (no data)"] = (f"import onnx; onnx.load({str(path)!r}, load_external_data=False)",
                                           None)
            print(f"model: {title}")
            # the fastest of --repeat fresh processes: the machine's other load only ever adds time
            results = {name: min(measure(code, pp) for _ in range(args.repeat))
                       for name, (code, pp) in rows.items()}
            ref = results["onnx.load (with data)"][0]
            for name, (dt, rss) in results.items():
                print(f"  {name:25} {dt:7.2f} s  ({dt / ref:5.2f}x onnx.load with data)  peak RSS {rss:7.0f} "
                      "MiB")
            if base is not None:
                now, then = results["qdq-conformance check"][0], results[f"check at {args.baseline}"][0]
                print(f"  this checker / {args.baseline}'s: {now / then:.2f}x")


if __name__ == "__main__":
    main()
