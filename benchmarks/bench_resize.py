"""The interval oracle's Resize (``conformance/reference/compute_resize.py``) against an earlier version of
that module, measured side by side in one run, on long axes and on an image-sized tensor.

The earlier version (``--baseline``, a git revision, default: where this branch left main, ``git merge-base
HEAD main``) is read with ``git show`` and imported beside the current one (same package, same helpers).
Per workload (a linear or nearest Resize of a float32 tensor, the case forms of
``cases/graph_compute_resize.yaml`` among them), both run in turn in every round; prints the best CPU seconds
of each, the ratio baseline / current and whether the two answers (the interval's value, low and high, or the
refusal) are identical bit for bit. Issue 37 point 5 (the long-axis cases): a linear resize of 2**19
elements by 2 took 17 s of CPU per case form with the per-element fractions.

    python benchmarks/bench_resize.py [--baseline REV] [--rounds 2]
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from qdq_conformance.reference import compute_resize

ROOT = Path(__file__).resolve().parents[1]
MODULE = "conformance/reference/compute_resize.py"


def baseline_module(revision: str) -> ModuleType:
    """``MODULE`` as it is at ``revision``, imported as a sibling of the current one."""
    source = subprocess.run(["git", "-C", str(ROOT), "show", f"{revision}:{MODULE}"], check=True,
                            capture_output=True, text=True).stdout
    name = "qdq_conformance.reference._baseline_resize"
    spec = importlib.util.spec_from_loader(name, loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    module.__package__ = "qdq_conformance.reference"
    sys.modules[name] = module
    exec(compile(source, f"{revision}:{MODULE}", "exec"), module.__dict__)  # noqa: S102 - the repo's own code
    return module


def workloads() -> Iterator[tuple[str, list[Any], dict[str, Any]]]:
    rng = np.random.default_rng(0)

    def codes(shape: list[int]) -> np.ndarray:
        return (rng.integers(0, 256, shape).astype(np.float32) * np.float32(0.5))

    def scales(*s: float) -> np.ndarray:
        return np.array(s, np.float32)

    long_up, long_down = codes([1, 1, 1, 2**19]), codes([1, 1, 1, 2**20])
    yield ("linear 2**19 x2 half_pixel", [long_up, None, scales(1, 1, 1, 2)],
           {"mode": "linear", "coordinate_transformation_mode": "half_pixel"})
    yield ("linear 2**20 x1/2 asymmetric", [long_down, None, scales(1, 1, 1, 0.5)],
           {"mode": "linear", "coordinate_transformation_mode": "asymmetric"})
    yield ("nearest 2**20 x1/2 half_pixel", [long_down, None, scales(1, 1, 1, 0.5)],
           {"mode": "nearest", "coordinate_transformation_mode": "half_pixel"})
    yield ("nearest 2**19 x2 asymmetric (refused)", [long_up, None, scales(1, 1, 1, 2)],
           {"mode": "nearest", "coordinate_transformation_mode": "asymmetric"})
    image = codes([1, 3, 96, 96])
    yield ("linear [1,3,96,96] x2 (exact)", [image, None, scales(1, 1, 2, 2)],
           {"mode": "linear", "coordinate_transformation_mode": "half_pixel"})
    yield ("linear [1,3,96,96] x1.5 (rounded)", [image, None, scales(1, 1, 1.5, 1.5)],
           {"mode": "linear", "coordinate_transformation_mode": "half_pixel"})


def outcome(resize: Callable[..., Any], inputs: list[Any], attrs: dict[str, Any]) -> tuple[Any, ...]:
    try:
        (iv,) = resize(inputs, attrs)
    except (ValueError, ArithmeticError) as e:
        return ("refused", type(e).__name__, str(e))
    return ("interval", iv.value.shape, iv.value.tobytes(), iv.low.tobytes(), iv.high.tobytes())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", help="git revision of the earlier module (default: git merge-base "
                                           "HEAD main)")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    if args.baseline is None:
        args.baseline = subprocess.run(["git", "-C", str(ROOT), "merge-base", "HEAD", "main"], check=True,
                                       capture_output=True, text=True).stdout.strip()
    old = baseline_module(args.baseline)
    print(f"baseline {args.baseline[:10]} vs current checkout; best CPU seconds of {args.rounds} rounds")
    print(f"{'workload':40} {'baseline':>9} {'current':>9} {'ratio':>7}  answers")
    for name, inputs, attrs in workloads():
        best = [float("inf"), float("inf")]
        answers: list[tuple[Any, ...]] = [(), ()]
        for _ in range(args.rounds):
            for k, resize in enumerate((old.resize, compute_resize.resize)):
                t0 = time.process_time()
                answers[k] = outcome(resize, inputs, attrs)
                best[k] = min(best[k], time.process_time() - t0)
        same = "identical" if answers[0] == answers[1] else "DIFFERENT"
        print(f"{name:40} {best[0]:9.3f} {best[1]:9.3f} {best[0] / best[1]:6.1f}x  {same} ({answers[1][0]})",
              flush=True)


if __name__ == "__main__":
    main()
