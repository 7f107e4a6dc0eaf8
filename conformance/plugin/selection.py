"""Collecting only the case files a ``-k`` / ``-m`` selection can match.

A run that selects one case (``-k ID``, ``qdq-conformance show ID``) would otherwise load every case file and
make tens of thousands of items only to deselect them (seconds even from the expansion cache). Per case file,
an index under the cache directory (``<cache>/selection``, keyed as the expansion cache is: the file's bytes,
the tiers and the code's fingerprint) keeps what pytest's ``-k`` and ``-m`` read of each of its items: the
node names from the case folder down (folders, the file, ``ID[form]``), the extra keywords (family, status,
operator) and the marker names. A file none of whose items the expressions select is not collected; pytest
then deselects within the files it does collect as always, so the selection is pytest's own. Anything this
module cannot decide (an expression it cannot parse, one that names ``xfail``, an index it cannot build, a
file that does not load) collects the file. ``benchmarks/bench_select.py`` measures the time to the first line
of such a run, with and without this.

pytest's parser of these expressions is not public API, so :class:`Expression` reads them itself, pinned by
``tests/test_selection.py`` under the oldest pytest the package accepts (8.0.2) and the newest (9.2.0): it
reads no expression pytest refuses and evaluates every one it reads as pytest's does (43 expressions, 10 sets
of names, both matchers), and a narrowed collection is the collection pytest selects from every file.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .. import domain
from ..cachedir import cache_root
from ..domain import Case
from ..errors import CaseFileError
from ..generators.cache import entry_key, load_file_cached
from ..generators.loader import read_case_file

#: environment variable that turns the narrowing off (the benchmark's "before")
OFF = "QDQ_COLLECT_ALL"
_EXPRESSIONS = pytest.StashKey[tuple[Any, Any] | None]()
_FORMAT = 1


def _compile(config: pytest.Config) -> tuple[Any, Any] | None:
    """The compiled -k and -m expressions (either None), or None when there is nothing to narrow by."""
    keyword, markexpr = config.getoption("keyword", ""), config.getoption("markexpr", "")
    if os.environ.get(OFF) or not (keyword or markexpr) or "xfail" in f"{keyword} {markexpr}".lower():
        return None  # (the runner adds xfail markers after collection, from the expectations)
    try:  # an expression this grammar does not read (calls with arguments, say) collects every file
        k = Expression(keyword) if keyword else None
        m = Expression(markexpr) if markexpr else None
    except ValueError:
        return None
    return k, m


_TOKEN = re.compile(r"\s*(\(|\)|(?:\w|:|\+|-|\.|\[|\]|\\|/)+)")


class Expression:
    """A ``-k`` / ``-m`` expression as pytest's documentation gives its grammar (``or``, ``and``, ``not``,
    parentheses, names; pytest's own parser is not public API): ``evaluate(match)`` with ``match(name) ->
    bool``. Raises ValueError on anything else (a call with arguments, a stray character): the caller then
    narrows nothing, and pytest reads the expression itself."""

    def __init__(self, text: str) -> None:
        self.tokens: list[str] = []
        pos = 0
        while pos < len(text):
            if text[pos:].strip() == "":
                break
            m = _TOKEN.match(text, pos)
            if m is None:
                raise ValueError(f"cannot read {text[pos:]!r}")
            self.tokens.append(m.group(1))
            pos = m.end()
        if not self.tokens:
            raise ValueError("empty expression")
        self._check()

    def _check(self) -> None:
        self._at = 0
        self._or(lambda name: True)
        if self._at != len(self.tokens):
            raise ValueError(f"unexpected {self.tokens[self._at]!r}")

    def evaluate(self, match: Callable[[str], bool]) -> bool:
        self._at = 0
        return self._or(match)

    def _or(self, match: Callable[[str], bool]) -> bool:
        value = self._and(match)
        while self._peek() == "or":
            self._at += 1
            value = self._and(match) or value  # (both sides read, to move past them)
        return value

    def _and(self, match: Callable[[str], bool]) -> bool:
        value = self._not(match)
        while self._peek() == "and":
            self._at += 1
            value = self._not(match) and value
        return value

    def _not(self, match: Callable[[str], bool]) -> bool:
        token = self._peek()
        if token is None:
            raise ValueError("expression ends early")
        self._at += 1
        if token == "not":
            return not self._not(match)
        if token == "(":
            value = self._or(match)
            if self._peek() != ")":
                raise ValueError("missing )")
            self._at += 1
            return value
        if token in (")", "and", "or"):
            raise ValueError(f"unexpected {token!r}")
        return match(token)

    def _peek(self) -> str | None:
        return self.tokens[self._at] if self._at < len(self.tokens) else None


#: per case file the (case id, form) pairs the selection can match (CaseFile.collect makes items of these
#: only)
CHOSEN = pytest.StashKey[dict[Path, frozenset[tuple[str, str]]]]()


def wanted(config: pytest.Config, parent: pytest.Collector, path: Path) -> bool:
    """Whether the case file ``path`` may hold an item the run's -k / -m select (True when unsure); which of
    its items may, kept for :func:`chosen`."""
    if _EXPRESSIONS not in config.stash:
        config.stash[_EXPRESSIONS] = _compile(config)
    exprs = config.stash[_EXPRESSIONS]
    if exprs is None:
        return True
    tiers = domain.tiers_of(config.getoption("qdq_tier"))
    index = case_index(path, tiers)
    if index is None:
        return True
    # node names pytest's -k reads: every node from below the root folder down (not the session or root
    # folder)
    chain = [n.name for n in parent.listchain() if not isinstance(n, pytest.Session)
             and not (isinstance(n, pytest.Directory) and isinstance(n.parent, pytest.Session))]
    forms = domain.forms_of(config.getoption("qdq_form"))
    keyword, markexpr = exprs
    above = "\0".join([*chain, path.name]).lower()
    found: set[tuple[str, str]] = set()
    try:
        for case_id, extra, marks in index:
            for form in forms:
                names = [*marks, form]
                if markexpr is not None and not markexpr.evaluate(_marks(names)):
                    continue
                if (keyword is None
                    or keyword.evaluate(_keywords("\0".join([above, f"{case_id}[{form}]", *extra,
                                                              *names]).lower()))):
                    found.add((case_id, form))
    except Exception:  # (an expression with call arguments in -k, and the like: pytest says what is wrong)
        return True
    config.stash.setdefault(CHOSEN, {})[path] = frozenset(found)
    return bool(found)


def chosen(config: pytest.Config, path: Path) -> frozenset[tuple[str, str]] | None:
    """The (case id, form) items of ``path`` the selection can match, or None: every item."""
    return config.stash.get(CHOSEN, {}).get(path)


def _keywords(joined: str) -> Callable[..., bool]:
    """pytest's keyword matcher (a case-insensitive substring of any name) over names joined by NUL."""

    def match(sub: str) -> bool:
        return sub.lower() in joined
    return match


