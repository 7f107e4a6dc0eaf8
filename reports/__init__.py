"""HTML compliance reports rendered from results files."""
