"""The bundled expectation files, one per backend (package data)."""
