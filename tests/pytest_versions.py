"""The pytest versions the plugin's use of pytest is checked under, side by side: the installed one (the
newest the constraints allow) and the oldest the package accepts (the floor of its ``pytest>=...``
requirement, latest patch release), installed with pip into a temporary folder put first on ``PYTHONPATH``
(a throwaway install: nothing else of the environment changes). Without the network the oldest is skipped,
except under CI (the ``CI`` or ``QDQ_REQUIRE_OLDEST_PYTEST`` environment variable set), where that is a
failure.

Used by tests/test_fastpath.py (the runner's shortcut through pytest's run-test protocol) and
tests/test_selection.py (the ``-k`` / ``-m`` expressions the collection narrows by)."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement


def oldest_supported() -> str:
    """pip's spelling of the oldest pytest the package accepts: ``pytest>=8`` -> ``pytest==8.0.*``."""
    for text in metadata.requires("onnx-qdq-conformance") or ():
        req = Requirement(text)
        if req.name == "pytest" and not req.marker:
            floor = next(s.version for s in req.specifier if s.operator in (">=", "=="))
            major, minor = ([*floor.split("."), "0"])[:2]
            return f"pytest=={major}.{minor}.*"
    raise AssertionError("the package does not require pytest")


@pytest.fixture(scope="session")
def oldest_pytest(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The oldest supported pytest, installed into a temporary folder: (folder, version)."""
    spec = oldest_supported()
    target = tmp_path_factory.mktemp("oldest-pytest")
    cmd = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps",
           "--target", str(target), spec]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        error = None if p.returncode == 0 else (p.stderr or p.stdout).strip()[-800:]
    except (OSError, subprocess.TimeoutExpired) as e:
        error = str(e)
    if error is not None:
        message = f"cannot install {spec} (needed to check the runner against it): {error}"
        if os.environ.get("CI") or os.environ.get("QDQ_REQUIRE_OLDEST_PYTEST"):
            pytest.fail(message)
        pytest.skip(message)
    versions = [d.name.removesuffix(".dist-info").split("-", 1)[1] for d in target.glob("pytest-*.dist-info")]
    assert len(versions) == 1, versions
    return target, versions[0]


@pytest.fixture(params=["installed", "oldest"])
def which_pytest(request: pytest.FixtureRequest) -> tuple[dict[str, str], str]:
    """The environment that runs a given pytest, and that pytest's version."""
    env = dict(os.environ)
    if request.param == "installed":
        return env, pytest.__version__
    target, version = request.getfixturevalue("oldest_pytest")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(target), env.get("PYTHONPATH")) if p)
    return env, version


