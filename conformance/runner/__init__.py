"""Running cases against a backend: isolation, outcomes, expectations, results."""
