"""onnx-qdq-conformance: reference kernel, case corpus, runner and spec-checker for ONNX Q/DQ operators."""

__version__ = "0.2.0.dev0"
