"""The ``pytest11`` entry point: what every pytest process of a venv with this package installed pays.

It registers the runner's options and nothing else until a run is asked for. Only when ``--backend`` is given
does it import the runner's hooks (:mod:`.hooks`: numpy, onnx, the corpus, the runner) and register them, so a
vendor who installs the tool into the venv of their own test suite pays for the options alone
(``benchmarks/bench_plugin_startup.py`` measures it side by side with ``-p no:qdq_conformance``).
"""

from __future__ import annotations

import importlib

import pytest

from . import options

#: the name the runner's hooks are registered under once a run is asked for
HOOKS = "qdq_conformance.hooks"


def pytest_addoption(parser: pytest.Parser) -> None:
    options.add_to_pytest(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config, parser: pytest.Parser,
                                  args: list[str]) -> None:
    """``pytest --backend=NAME`` with no paths runs the corpus (or --suite, or --cases), not the testpaths:
    the folder joins the command line's arguments (changed in place, as pytest's documentation of this hook
    shows)."""
    ns = parser.parse_known_args(args)
    if getattr(ns, "qdq_backend", None) and not getattr(ns, "file_or_dir", None):
        from ..resources import cases_dir  # (light: importlib.resources only)

        args.append(str(getattr(ns, "qdq_suite", None) or getattr(ns, "qdq_cases", None) or cases_dir()))


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """A run is asked for: register the runner's hooks (their own ``pytest_configure`` runs on registration,
    pytest's configure hook being historic)."""
    if config.getoption("qdq_backend", None) and not config.pluginmanager.has_plugin(HOOKS):
        # the one heavy import of the plugin, paid only by a conformance run (about 0.5 s: numpy, onnx, the
        # runner)
        config.pluginmanager.register(importlib.import_module("qdq_conformance.plugin.hooks"), HOOKS)
