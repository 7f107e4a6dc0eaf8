"""The checker's one error: an input that cannot be read or interpreted as an ONNX model."""

from __future__ import annotations


class Unreadable(Exception):
    """The input could not be read as an ONNX model (the checker's exit status 2). The message is one line
    naming the problem (and the tensor, function or graph input it is in); the command line puts the file
    before it."""
