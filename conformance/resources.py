"""Where the installed package keeps its data: the corpus, its schema, the bundled expectations, the report
templates and the ambiguity catalogue.

The repository's folders ``cases/``, ``expectations/``, ``reports/`` and ``conformance/data/`` are installed
as parts of the one ``qdq_conformance`` namespace (``pyproject.toml`` maps them), so a wheel install and an
editable checkout find them the same way: through :mod:`importlib.resources`, never relative to a source file.
"""

from __future__ import annotations

from functools import cache
from importlib.resources import files
from pathlib import Path


@cache
def package_dir(package: str) -> Path:
    """The folder of one of this project's packages on the file system (setuptools installs them unzipped)."""
    return Path(str(files(package)))


def cases_dir() -> Path:
    """The bundled corpus (``cases/`` in the repository)."""
    return package_dir("qdq_conformance.cases")


def schema_path() -> Path:
    """The JSON Schema of case files."""
    return cases_dir() / "case.schema.json"


def expectations_dir() -> Path:
    """The bundled expectation files, one per backend (``expectations/`` in the repository)."""
    return package_dir("qdq_conformance.expectations")


def templates_dir() -> Path:
    """The report templates (``reports/templates/``)."""
    return package_dir("qdq_conformance.reports") / "templates"


def suite_templates_dir() -> Path:
    """The exported suite's README template and license text (``generators/templates/``)."""
    return package_dir("qdq_conformance.generators") / "templates"


def data_dir() -> Path:
    """The ambiguity catalogue and other data of the kernel (``conformance/data/``)."""
    return package_dir("qdq_conformance") / "data"
