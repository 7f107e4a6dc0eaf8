"""Backends under test (ONNX Runtime, onnx.reference, the bundled oracle, ...)."""