def _marks(names: list[str]) -> Callable[..., bool]:
    have = set(names)

    def match(name: str) -> bool:
        return name in have
    return match


def marker_names(case: Case, form: str) -> list[str]:
    """The runner's markers of ``case`` in ``form`` (pytest's -m selects by them; the form's is the first)."""
    meta = case.metadata()
    names = [form, meta["operator"].lower(), meta["domain"].replace(".", "_"), f"v{meta['version']}",
             meta["granularity"].replace("-", "_"), "family_" + meta["family"].replace("-", "_"),
             meta["status"].replace("-", "_")]
    if meta["operator"] == "graph":  # a graph case: its ops are selectors too (``-m "graph and op_relu"``)
        names += ["op_" + op.lower() for op in meta["graph"]["operators"]]
        return names
    for io in meta["inputs"][:2]:
        if io["element_type"]:
            names.append(("x_" if io["formal"] == "x" else "scale_") + io["element_type"])
    if meta["outputs"] and meta["outputs"][0]["element_type"]:
        names.append("y_" + meta["outputs"][0]["element_type"])
    return names



def recorded(config: pytest.Config) -> dict[str, str | list[str] | bool]:
    """What selected the run's cases, for the results header (empty: the whole corpus in both forms): -k, -m,
    --shard, --form (one form), --deselect and node ids on the command line (--lf and --sw when they leave
    cases out: ``rerun.py`` adds them once it knows)."""
    out: dict[str, str | list[str] | bool] = {}
    for flag, name in (("-k", "keyword"), ("-m", "markexpr"), ("--shard", "qdq_shard"),
                       ("--deselect", "deselect")):
        value = config.getoption(name, None)
        if value:
            out[flag] = value if isinstance(value, str) else list(map(str, value))
    form = config.getoption("qdq_form", None)
    if form and form != domain.BOTH:
        out["--form"] = form
    given = [a for a in config.args if "::" in str(a)]  # (node ids: one case picked by hand)
    if given:
        out["node ids"] = given
    return out


def case_index(path: Path,
               tiers: list[str] | tuple[str, ...]) -> list[tuple[str, list[str], list[str]]] | None:
    """(case id, extra keywords, marker names but the form's) of each case of ``path`` in ``tiers``, from the
    index or built (from the expansion cache) and kept; None when the file cannot be read or loaded."""
    try:
        data = read_case_file(path)
    except CaseFileError:
        return None
    entry = cache_root() / "selection" / f"{path.stem}-{entry_key(data, list(tiers))[:24]}.json"
    try:
        doc = json.loads(entry.read_text(encoding="utf-8"))
        if doc.get("format") == _FORMAT:
            return [(c[0], c[1], c[2]) for c in doc["cases"]]
    except (OSError, ValueError, KeyError, TypeError, IndexError):
        pass
    try:
        cases = load_file_cached(path, list(tiers))
    except Exception:  # (a load error: the file is collected, and its error item says what is wrong)
        return None
    rows = []
    for case in cases:
        if case.tier not in tiers:
            continue
        meta = case.metadata()
        rows.append((case.id, [meta["family"], meta["status"], meta["operator"]], marker_names(case, "")[1:]))
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=entry.parent, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump({"format": _FORMAT, "cases": rows}, fh)
        os.replace(tmp, entry)
    except OSError:
        pass  # a read-only cache: decided from the expansion each time
    return rows
