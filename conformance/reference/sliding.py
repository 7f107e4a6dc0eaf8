"""The windows a convolution or a pooling reads: ONNX's output size and padding, as one strided view."""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view


def windows(x: np.ndarray, kernel: list[int], strides: list[int], pads: list[int], dilations: list[int],
            fill: float = 0.0) -> np.ndarray:
    """The windows of ``x`` (N, C, D1 ... Dn) a pooling or convolution reads: shape (N, C, O1 ... On,
    K1 ... Kn), ``x`` padded with ``fill`` by ``pads`` (begins then ends) first; ONNX's output size
    ``floor((D + pad_begin + pad_end - dilation * (kernel - 1) - 1) / stride + 1)``."""
    n = len(kernel)
    if x.ndim != n + 2 or len(strides) != n or len(pads) != 2 * n or len(dilations) != n:
        raise ValueError(f"kernel {kernel}, strides {strides}, pads {pads}, dilations {dilations} do not fit "
                         f"an input of shape {list(x.shape)}")
    if min(kernel + strides + dilations, default=1) < 1 or min(pads, default=0) < 0:
        raise ValueError("kernel, strides and dilations must be positive, pads not negative")
    xp = np.pad(x, [(0, 0), (0, 0)] + [(pads[i], pads[i + n]) for i in range(n)], constant_values=fill)
    extent = [(kernel[i] - 1) * dilations[i] + 1 for i in range(n)]
    if any(xp.shape[2 + i] < extent[i] for i in range(n)):
        raise ValueError(f"kernel {kernel} (dilations {dilations}) larger than the padded input "
                         f"{list(xp.shape[2:])}")
    w = sliding_window_view(xp, extent, axis=tuple(range(2, 2 + n)))
    index = (slice(None), slice(None), *(slice(None, None, s) for s in strides),
             *(slice(None, None, d) for d in dilations))
    return w[index]
