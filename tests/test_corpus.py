"""The case corpus: every file valid, full coverage, errors that name file / line / key, export layout."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx.backend.test.loader import load_model_tests

from qdq_conformance.ambiguities import catalogue
from qdq_conformance.compare import compare
from qdq_conformance.generators.corpus import CASES_DIR, case_files, load, load_file
from qdq_conformance.generators.coverage import coverage
from qdq_conformance.generators.export import export
from qdq_conformance.generators.loader import CaseFileError
from qdq_conformance.reference import run
from qdq_conformance.rules import RULES


def test_every_case_file_loads_without_error(corpus):
    assert corpus.errors == []
    assert len(corpus.files) >= 10
    assert len(corpus.cases) > 15000


def test_expanding_dequantize_cases_warns_nothing():
    """generate and coverage print what expansion warns: numpy's RuntimeWarning "overflow encountered in
    multiply" did, from the kernel's float32 dequantization, whose inf is the spec's answer (the dequantize
    case files, expanded here without the cache, are where it came from)."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for path in case_files():
            if path.stem.startswith("dequantize_"):
                load_file(path, ("default",))
    assert [f"{w.filename}:{w.lineno}: {w.message}" for w in caught] == []


def test_ids_are_unique_readable_and_name_operator_and_version(corpus):
    ids = [c.id for c in corpus.cases]
    assert len(ids) == len(set(ids))
    for c in corpus.cases[:: max(1, len(ids) // 500)]:
        assert c.id.replace("-", "").isalnum() and c.id == c.id.lower()
        if getattr(c, "is_graph", False):  # graph-<template>-<placeholder values>-o<opset>
            assert c.id.startswith(f"graph-{c.template}") and c.id.endswith(f"-o{c.version}")
        else:
            assert f"{c.op.lower()}-{c.version}-{c.template}" in c.id


def test_every_case_cites_its_clause_and_status_fields(corpus):
    for c in corpus.cases:
        assert c.clause.text and c.description
        if c.status == "implementation-defined":
            assert c.ambiguity in catalogue()
        if c.status == "invalid":
            assert c.rule in RULES and c.expected is None
        else:
            assert c.expected is not None


def test_coverage_has_no_gap(corpus):
    result = coverage(corpus.cases)
    gaps = {c.key: c.gaps() for c in result if c.gaps()}
    assert gaps == {}
    ai = [c for c in result if c.key.startswith("ai.onnx")]
    assert sum(c.types_allowed for c in ai) == 1701
    assert sum(c.types_covered for c in ai) == 1701
    assert {c.key for c in result} >= {"com.microsoft::QuantizeLinear-1",
                                       "com.amd.quark::ExtendedDequantizeLinear-1"}


def test_coverage_crosses_parameter_forms_so_a_removed_family_is_a_gap(corpus):
    """Zero-point presence, axis form and scale shape are crossed with the granularity: without the toolchain
    configurations (or without the negative-scale files) the corpus shows gaps by name, not "0 gaps"."""
    def gaps_without(*names: str) -> dict[str, list[str]]:
        kept = [c for c in corpus.cases if Path(c.file).name not in names]
        return {c.key: c.gaps() for c in coverage(kept) if c.gaps()}

    gaps = gaps_without("dequantize_toolchain.yaml")
    assert "parameters: per-axis axis default without zero point" in gaps["ai.onnx::DequantizeLinear-13"]
    assert "parameters: per-axis axis negative without zero point" in gaps["ai.onnx::DequantizeLinear-21"]
    assert "parameters: blocked axis default without zero point" in gaps["ai.onnx::DequantizeLinear-28"]
    assert "parameters: per-tensor [1] scale without zero point" in gaps["ai.onnx::DequantizeLinear-10"]
    # (quark's per-axis default without zero point is now also in dequantize_layouts.yaml's uint32 template)
    quark = gaps["com.amd.quark::ExtendedDequantizeLinear-1"]
    assert "parameters: per-tensor [1] scale without zero point" in quark
    assert all(g.startswith("parameters: ") for found in gaps.values() for g in found)
    assert all(not k.startswith("ai.onnx::QuantizeLinear") for k in gaps)
    negative = gaps_without("quantize_negative_scales.yaml", "dequantize_negative_scales.yaml")
    assert "parameters: per-tensor negative scale" in negative["ai.onnx::QuantizeLinear-10"]
    assert "parameters: blocked negative scale" in negative["ai.onnx::DequantizeLinear-21"]
    assert "parameters: per-axis negative scale" in negative["com.microsoft::QuantizeLinear-1"]
    cov = {c.key: c for c in coverage(corpus.cases)}
    # com.microsoft reads a missing axis as per-tensor: no default-axis form is asked of it.
    assert not any("default" in r for r in cov["com.microsoft::DequantizeLinear-1"].required["parameters"])
    assert ("per-axis axis default with zero "
            "point") in cov["ai.onnx::DequantizeLinear-13"].required["parameters"]
    assert not cov["ai.onnx::DynamicQuantizeLinear-11"].required["parameters"]


def test_coverage_crosses_layouts_with_types_so_a_toolchain_configuration_is_a_gap(corpus):
    """Issue 37: rank x normalized axis x axis spelling x types of per-axis and blocked nodes. The issue's
    named configurations are covered; without the layouts files, those the corpus lacked show as gaps."""
    kept = [c for c in corpus.cases
            if Path(c.file).name not in ("quantize_layouts.yaml", "dequantize_layouts.yaml")]
    gaps = {c.key: set(c.gaps()) for c in coverage(kept)}
    named = {
        "ai.onnx::DequantizeLinear-21": ["per-axis rank 2 axis 0 positive int4/float",
                                         "per-axis rank 2 axis 1 default int4/float",
                                         "per-axis rank 4 axis 0 negative int4/float",
                                         "per-axis rank 2 axis 1 positive float8e4m3fn/float",
                                         "per-axis rank 4 axis 0 positive float8e5m2/float"],
        "ai.onnx::DequantizeLinear-19": ["per-axis rank 2 axis 1 negative float8e4m3fn/float",
                                         "per-axis rank 2 axis 0 positive int8/float16",
                                         "per-axis rank 4 axis 1 default int8/float16"],
        "ai.onnx::QuantizeLinear-19": ["per-axis rank 2 axis 1 positive int8/float16",
                                       "per-axis rank 4 axis 0 positive float8e4m3fn/float16"],
        "com.microsoft::DequantizeLinear-1": ["per-axis rank 2 axis 0 positive int8/float",
                                              "per-axis rank 4 axis 1 negative uint8/float",
                                              "per-axis rank 1 axis 0 positive int32/float"],
    }
    # without the layouts files (what the toolchain files alone leave open)
    missing = {"ai.onnx::DequantizeLinear-21": ["blocked rank 2 axis 0 negative float8e4m3fn/float",
                                                "blocked rank 2 axis 0 negative int8/float16"],
               "ai.onnx::DequantizeLinear-19": ["per-axis rank 1 axis 0 positive float8e4m3fn/float",
                                                "per-axis rank 1 axis 0 negative int8/float16"],
               "ai.onnx::QuantizeLinear-19": ["per-axis rank 1 axis 0 positive float8e4m3fn/float16"],
               "com.microsoft::DequantizeLinear-1": ["per-axis rank 1 axis 0 positive int8/float16"]}
    for key, layouts in missing.items():
        for layout in layouts:
            assert f"layouts: {layout}" in gaps[key], (key, layout)
    full = {c.key: c for c in coverage(corpus.cases)}
    for key, layouts in missing.items():
        assert set(layouts) <= full[key].covered["layouts"], key
    for key, layouts in named.items():
        assert {f"per-axis {lay[len('per-axis '):]}" for lay in layouts} <= full[key].covered["layouts"]
    # com.microsoft reads a missing axis as per-tensor: no default spelling is asked of it.
    assert not any(" default " in r for r in full["com.microsoft::DequantizeLinear-1"].required["layouts"])
    required = full["ai.onnx::DequantizeLinear-21"].required["layouts"]
    assert "blocked rank 2 axis 1 default int4/float" in required


def test_equal_dimensions_and_every_axis_spelling():
    """``dims: equal`` gives every dimension the quantization axis's length (so a wrong axis fits the scale);
    ``axis_attribute: all`` writes the axis positive, negative and leaves it out."""
    cases = load([CASES_DIR / "quantize_equal_dims.yaml"]).cases
    per_axis = [c for c in cases if c.granularity == "per-axis"]
    assert per_axis and all(len(set(c.inputs[0][1].shape)) == 1 for c in per_axis)
    assert {c.detail.get("dims") for c in cases} == {"equal"}
    assert any("axis" not in c.attrs for c in per_axis) and any(c.attrs.get("axis", 0) < 0 for c in per_axis)
    layouts = [c for c in load([CASES_DIR / "dequantize_layouts.yaml"]).cases
               if c.template == "layouts" and c.version == 21 and c.types["x"] == "int4"]
    spelled = {(c.detail["rank"], c.attrs.get("axis")) for c in layouts}
    assert spelled == {(1, 0), (1, -1), (2, 0), (2, -2), (2, 1), (2, -1), (2, None), (4, 0), (4, -4), (4, 1),
                       (4, -3), (4, None)}


def test_every_operator_version_is_tested_directly(corpus):
    from qdq_conformance import opspecs

    tested = {(c.domain, c.op, c.version) for c in corpus.cases}
    for spec in opspecs.all_specs():
        assert (spec.domain, spec.name, spec.version) in tested


def test_large_tier_is_opt_in():
    files = [CASES_DIR / "quantize_shapes.yaml"]
    default = load(files)
    both = load(files, tiers=("default", "large"))
    large = [c for c in both.cases if c.tier == "large"]
    assert large and all(c.tier == "default" for c in default.cases)
    assert all(c.inputs[0][1].size >= 1_000_000 for c in large)


# --- malformed case files
# --------------------------------------------------------------------------------------

GOOD = """\
cases:
  - id: demo
    description: d
    spec: {text: "y = saturate((x / y_scale) + y_zero_point)"}
    operator: QuantizeLinear
    versions: [13]
    family: basic
    status: normative
    types: {x: float, y: uint8}
    inputs:
      x: {values: [1, 2]}
"""


def _err(tmp_path, text, name="bad.yaml"):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    with pytest.raises(CaseFileError) as info:
        load_file(p)
    assert str(p) in str(info.value)
    return info.value


def test_good_file_loads(tmp_path):
    p = tmp_path / "good.yaml"
    p.write_text(GOOD)
    (case,) = load_file(p)
    assert case.id == "quantizelinear-13-demo-float-uint8"


def test_unknown_key_names_file_line_and_key(tmp_path):
    e = _err(tmp_path, GOOD.replace("    family: basic\n", "    family: basic\n    colour: red\n"))
    assert e.line == 8 and e.key == "cases[0].colour" and "unknown key" in e.message


def test_closed_vocabularies(tmp_path):
    e = _err(tmp_path, GOOD.replace("family: basic", "family: fancy"))
    assert e.line == 7 and e.key == "cases[0].family"
    e = _err(tmp_path, GOOD.replace("y: uint8}", "y: uint9}"))
    assert e.key.startswith("cases[0].types.y")


def test_missing_key_and_wrong_type(tmp_path):
    e = _err(tmp_path, GOOD.replace("    status: normative\n", ""))
    assert "status" in e.message
    e = _err(tmp_path, GOOD.replace("versions: [13]", "versions: thirteen"))
    assert e.key == "cases[0].versions" and e.line == 6


def test_python_tags_are_refused(tmp_path):
    e = _err(tmp_path,
             GOOD.replace("description: d", "description: !!python/object/apply:os.system ['true']"))
    assert e.line == 3 and "tags" in e.message


def test_yaml_syntax_error_has_a_line(tmp_path):
    e = _err(tmp_path, GOOD + "  - id: [unclosed\n")
    assert e.line is not None and "invalid YAML" in e.message


def test_ambiguity_must_be_catalogued(tmp_path):
    e = _err(tmp_path,
             GOOD.replace("status: normative", "status: implementation-defined\n    ambiguity: nope"))
    assert "ambiguity catalogue" in e.message


def test_golden_mismatch_stops_generation(tmp_path):
    e = _err(tmp_path, GOOD + "    expected:\n      y: [1, 3]\n")
    assert e.key == "demo.expected" and "disagrees with the oracle" in e.message


def test_invalid_case_must_break_the_named_rule(tmp_path):
    bad = GOOD.replace("status: normative", "status: invalid\n    rule: QDQ008")
    e = _err(tmp_path, bad)
    assert "accepts this model" in e.message


def test_a_bad_file_does_not_stop_the_others(tmp_path):
    (tmp_path / "a.yaml").write_text(GOOD)
    (tmp_path / "b.yaml").write_text(GOOD.replace("family: basic", "family: nope"))
    result = load(case_files(tmp_path))
    assert len(result.cases) == 1 and len(result.errors) == 1
    assert "b.yaml:7" in str(result.errors[0])


# --- export
# ----------------------------------------------------------------------------------------------------

SAMPLE = ["quantizelinear-21-ties-float-int4", "dequantizelinear-25-all-codes-int2-float16",
          "quantizelinear-28-saturate-inf-float-float8e4m3fn-saturate0",
          "dynamicquantizelinear-11-mixed-signs", "dynamicquantizelinear-11-nan",
          "quantizelinear-21-block-size-below-range-*",
          "quantizelinear-23-blocked-float-int4-blocked-partial-axis1-r2"]


@pytest.fixture(scope="module")
def exported(tmp_path_factory, corpus):
    out = tmp_path_factory.mktemp("export") / "qdq"
    import fnmatch

    cases = [c for c in corpus.cases if any(fnmatch.fnmatchcase(c.id, p) for p in SAMPLE)]
    assert len(cases) >= 6
    manifest = export(cases, out)
    return out, manifest, cases


def test_export_is_readable_by_onnx_loader_and_matches_the_oracle(exported):
    out, manifest, cases = exported
    tests = [(kind, t) for kind in manifest["kinds"] for t in load_model_tests(data_dir=str(out), kind=kind)]
    assert len(tests) == 2 * len(cases)
    # (SAMPLE has all)
    assert {kind for kind, _ in tests} == {"normative", "implementation-defined", "invalid"}
    by_folder = {e["folders"][form]: (e, form) for e in manifest["cases"] for form in e["folders"]}
    for kind, t in tests:
        entry, form = by_folder[f"{kind}/{os.path.basename(t.model_dir)}"]
        assert entry["kind"] == entry["status"] == kind
        model = onnx.load(os.path.join(t.model_dir, "model.onnx"))
        onnx.checker.check_model(model)
        data = Path(t.model_dir) / "test_data_set_0"
        inputs = [onnx.numpy_helper.to_array(onnx.load_tensor(str(p)))
                  for p in sorted(data.glob("input_*.pb"))]
        outputs = [onnx.numpy_helper.to_array(onnx.load_tensor(str(p)))
                   for p in sorted(data.glob("output_*.pb"))]
        feeds = {i.name: a for i, a in zip(model.graph.input, inputs, strict=True)}
        assert len(inputs) == len(model.graph.input)
        if kind != "normative":  # an output-comparing runner finds no output to count as a pass
            assert outputs == [] and not (Path(t.model_dir) / "data.json").exists()
        if kind == "invalid":
            continue
        # exact: the loader's
        assert (t.rtol, t.atol) == ((0.0, 0.0) if kind == "normative" else (1e-3, 1e-7))
        if kind == "implementation-defined":
            outputs = [onnx.numpy_helper.to_array(onnx.load_tensor(str(p)))
                       for p in sorted((Path(t.model_dir) / "expected").glob("output_*.pb"))]
        got = run(model, feeds)
        assert outputs and len(outputs) == len(got)
        for exp, act in zip(outputs, got, strict=True):
            assert compare(exp, act) is None, entry["id"]
        if form == "initializer":
            assert len(model.graph.input) <= 1 and model.graph.initializer


def test_manifest_describes_every_case(exported):
    out, manifest, cases = exported
    on_disk = json.loads((out / "manifest.json").read_text())
    assert on_disk == manifest and manifest["case_count"] == len(cases)
    for e in manifest["cases"]:
        for key in ("id", "operator", "domain", "version", "inputs", "outputs", "attributes", "granularity",
                    "family", "status", "ambiguity", "comparison", "template"):
            assert key in e
        assert manifest["templates"][e["template"]]["spec"]["text"]
        assert all(i["element_type"] for i in e["inputs"] if i["shape"] is not None)


def test_export_twice_gives_identical_bytes(exported, tmp_path):
    out, _, cases = exported
    again = tmp_path / "qdq"
    export(cases, again)
    first = sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file())
    second = sorted(p.relative_to(again) for p in again.rglob("*") if p.is_file())
    assert first == second
    for rel in first:
        assert (out / rel).read_bytes() == (again / rel).read_bytes(), rel


def test_sub_byte_tensors_are_packed_in_the_export(exported):
    out, manifest, _ = exported
    entry = next(e for e in manifest["cases"] if e["id"] == "dequantizelinear-25-all-codes-int2-float16")
    t = onnx.load_tensor(str(out / entry["folders"]["runtime"] / "test_data_set_0" / "input_0.pb"))
    assert entry["folders"]["runtime"].startswith("normative/test_")
    assert t.data_type == onnx.TensorProto.INT2 and len(t.raw_data) == 1  # 4 codes in one byte
    assert np.array_equal(onnx.numpy_helper.to_array(t).astype(int), [0, 1, -2, -1])


def test_normative_cases_whose_answer_depends_on_an_ambiguity_are_implementation_defined(corpus):
    by_id = {c.id: c for c in corpus.cases}
    # int16 codes into float16: x - x_zero_point is not exact in float16 (literal vs widened product).
    c = by_id["dequantizelinear-21-per-axis-types-int16-float16-axis2-r3"]
    assert (c.status, c.ambiguity) == ("implementation-defined", "dq-precision")
    # int8 codes into float16 are exact either way: normative.
    assert by_id["dequantizelinear-21-per-axis-types-int8-float16-axis2-r3"].status == "normative"


def test_generate_in_parallel_writes_the_same_bytes_as_one_worker(tmp_path, monkeypatch):
    """... and through the expansion cache (cold: written; warm: read) the same bytes as without it."""
    from qdq_conformance.generators.corpus import case_files
    from qdq_conformance.generators.parallel import generate

    files = [p for p in case_files() if p.stem in ("mutant_killers", "dequantize_edges")]
    assert len(files) >= 2
    monkeypatch.setenv("QDQ_CACHE_DIR", str(tmp_path / "cache"))
    trees = []
    for jobs, cached in ((1, "0"), (2, "1"), (1, "1")):  # (no cache; then the cache empty, then filled)
        monkeypatch.setenv("QDQ_CORPUS_CACHE", cached)
        out = tmp_path / f"j{jobs}-{cached}{len(trees)}"
        _, errors = generate(files, out, ("runtime",), jobs=jobs)
        assert not errors
        trees.append({p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()})
    assert len(list((tmp_path / "cache" / "corpus").glob("*.pkl"))) == len(files)
    assert trees[0] == trees[1] == trees[2] and len(trees[0]) > 10
