"""Expanding YAML case files into concrete cases (single-node models with the oracle's expected outputs)."""
