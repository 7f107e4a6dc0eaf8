"""Evaluating an elementwise kernel over cache-sized chunks.

Each operation of the kernel is a separate numpy pass; over a large tensor every pass goes to main memory and
every temporary is as large as the tensor. Splitting along the leading axes keeps the temporaries small and in
cache; the arithmetic per element is unchanged, so the result is identical.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

CHUNK = 1 << 16

Kernel = Callable[..., None]


def map_chunked(fn: Kernel, x: np.ndarray, params: Sequence[np.ndarray | None], out_dtype: np.dtype,
                chunk: int = CHUNK) -> np.ndarray:
    """``fn(out, x, *params)`` chunk by chunk: fn writes its result for a chunk of x into ``out``.

    ``params`` broadcast against x: rank 0, or x's rank with each dimension 1 or x's.
    """
    out = np.empty(x.shape, out_dtype)
    if x.size <= chunk or x.ndim == 0:
        fn(out, x, *params)
        return out
    row = x.size // x.shape[0]
    if row > chunk:  # one leading index at a time, and split further inside
        for i in range(x.shape[0]):
            sub = [p if p is None or p.ndim < x.ndim else p[0 if p.shape[0] == 1 else i] for p in params]
            out[i] = map_chunked(fn, x[i], sub, out_dtype, chunk)
        return out
    step = max(1, chunk // row)
    ps: list[np.ndarray | None] = list(params)
    tiled = [False] * len(ps)
    for k, p in enumerate(ps):
        if p is not None and p.ndim == x.ndim and p.shape[0] == 1 and p.size > 1 and step > 1:
            # A per-axis parameter shaped (1, ..., D, ..., 1) would make every inner loop as short as the
            # trailing dimensions; tile it once to a contiguous chunk-sized block reused by every chunk.
            ps[k] = np.ascontiguousarray(np.broadcast_to(p, (step,) + x.shape[1:]))
            tiled[k] = True
    for start in range(0, x.shape[0], step):
        stop = min(start + step, x.shape[0])
        args = []
        for p, t in zip(ps, tiled, strict=True):
            if p is None or p.ndim < x.ndim or (p.shape[0] == 1 and not t):
                args.append(p)
            elif t:
                args.append(p[: stop - start])
            else:
                args.append(p[start:stop])
        fn(out[start:stop], x[start:stop], *args)
    return out
