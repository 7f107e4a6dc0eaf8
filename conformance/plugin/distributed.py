"""This pytest process's part in a pytest-xdist run, read through pytest-xdist's documented interface only.

A worker has ``config.workerinput`` (pytest-xdist's documentation, "Identifying the worker process during a
test"; ``xdist.is_xdist_worker`` reads the same). The controller, which hands items to workers and runs none
itself, is the process started with ``--dist`` other than ``no`` and test environments (``-n`` / ``--tx``):
those documented options are read with ``config.getoption`` (pytest-xdist's ``pytest_cmdline_main``, which
runs before any ``pytest_configure``, has turned ``-n N`` into ``--dist load`` and N ``--tx popen`` by then).
Without pytest-xdist, the options do not exist and this process is neither.
"""

from __future__ import annotations

import pytest


def is_worker(config: pytest.Config) -> bool:
    """True in a pytest-xdist worker."""
    return hasattr(config, "workerinput")


def is_controller(config: pytest.Config) -> bool:
    """True in the pytest-xdist process that hands items to workers (and runs none itself)."""
    if is_worker(config) or config.getoption("dist", "no") in (None, "no"):
        return False
    return bool(config.getoption("numprocesses", None) or config.getoption("tx", None))
