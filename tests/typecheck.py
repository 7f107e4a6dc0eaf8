"""mypy over the installed ``qdq_conformance`` namespace: ``python -m tests.typecheck`` (a step of
``.ci/run``).

``mypy -p qdq_conformance`` cannot find the package under an editable install (setuptools maps the
repository's folders into the namespace with an import hook, which mypy does not run), and ``mypy conformance
generators reports`` would name the modules ``conformance.*``, ``generators.*``. So this hands mypy every file
with its module name (tests/sources.py), and the options of pyproject.toml's ``[tool.mypy]`` (strict for the
kernel, the element types, the specs and the domain model; standard elsewhere). Prints mypy's messages; exit
status 1 when there is one, 0 otherwise.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from mypy import build
from mypy.config_parser import parse_config_file
from mypy.errors import CompileError
from mypy.modulefinder import BuildSource
from mypy.options import Options

from .sources import modules

PYPROJECT = Path(__file__).resolve().parent.parent / "pyproject.toml"


def _shown(path: str) -> str:
    """A file's path relative to the working directory when it is under it."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd()))
    except ValueError:
        return path


def main() -> int:
    started = time.perf_counter()
    found = modules()
    sources = [BuildSource(str(path), name) for name, (path, _) in sorted(found.items())]
    options = Options()
    parse_config_file(options, lambda: None, str(PYPROJECT), sys.stdout, sys.stderr)
    try:
        result = build.build(sources, options)
        messages = result.errors
    except CompileError as e:
        messages = e.messages
    for message in messages:
        path, sep, rest = message.partition(":")
        print(f"{_shown(path)}{sep}{rest}" if sep else message)
    errors = sum(": error:" in m for m in messages)
    print(f"mypy: {errors} error(s) in {len(sources)} modules ({time.perf_counter() - started:.1f} s)")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
