"""``qdq-conformance demo``, ``specs`` and ``ambiguities``: what the tool knows of the spec, printed (the
reference kernel on a few of the spec's examples, every operator version's type combinations, the ambiguity
catalogue)."""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from . import opspecs
from .ambiguities import catalogue
from .ambiguities import markdown as ambiguities_markdown
from .errors import SpecViolation
from .reference import evaluate


def run_specs(args: argparse.Namespace) -> int:
    """List every operator version with its allowed type combinations."""
    for spec in opspecs.all_specs():
        combos = list(opspecs.type_combinations(spec))
        attrs = ", ".join(f"{k}={v}" for k, v in spec.attributes.items()) or "-"
        print(f"{spec.key:45} {len(combos):4} type combinations   attributes: {attrs}")
    return 0


def run_ambiguities(args: argparse.Namespace) -> int:
    """Print the ambiguity catalogue (--markdown: as the page docs/spec-notes.md)."""
    if getattr(args, "markdown", False):
        print(ambiguities_markdown(), end="")
        return 0
    for a in catalogue().values():
        readings = "".join(f"\n    {'*' if n == a.kernel_reading else '-'} {n}: {text}\n        "
                           f"permitted by: \"{a.quotes[n]}\"" for n, text in a.readings.items())
        print(f"{a.id}\n  spec:     {a.spec}\n  question: {a.question}\n  readings (* the "
              f"kernel's):{readings}\n  kernel:   {a.kernel}\n")
    return 0


def run_demo(args: argparse.Namespace) -> int:
    """Run the reference kernel on a few spec examples and show the results."""
    f32 = np.float32
    examples: list[tuple[str, str, str, int, list[Any], dict[str, int]]] = [
        ("com.microsoft QuantizeLinear-1 (its documentation's example)", "com.microsoft", "QuantizeLinear", 1,
         [np.array([0, 2, 3, 1000, -254, -1000], f32), f32(2), np.uint8(128)], {}),
        ("QuantizeLinear-21 saturates beyond 2**31 and at +-inf", "ai.onnx", "QuantizeLinear", 21,
         [np.array([3e9, -3e9, np.inf, -np.inf, 2.5, 3.5], f32), f32(1), np.int8(0)], {}),
        ("DequantizeLinear-21 int32 extremes with a zero point (no overflow)", "ai.onnx", "DequantizeLinear",
         21, [np.array([-(2**31), 2**31 - 1], np.int32), f32(1), np.int32(2**31 - 1)], {}),
        ("DynamicQuantizeLinear-11", "ai.onnx", "DynamicQuantizeLinear", 11,
         [np.array([0, 2, -3, -2.5, 1.34, 0.5], f32)], {}),
    ]
    for title, domain, op, version, inputs, attrs in examples:
        print(title)
        for i, a in enumerate(inputs):
            print(f"  input {i}: {np.asarray(a).tolist()} ({np.asarray(a).dtype})")
        for i, y in enumerate(evaluate(domain, op, version, inputs, attrs)):
            print(f"  output {i}: {y.tolist()} ({y.dtype})")
    print("A model the spec forbids is refused with a named rule:")
    try:
        evaluate("ai.onnx", "QuantizeLinear", 21, [np.zeros((2, 6), f32), np.ones((2, 2), f32)],
                 {"axis": 1, "block_size": 6})
    except SpecViolation as e:
        print(f"  SpecViolation: {e}")
    return 0


def add_ambiguities_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--markdown", action="store_true", help="print it as the Markdown page docs/spec-notes.md")
