"""The corpus: every case file under a folder, loaded, validated and expanded.

A malformed file is reported (file, line, key) and skipped; the other files still load.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from qdq_conformance.resources import cases_dir

from .case import ConcreteCase
from .expand import Template, expand
from .loader import CaseFileError, load_yaml
from .schema import validate

CASES_DIR = cases_dir()


@dataclass
class Corpus:
    cases: list[ConcreteCase] = field(default_factory=list)
    errors: list[CaseFileError] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)


def case_files(root: Path = CASES_DIR) -> list[Path]:
    return sorted(p for p in root.rglob("*.yaml") if p.is_file())


def load_file(path: Path, tiers: Sequence[str] | None = None) -> list[ConcreteCase]:
    """The concrete cases of one case file (raises CaseFileError); only templates of ``tiers`` (default: all)
    are expanded, so unselected large-tier cases cost nothing."""
    doc = load_yaml(path)
    validate(doc, path)
    seen: dict[str, int] = {}
    cases: list[ConcreteCase] = []
    for item in doc["cases"]:
        tpl = Template(item, str(path))
        if item["id"] in seen:
            raise CaseFileError(path, tpl.line("id"), f"{item['id']}.id",
                                f"duplicate template id (first at line {seen[item['id']]})")
        seen[item["id"]] = tpl.line("id")
        if tiers is not None and item.get("tier", "default") not in tiers:
            continue
        try:
            cases.extend(expand(tpl))
        except CaseFileError:
            raise
        except Exception as e:  # a generator defect must still name the case that triggered it
            raise CaseFileError(path, tpl.line(), item["id"], f"generator error: {type(e).__name__}: {e}") from e
    return cases


def load(paths: Iterable[Path] | None = None, *, tiers: Sequence[str] = ("default",),
         select: Sequence[str] = ()) -> Corpus:
    """Load every case file (default: all of ``cases/``), keep the tiers asked for and ids matching ``select``
    (glob patterns; all when empty). Errors are collected, not raised."""
    corpus = Corpus()
    for path in (list(paths) if paths is not None else case_files()):
        corpus.files.append(path)
        try:
            cases = load_file(path, tiers)
        except CaseFileError as e:
            corpus.errors.append(e)
            continue
        corpus.cases.extend(c for c in cases if c.tier in tiers and
                            (not select or any(fnmatch.fnmatchcase(c.id, pat) for pat in select)))
    first: dict[str, ConcreteCase] = {}
    unique = []
    for c in corpus.cases:
        if c.id in first:
            corpus.errors.append(CaseFileError(c.file, c.line, c.template, f"case id {c.id} is also produced by "
                                               f"{first[c.id].file}:{first[c.id].line}"))
            continue
        first[c.id] = c
        unique.append(c)
    corpus.cases = unique
    return corpus
