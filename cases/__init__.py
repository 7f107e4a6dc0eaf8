"""The bundled conformance corpus: one YAML file per operator family and concern (package data)."""
