"""The ambiguity catalogue is well formed and every entry the code cites exists (and every entry is cited)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from qdq_conformance.ambiguities import Reading, ReadingKey, catalogue, operator_versions, reading_key
from qdq_conformance.mutants import REGISTRY, names
from qdq_conformance.reports.render import followed

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
    assert (page.read_text(encoding="utf-8")
            == markdown()), "run: qdq-conformance ambiguities --markdown > " + SPEC_NOTES
    assert all(f"\n## {entry}\n" in page.read_text(encoding="utf-8") for entry in catalogue())


def _normal(text: str) -> str:
    """Text compared for quoting: no whitespace, backticks or quote marks, lower case (the versions' pages
    differ in those only)."""
    return re.sub(r"[\s`'\"‘’]", "", text).lower()


def _operator_texts(operators: tuple[str, ...]) -> str:
    """The text of every operator version an entry names ("QuantizeLinear 10-28", "com.microsoft
    QuantizeLinear 1"): for ai.onnx the schema's description, attributes, inputs, outputs and type
    constraints (onnx.defs); for com.microsoft and com.amd.quark the text opspecs transcribes from their
    pages. ONNX's Cast text is added: QuantizeLinear's conversions to float8 are Cast's."""
    import onnx.defs

    from qdq_conformance import opspecs

    parts = [onnx.defs.get_schema("Cast", 25).doc]
    for ref in operators:
        domain, name, wanted = operator_versions(ref)
        if domain == opspecs.AI_ONNX and not any(s.name == name for s in opspecs.all_specs()):
            # an ai.onnx operator around the quantization nodes (Sigmoid, Softmax, MatMulInteger): its
            # schema's text and its inputs' and outputs' descriptions
            for v in wanted:
                if onnx.defs.has(name) and onnx.defs.get_schema(name, v).since_version == v:
                    schema = onnx.defs.get_schema(name, v)
                    parts += [schema.doc, *(f.description for f in (*schema.inputs, *schema.outputs))]
            continue
        for spec in opspecs.all_specs():
            if spec.name == name and spec.domain == domain and spec.version in wanted:
                parts.append(spec.doc)
                if spec.domain == opspecs.AI_ONNX:
                    schema = onnx.defs.get_schema(name, spec.version)
                    parts += [a.description for a in schema.attributes.values()]
                    parts += [f.description for f in (*schema.inputs, *schema.outputs)]
                    parts += [t.description for t in schema.type_constraints]
    return _normal(" ".join(parts))


#: readings whose words are in an ONNX document other than the operators' pages (quoted with its name)
OUTSIDE_THE_OPERATOR_PAGES = {"nan-to-nanless-float:max-finite", "nan-to-nanless-float:negative-zero",
                              "nan-to-nanless-float:any"}


def test_every_reading_quotes_the_words_that_permit_it():
    """Issue 37's audit: a reading is what the text's words permit, never what some backend does. Each reading
    quotes the words, and they are found in the text of one of its entry's operator versions."""
    for a in catalogue().values():
        text = _operator_texts(a.operators)
        for name, quote in a.quotes.items():
            key = reading_key(a.id, name)
            assert len(quote) > 10, key
            if key in OUTSIDE_THE_OPERATOR_PAGES:
                assert quote.startswith("ONNX docs/technical/"), key
                continue
            assert _normal(quote) in text, f"{key}: {quote!r} is not in the text of {', '.join(a.operators)}"


def test_readings_no_text_permits_are_gone():
    """float-zero-point:ignored is no reading: "the quantization formula remains the same for consistency"."""
    assert "ignored" not in catalogue()["float-zero-point"].readings
    assert REGISTRY["float8-zero-point-ignored"].kind == "defect"


def test_a_reading_key_is_formatted_and_read_back_in_one_place():
    """``entry:reading``; a combined reading's name holds another entry's key, so a key splits at its first
    ``:`` (no entry id holds one)."""
    r = Reading("dq-precision", f"float32+{reading_key('int32-zero-point', 'ignored')}", (np.zeros(1),))
    assert r.key == "dq-precision:float32+int32-zero-point:ignored"
    assert ReadingKey.parse(r.key) == ("dq-precision", r.name) and str(ReadingKey.parse(r.key)) == r.key
    assert all(":" not in a for a in catalogue())
    for bad in ("dq-precision", ":float32", "dq-precision:", ""):
        with pytest.raises(ValueError, match="not a reading key"):
            ReadingKey.parse(bad)


def test_every_mutant_reading_is_a_catalogued_one():
    names()  # (every mutant module imported: the registry full)
    for m in REGISTRY.values():
        if m.reading:
            entry, name = ReadingKey.parse(m.reading)
            assert name in catalogue()[entry].readings, m.id


def test_the_readings_table_reads_keys_and_survives_a_bad_one():
    rec = {"case_status": "implementation-defined", "status": "implementation-defined",
           "ambiguity": "dql-nan"}
    assert followed({**rec, "reading": "dql-nan:ignored+dql-zero:guard-one"}) == ("dql-nan",
                                                                                   "ignored+dql-zero:guard-one")
    assert followed({**rec, "reading": "no key"}) == ("dql-nan", "no key")  # type: ignore[arg-type]
