"""The corpus: every case file under a folder, loaded, validated and expanded.

A malformed file is reported (file, line, key) and skipped; the other files still load. Case ids are unique
across the files: a file that repeats an id an earlier file produced is an error naming both.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from qdq_conformance.resources import cases_dir
from qdq_conformance.sharding import Shard, in_shard

from .case import ConcreteCase
from .expand import expand
from .file_schemas import validate
from .graph_expand import expand_graph
from .loader import CaseFileError, load_yaml
from .template import Template

CASES_DIR = cases_dir()


@dataclass
class Corpus:
    cases: list[ConcreteCase] = field(default_factory=list)
    errors: list[CaseFileError] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)


def case_files(root: Path = CASES_DIR) -> list[Path]:
    return sorted(p for p in root.rglob("*.yaml") if p.is_file())


def load_file(path: Path, tiers: Sequence[str] | None = None,
              shard: Shard | None = None) -> list[ConcreteCase]:
    """The concrete cases of one case file (raises CaseFileError); only templates of ``tiers`` (default: all)
    are expanded, so unselected large-tier cases cost nothing, and with ``shard`` (K, N) only the cases of
    that shard are built (the file's cases in that shard, in the file's order: ``sharding.py``). Two
    templates of the file that give one case id are an error naming both lines. A file of graph templates
    (``graphs:``) gives graph cases (``graph_case.GraphCase``, which serves wherever a ConcreteCase does)."""
    doc = load_yaml(path)
    validate(doc, path)
    graphs = "graphs" in doc
    expander: Callable[[Template, Callable[[str], bool] | None], Sequence[Any]] = \
        expand_graph if graphs else expand
    keep = in_shard(shard)
    seen: dict[str, int] = {}
    ids: dict[str, tuple[str, int]] = {}
    cases: list[Any] = []
    for item in doc["graphs" if graphs else "cases"]:
        tpl = Template(item, str(path))
        if item["id"] in seen:
            raise CaseFileError(path, tpl.line("id"), f"{item['id']}.id",
                                f"duplicate template id (first at line {seen[item['id']]})")
        seen[item["id"]] = tpl.line("id")
        if tiers is not None and item.get("tier", "default") not in tiers:
            continue
        try:
            expanded = expander(tpl, keep)
        except CaseFileError:
            raise
        except Exception as e:  # a generator defect must still name the case that triggered it
            raise CaseFileError(path, tpl.line(), item["id"],
                                f"generator error: {type(e).__name__}: {e}") from e
        claim_ids(ids, path, expanded)
        cases.extend(expanded)
    return cases


class Claim(Protocol):
    """What the id check needs of a case."""

    @property
    def id(self) -> str: ...
    @property
    def line(self) -> int: ...
    @property
    def template(self) -> str: ...


def claim_ids(claimed: dict[str, tuple[str, int]], path: Path | str, cases: Sequence[Claim]) -> None:
    """Record the ids of ``cases`` (one file's, or one template's, from ``path``) in ``claimed`` (id -> file,
    line); when one is already claimed, claim none and raise CaseFileError naming both files and lines."""
    new: dict[str, tuple[str, int]] = {}
    for c in cases:
        first = claimed.get(c.id) or new.get(c.id)
        if first == (str(path), c.line):
            raise CaseFileError(path, c.line, c.template, f"the template gives case id {c.id} twice (a value "
                                "repeated in one of its lists?)")
        if first is not None:
            raise CaseFileError(path, c.line, c.template, f"case id {c.id} is also produced by "
                                f"{first[0]}:{first[1]} (case ids must be unique across the case files)")
        new[c.id] = (str(path), c.line)
    claimed.update(new)


def load(paths: Iterable[Path] | None = None, *, tiers: Sequence[str] = ("default",),
         select: Sequence[str] = (),
         loader: Callable[[Path, Sequence[str]], list[ConcreteCase]] | None = None) -> Corpus:
    """Load every case file (default: all of ``cases/``), keep the tiers asked for and ids matching ``select``
    (glob patterns; all when empty). Errors are collected, not raised: a file that cannot be loaded, or that
    produces a case id an earlier file produced, costs its own cases only. ``loader``: how one file is
    expanded (default :func:`load_file`; ``cache.load_file_cached`` reads the expansion cache)."""
    loader = loader or load_file
    corpus = Corpus()
    claimed: dict[str, tuple[str, int]] = {}
    for path in (list(paths) if paths is not None else case_files()):
        corpus.files.append(path)
        try:
            cases = loader(path, tiers)
            claim_ids(claimed, path, cases)
        except CaseFileError as e:
            corpus.errors.append(e)
            continue
        corpus.cases.extend(c for c in cases if c.tier in tiers and
                            (not select or any(fnmatch.fnmatchcase(c.id, pat) for pat in select)))
    return corpus
