"""An isolated environment per release, made with uv.

Why uv: each release gets a real virtual environment of its own (its own site-packages, so nothing of the
calling environment's runtime can shadow the release, as it can when a ``pip install --target`` folder is put
in front of ``sys.path``: the calling environment's ``onnxruntime`` metadata would still be found), its
dependencies resolved for that release (ONNX Runtime before 1.19 needs numpy < 2, and so an older ml_dtypes),
and every wheel cached once in ``$QDQ_CACHE_DIR/uv``, hard-linked into each environment: a new environment
from a warm cache takes about a second (``pip --target`` copies and recompiles every package each time).

An environment holds the release (``onnxruntime==1.16.3``), this tool's own dependencies (pinned by the source
tree's ``constraints.txt`` except where the release needs otherwise) and this tool itself, installed editable
from the source tree the command runs from, so every release runs the same code. It is kept in
``$QDQ_CACHE_DIR/matrix/<package>-<version>-py<X.Y>`` and reused while what it was made from is unchanged.

The step is :class:`EnvironmentMaker`: the command's self-test replaces it by one that needs no network.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Protocol

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from ..cachedir import cache_root
from ..install import install_hint
from .releases import Distribution, ReleaseError

DIST_NAME = "onnx-qdq-conformance"
#: where a made environment notes what it was made from (reused while that is unchanged)
MADE = ".qdq-matrix.json"


@dataclass(frozen=True)
class Environment:
    """Where one release runs: its Python, the environment variables to add, and what it is, in words."""

    python: str
    env: dict[str, str] = field(default_factory=dict)
    description: str = ""


class EnvironmentMaker(Protocol):
    def make(self, dist: Distribution, version: str) -> Environment: ...


def source_tree() -> Path | None:
    """The checkout this package runs from (its pyproject.toml names this project), or None (a wheel)."""
    here = Path(__file__).resolve().parent.parent.parent
    pyproject = here / "pyproject.toml"
    try:
        text = pyproject.read_text(encoding="utf-8")
    except OSError:
        return None
    return here if f'name = "{DIST_NAME}"' in text else None


def tool_requirements(extra: str | None) -> list[Requirement]:
    """This tool's dependencies as installed (and those of its optional group ``extra``)."""
    out = []
    for text in metadata.requires(DIST_NAME) or []:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        if req.marker is None or req.marker.evaluate({"extra": extra or ""}):
            out.append(req)
    return out


def requirement_of(package: str) -> str | None:
    """This tool's requirement on ``package`` (``>=1.20``), with its optional groups', or None."""
    name = canonicalize_name(package)
    for text in metadata.requires(DIST_NAME) or []:
        req = Requirement(text)
        if canonicalize_name(req.name) == name:
            return str(req.specifier)
    return None


def requirements(dist: Distribution, version: str) -> list[str]:
    """What an environment for ``version`` installs: the release, what it needs, and the tool's dependencies
    but the release's package."""
    own = canonicalize_name(dist.package)
    return [*dist.requirements(version),
            *sorted(str(r) for r in tool_requirements(dist.extra) if canonicalize_name(r.name) != own)]


def constraints(tree: Path | None, freed: list[str]) -> list[str]:
    """The source tree's ``constraints.txt`` pins, without those of the packages in ``freed``."""
    path = tree / "constraints.txt" if tree else None
    if path is None or not path.exists():
        return []
    names = {canonicalize_name(Requirement(r).name) for r in freed}
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        text = line.split("#", 1)[0].strip()
        if text and canonicalize_name(Requirement(text).name) not in names:
            out.append(text)
    return out


def uv_binary() -> str:
    """The uv executable: the ``uv`` package's (the ``matrix`` extra: ``install.install_hint``), or uv on
    PATH."""
    try:
        from uv import find_uv_bin  # (an optional dependency: only matrix needs it)

        return str(find_uv_bin())
    except (ImportError, FileNotFoundError):
        found = shutil.which("uv")
        if found:
            return found
    raise ReleaseError("matrix makes each release's environment with uv, which is not installed: "
                       f"{install_hint('matrix')} (or python -m pip install uv)")


