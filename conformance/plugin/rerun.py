"""``--lf``, ``--ff`` and ``--sw`` for corpus runs, as pytest has them, with their state in this tool's own
cache: one file per corpus (the case folder or exported suite, and the tier), backend and selection (``-k``,
``-m``, ``--form``, ``--shard``, ``--deselect``, node ids), so that a run of another backend or another
selection never overwrites the failures a later ``--lf`` reruns (pytest's cache holds one list for every run
from a folder).

A case-form *failed* as pytest counts it: a failure no expectation entry foresaw (an expected one is an
xfail, and passes a gate), so ``--lf`` reruns what made the last run fail. As in pytest:

- ``--lf``: only the case-forms that failed last time (the list is updated by every run of the same key:
  those that pass now leave it, new failures join it); when none of them is selected, every case runs
  (``--lfnf none``: none);
- ``--ff``: every case, last time's failures first;
- ``--sw``: stop at the first failure (exit status 1, as ``-x``) and start there next time; ``--sw-skip``
  lets the first failure pass and stops at the next; ``--sw-reset`` starts from the beginning.

pytest's own ``lfplugin`` and ``stepwiseplugin`` are left out of a corpus run (their nodeids are paths under
pytest's rootdir, which the installed corpus is not). ``-p no:cacheprovider`` (``show``'s one-case runs) keeps
the state as it is. Under pytest-xdist, ``--sw`` is refused (one line): its workers run cases side by side.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest

from ..cachedir import cache_root
from .distributed import is_controller, is_worker

#: pytest's plugins whose work this module does for a corpus run
PYTEST_PLUGINS = ("lfplugin", "lfplugin-collwrapper", "stepwiseplugin")
#: (state file format)
FORMAT = 1

Key = tuple[str, str]


def _option(config: pytest.Config, name: str) -> Any:
    return config.getoption(name, None)


def state_key(config: pytest.Config) -> dict[str, str | list[str] | None]:
    """What the state is kept per: the corpus, the backend and the selection."""
    corpus = _option(config, "qdq_suite") or _option(config, "qdq_cases") or "corpus"
    return {"corpus": str(Path(corpus).resolve()) if corpus != "corpus" else corpus,
            "tier": _option(config, "qdq_tier"), "backend": _option(config, "qdq_backend"),
            "-k": _option(config, "keyword") or "", "-m": _option(config, "markexpr") or "",
            "--form": _option(config, "qdq_form"), "--shard": _option(config, "qdq_shard"),
            "--deselect": sorted(map(str, _option(config, "deselect") or [])),
            "node ids": sorted(str(a) for a in config.args if "::" in str(a))}


def state_path(config: pytest.Config) -> Path:
    key = json.dumps(state_key(config), sort_keys=True)
    return cache_root() / "runs" / f"{hashlib.sha256(key.encode()).hexdigest()[:24]}.json"


def _read(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(doc, dict) and doc.get("format") == FORMAT:
            return doc
    except (OSError, ValueError):
        pass
    return {}


def _write(path: Path, doc: dict[str, Any]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(doc, fh)
        os.replace(tmp, path)
    except OSError:
        pass  # (a read-only cache: the next --lf knows nothing, and says so)


def _key_of(item: pytest.Item) -> Key | None:
    case = getattr(item, "case", None)
    return None if case is None else (case.id, str(getattr(item, "form", "")))


class Rerun:
    """Registered for a corpus run: selects and orders the items, records what failed."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.path = state_path(config)
        self.doc = _read(self.path)
        self.failed: set[Key] = {(str(i), str(f)) for i, f in self.doc.get("failed", [])}
        self.lines: list[str] = []  # what it did, for the line after pytest's collection summary
        self.selected: dict[str, str | bool] = {}  # for the results header's selection
        self.stepwise = bool(_option(config, "stepwise") or _option(config, "stepwise_skip")
                             or _option(config, "stepwise_reset"))
        self.skip_one = bool(_option(config, "stepwise_skip"))
        self.stopped_at: Key | None = None
        self.session: pytest.Session | None = None
        self.keeps = config.pluginmanager.has_plugin("cacheprovider") and not is_worker(config)
        if self.stepwise and (is_worker(config) or is_controller(config)):
            raise pytest.UsageError("--sw: not under pytest-xdist (-n): its workers run cases side by side, "
                                    "so no case is the first failure")

    def select(self, items: list[pytest.Item]) -> list[pytest.Item]:
        """The items to run, in order (the deselected ones are reported through pytest_deselected)."""
        keep = list(items)
        if _option(self.config, "lf"):
            keep = self._last_failed(keep)
        elif _option(self.config, "failedfirst"):
            first = [i for i in keep if _key_of(i) in self.failed]
            keep = first + [i for i in keep if _key_of(i) not in self.failed]
            self.lines.append(f"run-last-failure: {len(first)} case-form(s) that failed last time run first")
        if self.stepwise:
            keep = self._resume(keep)
        return keep

    def _last_failed(self, items: list[pytest.Item]) -> list[pytest.Item]:
        again = [i for i in items if _key_of(i) in self.failed]
        if again:
            self.lines.append(f"run-last-failure: rerun previous {len(again)} failure(s) of this selection "
                              f"on this backend ({len(items) - len(again)} case-form(s) left out)")
            self.selected["--lf"] = True
            return again
        if _option(self.config, "last_failed_no_failures") == "none":
            self.lines.append("run-last-failure: no previously failed case-form of this selection on this "
                              "backend; --lfnf none: none run")
            self.selected["--lf"] = True
            return []
        known = "no previously failed case-form" if "failed" in self.doc else "no record of a previous run"
        self.lines.append(f"run-last-failure: {known} of this selection on this backend: every case runs")
        return items

    def _resume(self, items: list[pytest.Item]) -> list[pytest.Item]:
        last = self.doc.get("stepwise")
        if _option(self.config, "stepwise_reset") or not last:
            self.lines.append("stepwise: starting from the first case" + (" (--sw-reset)" if last else ""))
            return items
        at = tuple(last)
        for k, item in enumerate(items):
            if _key_of(item) == at:
                if k:
                    self.lines.append(f"stepwise: skipping {k} case-form(s) that passed, resuming at {at[0]} "
                                      f"[{at[1]}]")
                    self.selected["--sw"] = f"from {at[0]} [{at[1]}]"
                return items[k:]
        self.lines.append(f"stepwise: {at[0]} [{at[1]}], where the last run stopped, is not selected: "
                          "starting from the first case")
        return items

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        note = dict(report.user_properties).get("qdq_outcome")
        if not isinstance(note, dict) or not (report.when == "call" or (report.when == "setup"
                                                                        and not report.passed)):
            return
        key = (str(note["id"]), str(note["form"]))
        if report.failed:
            self.failed.add(key)
            if self.stepwise and self.stopped_at is None:
                if self.skip_one:
                    self.skip_one = False
                    return
                self.stopped_at = key
                if self.session is not None:  # (as -x stops: exit status 1)
                    self.session.shouldfail = (f"--sw: stopped at the first unexpected failure, {key[0]} "
                                               f"[{key[1]}]; the next --sw run starts there")
        else:  # passed, xfailed (an expected failure), unsupported, implementation-defined
            self.failed.discard(key)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.session = session  # (--sw stops it)
        take_over(self.config)  # (every plugin is configured by now; collection has not started)

    def pytest_report_collectionfinish(self, config: pytest.Config) -> list[str]:
        return self.lines

    def save(self, interrupted: bool) -> None:
        """Keep the failures (and --sw's place) for the next run of the same key."""
        if not self.keeps:
            return
        doc: dict[str, Any] = {"format": FORMAT, "key": state_key(self.config),
                               "failed": sorted([list(k) for k in self.failed])}
        if self.stepwise:
            # (stopped: start there; interrupted: where it was, kept; a run through the end: from the start)
            doc["stepwise"] = list(self.stopped_at) if self.stopped_at else \
                self.doc.get("stepwise") if interrupted else None
        elif "stepwise" in self.doc:
            doc["stepwise"] = self.doc["stepwise"]
        _write(self.path, doc)


def take_over(config: pytest.Config) -> None:
    """Leave pytest's own --lf / --sw plugins out of a corpus run (this module does their work)."""
    for name in PYTEST_PLUGINS:
        plugin = config.pluginmanager.get_plugin(name)
        if plugin is not None:
            config.pluginmanager.unregister(plugin)
