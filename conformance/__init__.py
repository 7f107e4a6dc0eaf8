"""onnx-qdq-conformance: reference kernel, case corpus, runner and spec-checker for ONNX Q/DQ operators."""

__version__ = "0.1.0"
