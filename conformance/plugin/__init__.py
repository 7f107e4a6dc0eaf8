"""The pytest plugin: ``pytest --backend=NAME`` runs the conformance corpus against a backend."""