class UvEnvironments:
    """:class:`EnvironmentMaker` with uv (see the module's docstring)."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root or cache_root() / "matrix"
        self.uv_cache = Path(os.environ.get("UV_CACHE_DIR") or cache_root() / "uv")

    def make(self, dist: Distribution, version: str) -> Environment:
        tree = source_tree()
        if tree is None:
            raise ReleaseError("matrix installs this tool into each release's environment from its source "
                               "tree: run it from a checkout installed with pip install -e .")
        reqs = requirements(dist, version)
        pins = constraints(tree, [*dist.requirements(version)])
        wanted = {"requirements": reqs, "constraints": pins, "python": sys.version.split()[0],
                  "tool": str(tree)}
        py = f"{sys.version_info[0]}.{sys.version_info[1]}"
        folder = self.root / f"{dist.package}-{version}-py{py}"
        python = folder / "bin" / "python"
        made = _read_json(folder / MADE)
        if isinstance(made, dict) and {k: made.get(k) for k in wanted} == wanted and python.exists():
            return Environment(str(python), _variables(folder), _describe(folder, dist, version, made))
        shutil.rmtree(folder, ignore_errors=True)
        folder.parent.mkdir(parents=True, exist_ok=True)
        uv = uv_binary()
        self._uv([uv, "venv", "--quiet", "--python", sys.executable, str(folder)], dist, version)
        install = [uv, "pip", "install", "--quiet", "--python", str(python)]
        # the constraints file's pins, unless the release needs other versions (openvino 2025.4 needs
        # numpy < 2.4): then only the oracle's (onnx) stays pinned, the rest resolved for the release
        oracle = [p for p in pins if canonicalize_name(Requirement(p).name) == "onnx"]
        resolved = "constraints.txt"
        if not self._uv([*install, "-c", self._pin_file(folder, pins), *reqs], dist, version, fail=False):
            self._uv([*install, "-c", self._pin_file(folder, oracle), *reqs], dist, version)
            resolved = "onnx pinned, the rest resolved for the release"
        self._uv([*install, "--no-deps", "-e", str(tree)], dist, version)
        made = {**wanted, "resolved": resolved}
        (folder / MADE).write_text(json.dumps(made, indent=1), encoding="utf-8")
        return Environment(str(python), _variables(folder), _describe(folder, dist, version, made))

    def _pin_file(self, folder: Path, pins: list[str]) -> str:
        path = folder / "constraints.txt"
        path.write_text("".join(f"{p}\n" for p in pins), encoding="utf-8")
        return str(path)

    def _uv(self, cmd: list[str], dist: Distribution, version: str, fail: bool = True) -> bool:
        """Run a uv step (its cache under the project's cache folder, never a Python download); a failure is a
        :class:`ReleaseError` naming the release, unless ``fail`` is false."""
        env = {**os.environ, "UV_CACHE_DIR": str(self.uv_cache), "UV_PYTHON_DOWNLOADS": "never"}
        env.pop("VIRTUAL_ENV", None)
        r = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if r.returncode and fail:
            last = " ".join(r.stderr.split())[-400:] or "no output"
            step = " ".join(cmd[1:3])
            raise ReleaseError(f"{dist.package} {version}: cannot make its environment ({step}): {last}")
        return r.returncode == 0


def _describe(folder: Path, dist: Distribution, version: str, made: Mapping[str, object]) -> str:
    return f"{folder} ({', '.join(dist.requirements(version))}; {made.get('resolved', 'constraints.txt')})"


def _variables(folder: Path) -> dict[str, str]:
    return {"VIRTUAL_ENV": str(folder), "PATH": f"{folder / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}


def _read_json(path: Path) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None

