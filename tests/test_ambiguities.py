"""The ambiguity catalogue is well formed and every entry the code cites exists (and every entry is cited)."""

from __future__ import annotations

import re
from pathlib import Path

from qdq_conformance.ambiguities import catalogue

ROOT = Path(__file__).resolve().parents[1]


def test_catalogue_has_the_required_entries():
    ids = set(catalogue())
    for required in ("nan-to-integer", "dql-zero", "dql-nan", "float-zero-point", "int32-zero-point",
                     "division-precision", "dq-precision", "block-size-si-1", "v10-one-element-scale"):
        assert required in ids
    for a in catalogue().values():
        assert len(a.readings) >= 2 and a.kernel and a.spec and a.question


def test_every_citation_in_the_kernel_names_a_catalogue_entry_and_every_entry_is_cited():
    sources = "\n".join(p.read_text() for p in (ROOT / "conformance").rglob("*.py"))
    cited = set(re.findall(r"[Aa]mbiguity catalogue: `*([a-z0-9-]+)", sources))
    ids = set(catalogue())
    assert cited - ids == set(), f"cited but not catalogued: {cited - ids}"
    uncited = {i for i in ids if i not in sources}
    assert uncited == set(), f"catalogued but never cited in the kernel: {uncited}"


def test_spec_notes_page_is_the_rendered_catalogue():
    """docs/spec-notes.md is rendered from the catalogue, never edited by hand: the two agree."""
    from pathlib import Path

    from qdq_conformance.ambiguities import SPEC_NOTES, catalogue, markdown

    page = Path(__file__).resolve().parents[1] / SPEC_NOTES
    assert page.read_text(encoding="utf-8") == markdown(), "run: qdq-conformance ambiguities --markdown > " + SPEC_NOTES
    assert all(f"\n## {entry}\n" in page.read_text(encoding="utf-8") for entry in catalogue())
