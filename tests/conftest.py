from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
import pytest

from qdq_conformance.types import from_tensor_proto

# the installed and the oldest supported pytest, for the tests of the plugin's use of pytest
from .pytest_versions import oldest_pytest, which_pytest  # noqa: F401  (fixtures)


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """The self-tests under pytest-xdist (``-n``, no ``--dist`` given): work stealing. Each worker starts on
    half of the tests, in file order (a module's fixtures are set up once), and one that runs out takes half
    of what the other has left, so that both end within a test of each other. A corpus run (``--backend``)
    keeps xdist's default. (Set here, not in pyproject's addopts: pytest-xdist is a test extra.)"""
    option = config.option
    if getattr(option, "numprocesses", None) and getattr(option, "dist", None) == "no" and \
            not getattr(option, "qdq_backend", None):
        option.dist = "worksteal"


def as_array(value: object) -> np.ndarray:
    """ONNX's node-test data sets hold arrays or TensorProtos (for exotic types)."""
    if isinstance(value, onnx.TensorProto):
        return from_tensor_proto(value)
    return np.asarray(value)


@pytest.fixture(scope="session")
def onnx_node_cases():
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = collect_testcases(None)
    ops = {"QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear"}
    return [c for c in cases if len(c.model.graph.node) == 1 and c.model.graph.node[0].op_type in ops]


@pytest.fixture(scope="session")
def corpus():
    """The default corpus, expanded once per test session: through the expansion cache, which the other
    processes of the session (pytest-xdist workers, the commands the tests run) read too. Each worker starts
    at its own place in the list of case files: from a cold cache, the workers expand different files at once
    and then read each other's entries, rather than each expanding every file."""
    from qdq_conformance.generators.cache import load_file_cached
    from qdq_conformance.generators.corpus import case_files, load
    from qdq_conformance.generators.loader import CaseFileError

    files = case_files()
    worker = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
    start = worker * len(files) // int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1)
    expanded: dict[Path, list | CaseFileError] = {}
    for path in files[start:] + files[:start]:
        try:
            expanded[path] = load_file_cached(path, ("default",))
        except CaseFileError as e:  # (load() below records it, as it would have)
            expanded[path] = e

    def loader(path: Path, tiers: object) -> list:
        got = expanded[path]
        if isinstance(got, CaseFileError):
            raise got
        return got

    return load(files, loader=loader)  # (in the files' order, as the tests know it)


@pytest.fixture(scope="session")
def shared_expansions(corpus) -> Callable[[Path], Path]:
    """``shared_expansions(folder)``: ``folder`` made a cache directory (``QDQ_CACHE_DIR``) whose expansion
    caches, ``corpus`` and the selection index built from it (``selection``), are this session's, which the
    ``corpus`` fixture has filled; everything else a command keeps there (pytest's cache, compiled models, the
    fuzzer's database) stays in ``folder``. For a test that gives a command a cache directory of its own: an
    entry is keyed by the case file's bytes, the tiers and the code (generators/cache.py), so the command sees
    the cases a cold cache would give it, without expanding the whole corpus again (half a minute of processor
    time a command)."""
    from qdq_conformance.cachedir import cache_root

    def share(folder: Path) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        for name in ("corpus", "selection"):
            (cache_root() / name).mkdir(parents=True, exist_ok=True)
            (folder / name).symlink_to(cache_root() / name, target_is_directory=True)
        return folder

    return share


@pytest.fixture(scope="session")
def quantized_models(tmp_path_factory) -> dict[str, Path]:
    """What ONNX Runtime's quantizer writes from a small float model, and the hand-made float8 / blocked model
    (tests/frommodel_models.py), built once per session: ``cases --from-model``'s self-tests."""
    pytest.importorskip("onnxruntime.quantization")
    from .frommodel_models import hand_model, ort_models

    folder = tmp_path_factory.mktemp("quantized-models")
    return {**ort_models(folder), "hand": hand_model(folder / "hand.onnx")}
