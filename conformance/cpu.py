"""The processor: how many of its cores this process may use, and its instruction-set features, as the
operating system reports them.

Some backends choose their kernels by the processor they run on: OpenVINO's CPU plugin, for one, gives other
answers to some bfloat16 DequantizeLinear cases on a processor with AVX-512 than on one without (measured on
2026.4.1 on an AMD EPYC with AVX-512; the same machine with oneDNN held to AVX2 answers as the machine without
AVX-512 the expectations were first recorded on did). An expectation entry can therefore say which features
the processor it was measured on had (``cpu: {avx512f: true}``), and a results file's header records the
features its entries named.
"""

from __future__ import annotations

import os
import re
from functools import cache
from pathlib import Path

#: where Linux lists them (x86: "flags", Arm: "Features")
CPUINFO = Path("/proc/cpuinfo")
#: what a feature name looks like (as /proc/cpuinfo spells them: avx512f, avx512_bf16, asimd ...)
FEATURE = re.compile(r"[a-z0-9_]+")


@cache
def cpu_features() -> frozenset[str]:
    """The features of this machine's processor (empty where the operating system does not list them)."""
    try:
        text = CPUINFO.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return frozenset()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            return frozenset(value.split())
    return frozenset()


def usable_cores() -> int:
    """The cores this process may use (the one definition: generate, the runner's workers and the mutants)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1
