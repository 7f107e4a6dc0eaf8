"""Where this project caches what it builds or expands: ``$QDQ_CACHE_DIR``, else
``$XDG_CACHE_HOME/onnx-qdq-conformance`` (``~/.cache/onnx-qdq-conformance``)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    base = os.environ.get("QDQ_CACHE_DIR") or os.path.join(os.environ.get("XDG_CACHE_HOME") or
                                                          os.path.expanduser("~/.cache"),
                                                           "onnx-qdq-conformance")
    return Path(base)
