"""tract and tinygrad: each message marker checked on the installed release (one model it refuses with that
fragment), the environment the backends set, clang named when it is missing, markers no whole run matched
reported, and --help naming every built-in."""

from __future__ import annotations

import os
import re
import shutil

import ml_dtypes
import numpy as np
import pytest
from onnx import TensorProto as T
from onnx import helper, numpy_helper

from qdq_conformance.backends.base import NotApplicable, Rejected, Unsupported
from qdq_conformance.backends.markers import Marker, MarkerSet, MarkerWatch
from qdq_conformance.backends.names import HELP, help_text
from qdq_conformance.backends.registry import BUILTIN, MARKERS, create, unavailable


def _model(op, version, inputs, inits, out_type, domain="", **attrs):
    """One ``op`` node: ``inputs`` (name, elem type, shape) fed at run time, ``inits`` initializers in input
    order after them."""
    names = [n for n, _, _ in inputs] + [t.name for t in inits]
    node = helper.make_node(op, names, ["y"], domain=domain, **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
                              [helper.make_tensor_value_info("y", out_type, None)], list(inits))
    opsets = [helper.make_opsetid("", version if not domain else 21)]
    if domain:
        opsets.append(helper.make_opsetid(domain, 1))
    return helper.make_model(graph, opset_imports=opsets)


def _init(name, array, elem=None):
    if elem is None:
        return numpy_helper.from_array(np.asarray(array), name)
    return helper.make_tensor(name, elem, np.shape(array), np.asarray(array).reshape(-1).tolist())


F32_X = ("x", T.FLOAT, [4])
X4 = {"x": np.array([1, 2, 3, 4], np.float32)}

#: marker fragment -> (model, feeds) the runtime refuses with it. Every marker of the backend has one
#: (test_every_marker_has_a_model).
TRACT_REFUSALS = {
    "must be a const": (_model("QuantizeLinear", 21, [F32_X, ("s", T.FLOAT, []), ("z", T.UINT8, [])], [],
                               T.UINT8), {**X4, "s": np.array(1, np.float32), "z": np.array(0, np.uint8)}),
    "Unknown DatumType": (_model("DequantizeLinear", 23, [("x", T.INT8, [2])],
                                 [_init("s", np.array(1, ml_dtypes.bfloat16))], T.FLOAT,
                                 output_dtype=T.FLOAT),
                          {"x": np.array([1, 2], np.int8)}),
    "unknown ONNX TensorProto.DataType": (
        _model("DequantizeLinear", 24, [("x", T.INT32, [1])],
               [helper.make_tensor("s", T.FLOAT8E8M0, [], [127])], T.FLOAT, output_dtype=T.FLOAT),
        {"x": np.array([1], np.int32)}),
    "quantization is not supported": (
        _model("QuantizeLinear", 21, [F32_X],
               [_init("s", np.ones(2, np.float32)), _init("z", np.zeros(2, np.uint8))], T.UINT8, axis=0,
               block_size=2), X4),
    "unsupported per-axis output type": (
        _model("QuantizeLinear", 1, [("x", T.FLOAT, [2, 2])],
               [_init("s", np.ones(2, np.float32)), _init("z", np.zeros(2, np.int16))], T.INT16,
               domain="com.microsoft", axis=0), {"x": np.ones((2, 2), np.float32)}),
    "Unimplemented(": (_model("ExtendedQuantizeLinear", 1, [F32_X],
                              [_init("s", np.float32(1)), _init("z", np.int8(0))], T.INT8,
                              domain="com.amd.quark"), X4),
    "Unsupported type": (_model("DequantizeLinear", 23, [("x", T.INT16, [2])], [_init("s", np.float32(1))],
                                T.FLOAT16, output_dtype=T.FLOAT16), {"x": np.array([1, 2], np.int16)}),
    "datum_type == F32: Impossible to unify": (
        _model("QuantizeLinear", 21, [("x", T.FLOAT16, [4])],
               [_init("s", np.float16(1)), _init("z", np.uint8(0))],
               T.UINT8), {"x": np.array([1, 2, 3, 4], np.float16)}),
}

TINYGRAD_REFUSALS = {
    "is not a valid OnnxDataType": (
        _model("DequantizeLinear", 24, [("x", T.INT32, [1])],
               [helper.make_tensor("s", T.FLOAT8E8M0, [], [127])], T.FLOAT), {"x": np.array([1], np.int32)}),
    "is not a valid Domain": TRACT_REFUSALS["Unimplemented("],
    "no fmt dtype for": (_model("QuantizeLinear", 21, [F32_X], [_init("s", np.array(1, ml_dtypes.bfloat16)),
                                                                _init("z", np.uint8(0))], T.UINT8), X4),
    "unexpected keyword argument": (_model("DequantizeLinear", 23, [("x", T.INT8, [2])],
                                           [_init("s", np.float32(1))], T.FLOAT, output_dtype=T.FLOAT),
                                    {"x": np.array([1, 2], np.int8)}),
}


@pytest.mark.parametrize("backend, refusals", [("tract", TRACT_REFUSALS), ("tinygrad", TINYGRAD_REFUSALS)])
def test_every_marker_has_a_model(backend, refusals):
    assert sorted(m.fragment for m in MARKERS[backend].markers) == sorted(refusals)


def _installed(name):
    why = unavailable(name)
    if why:
        pytest.skip(why)
    return create(name)


REFUSALS = {"tract": TRACT_REFUSALS, "tinygrad": TINYGRAD_REFUSALS}
MARKER_REFUSALS = [(name, fragment) for name, refusals in REFUSALS.items() for fragment in sorted(refusals)]


@pytest.mark.parametrize(("name", "fragment"), MARKER_REFUSALS, ids=[f"{n}-{f}" for n, f in MARKER_REFUSALS])
def test_marker_matches_its_refusal_on_the_installed_release(name, fragment):
    backend = _installed(name)
    model, feeds = REFUSALS[name][fragment]
    with pytest.raises(Unsupported) as e:
        backend.run(model, feeds)
    assert not isinstance(e.value, NotApplicable)
    assert fragment in str(e.value) and f"{name} says {fragment!r}" in str(e.value)


def test_tract_runs_a_quantization_and_rejects_what_no_marker_explains():
    backend = _installed("tract")
    model = _model("QuantizeLinear", 21, [F32_X], [_init("s", np.float32(2)), _init("z", np.uint8(3))],
                   T.UINT8)
    (y,) = backend.run(model, X4)
    assert y.dtype == np.uint8 and y.tolist() == [3, 4, 5, 5]  # 0.5 -> 0 and 1.5 -> 2: ties to even
    bad = _model("QuantizeLinear", 21, [F32_X], [_init("s", np.ones(3, np.float32))], T.UINT8, axis=5)
    with pytest.raises(Rejected):
        backend.run(bad, X4)


def test_tract_backend_sets_rust_backtrace_off(monkeypatch):
    monkeypatch.setenv("RUST_BACKTRACE", "1")
    _installed("tract")
    assert os.environ["RUST_BACKTRACE"] == "0" and os.environ["RUST_LIB_BACKTRACE"] == "0"


@pytest.mark.parametrize("name", ["tract", "tinygrad"])
def test_exotic_graph_inputs_are_not_applicable(name):
    backend = _installed(name)
    model = _model("DequantizeLinear", 21, [("x", T.FLOAT8E4M3FN, [2])], [_init("s", np.float32(1))], T.FLOAT)
    with pytest.raises(NotApplicable, match="float8e4m3fn"):
        backend.run(model, {"x": np.zeros(2, ml_dtypes.float8_e4m3fn)})


def test_tinygrad_runs_a_quantization():
    backend = _installed("tinygrad")
    model = _model("DequantizeLinear", 21, [("x", T.INT8, [3])],
                   [_init("s", np.float32(0.5)), _init("z", np.int8(1))], T.FLOAT)
    (y,) = backend.run(model, {"x": np.array([1, 3, -1], np.int8)})
    assert y.dtype == np.float32 and y.tolist() == [0.0, 1.0, -1.0]


def test_tinygrad_names_clang_when_it_is_missing(monkeypatch, tmp_path):
    pytest.importorskip("tinygrad")  # (without it, the backend cannot be created for that reason first)
    monkeypatch.setenv("CC", str(tmp_path / "no-such-clang"))
    why = unavailable("tinygrad")
    assert why is not None and "no-such-clang" in why and "apt-get install clang" in why
    assert "\n" not in why


def test_tinygrad_finds_clang_on_path_by_default(monkeypatch):
    monkeypatch.delenv("CC", raising=False)
    if shutil.which("clang") is None:
        pytest.skip("clang is not installed here")
    pytest.importorskip("tinygrad")
    assert unavailable("tinygrad") is None


def test_a_missing_runtime_cannot_be_created_naming_its_extra(monkeypatch):
    import sys

    from qdq_conformance.backends.base import BackendUnavailable
    from qdq_conformance.install import install_hint

    for module in ("tract", "tinygrad", "tinygrad.nn.onnx"):
        monkeypatch.setitem(sys.modules, module, None)
    for name in ("tract", "tinygrad"):
        # (the line that installs the extra where this package came from: tests/test_install_lines.py)
        with pytest.raises(BackendUnavailable, match=re.escape(install_hint(name))):
            create(name)


def test_marker_watch_reports_markers_no_refusal_matched_for_the_forms_that_ran():
    ms = MarkerSet("rt", (Marker("const", "runtime scales", ("runtime",)), Marker("Unknown", "types")))
    watch = MarkerWatch(ms)
    watch.see(ms.reason("y_scale must be a const"))
    watch.see(None)
    stale = [s.split(":")[1].strip() for s in watch.stale(["runtime", "initializer"])]
    assert stale == ["'Unknown' (types) matched no refusal of this run (does rt still say it? "
                     "tests/test_new_backends.py checks each marker on the installed release)"]
    fresh = MarkerWatch(ms)
    assert len(fresh.stale(["initializer"])) == 1  # the runtime-form marker is not judged without that form
    assert len(fresh.stale(["runtime"])) == 2
    assert ms.reason("something else") is None


def test_help_names_every_builtin_with_its_line():
    line = help_text()
    for name in BUILTIN:
        assert f"{name} ({HELP[name]})" in line
    assert set(HELP) == set(BUILTIN)
    assert "tract (Sonos tract, extra tract); " in line and "needs clang" in line


def test_compliance_keeps_a_column_from_kept_results_when_the_backend_cannot_run(tmp_path, capsys):
    """A backend the machine cannot run (here: one no registry knows, as iree is on a branch without it) keeps
    its row and column from its kept results, dated; a kept file reads as the results file it came from."""
    from qdq_conformance.cli import main
    from qdq_conformance.reports.compliance import render_files
    from qdq_conformance.results import read
    from qdq_conformance.results.kept import keep
    from qdq_conformance.results.record_schema import KEPT_LEAVES_OUT

    from .results_files import record, write
    from .test_reports import _results

    full = write(tmp_path / "full.jsonl", [
        record(f"quantizelinear-21-case{k}", s, message="m", operator="QuantizeLinear", domain="ai.onnx",
               version=21, types={"x": "float", "y": "int8"}, family="ties", granularity="per-tensor",
               case_status="normative", duration=0.001, attributes={"axis": 1}, comparison="exact",
               spec={"operator": "QuantizeLinear", "versions": "21-28", "text": "t"},
               **({"repro": "print(1)", "inputs": {"x": {"type": "float", "shape": [1], "values": ["1.0"],
                                                          "codes": [0x3F800000], "truncated": False}}}
                  if s == "failed" else {}))
        for k, s in enumerate(["passed", "failed", "unsupported"])])
    kept_dir = tmp_path / "kept"
    kept = keep(full, kept_dir / "nosuchbackend.jsonl.gz")
    head, cases, summary = read(kept)
    assert [c["status"] for c in cases] == ["passed", "failed", "unsupported"] and summary is not None
    assert not any(k in c for c in cases for k in KEPT_LEAVES_OUT) and head["backend"] == "demo"
    # an unsupported case's reason is left out
    assert [("message" in c) for c in cases] == [True, True, False]
    assert keep(full, tmp_path / "again.jsonl.gz").read_bytes() == kept.read_bytes()  # deterministic bytes
    # the table from the kept file is the table from the full one, but for the dates' mark
    a, b = tmp_path / "a.md", tmp_path / "b.md"
    render_files([full], a)
    render_files([kept], b)
    assert a.read_text() == b.read_text()
    md = tmp_path / "c.md"
    _results(tmp_path / "demo.jsonl", ["passed"])
    assert (main(["compliance", "--backends", "demo,nosuchbackend,other", "--results-dir", str(tmp_path),
                  "--reuse", "--kept", str(kept_dir), "--markdown", str(md), "--scoreboard",
                  str(tmp_path / "s.html")])
            == 0)
    out = capsys.readouterr().out
    assert "nosuchbackend: not run (unknown backend 'nosuchbackend'" in out
    assert "other: left out: not run" in out
    text = md.read_text()
    day = head["started"][:10]
    assert f"| demo | 1.0 | {day} (kept) | runtime | 1 | 1 | 1 | 0 | 50.0% |" in text
    assert "demo: not run when this table was regenerated" in text
    assert f"## demo 1.0\n\nResults of {day} (kept), graph forms" in (tmp_path / "findings.md").read_text()
    assert f"(kept results of {day})" in (tmp_path / "s.html").read_text()
    # --from-kept: a backend that could run (here: its results file is there to reuse) takes its kept column
    keep(tmp_path / "demo.jsonl", kept_dir / "demo.jsonl.gz")
    assert (main(["compliance", "--backends", "demo", "--results-dir", str(tmp_path), "--reuse",
                  "--from-kept", "demo", "--kept", str(kept_dir), "--markdown", str(md), "--scoreboard",
                  str(tmp_path / "s.html")])
            == 0)
    assert "demo: not run (--from-kept); its column comes from" in capsys.readouterr().out
    assert "(kept) | runtime | 1 | 0 | 0 | 0 | 100.0% |" in md.read_text()


def test_a_form_nearly_all_unsupported_gets_its_sentence():
    from collections import Counter

    from qdq_conformance.plugin.state import RunState
    from qdq_conformance.plugin.terminal import mostly_unsupported
    from qdq_conformance.runner.expectations import Expectations

    state = RunState("tract", {}, 60.0, False, Expectations(), backend_name="tract")
    state.markers = MarkerWatch(MARKERS["tract"])
    state.form_counts = {"runtime": Counter(unsupported=95, passed=5), "initializer": Counter(unsupported=50,
                                                                                               passed=50)}
    for _ in range(90):
        state.markers.see("y_scale must be a const", "runtime")
    (line,) = mostly_unsupported(state)
    assert line.startswith("runtime form: 95 of 100 case(s) unsupported by tract (5 judged or passed); 90 of "
                           "them because tract says 'must be a const'")
    state.form_counts = {"runtime": Counter(unsupported=95, passed=5)}
    assert mostly_unsupported(state) == []  # one form: the counts above say it already


def test_an_unsupported_case_carries_its_reason_to_the_marker_watch():
    from qdq_conformance.runner.execute import CaseResult

    note = CaseResult("unsupported", "y_scale must be a const [unsupported: ...]", "{}").note("c", "runtime")
    assert note["reason"].startswith("y_scale must be a const")
    assert CaseResult("failed", "values differ", "{}").note("c", "runtime")["reason"] is None


def test_tinygrad_keeps_its_kernels_in_the_suite_cache(tmp_path):
    """tinygrad reads CACHEDB once, when it is imported: the backend's factory sets it before its availability
    check imports tinygrad (a fresh interpreter, as a worker that has not imported tinygrad yet)."""
    import subprocess
    import sys

    pytest.importorskip("tinygrad")
    if shutil.which(os.environ.get("CC") or "clang") is None:
        pytest.skip("clang is not installed here (tinygrad's CPU device needs it)")
    env = {k: v for k, v in os.environ.items() if k not in ("CACHEDB", "DEV")}
    env["QDQ_CACHE_DIR"] = str(tmp_path)
    code = ("from qdq_conformance.backends.registry import create; create('tinygrad'); "
            "from tinygrad.helpers import CACHEDB; print(CACHEDB)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == str(tmp_path / "tinygrad" / "cache.db")


def test_run_without_clang_is_a_usage_error_in_one_line(tmp_path):
    import subprocess
    import sys

    pytest.importorskip("tinygrad")
    env = {**os.environ, "CC": str(tmp_path / "no-clang"), "QDQ_CACHE_DIR": str(tmp_path / "cache")}
    r = subprocess.run([sys.executable, "-m", "qdq_conformance.cli", "run", "--backend", "tinygrad", "--",
                        "-k", "quantizelinear-21-ties-float-uint8"], capture_output=True, text=True, env=env,
                       timeout=300)
    said = [ln for ln in (r.stdout + r.stderr).splitlines() if ln.strip()]
    assert r.returncode == 4, said
    assert [ln for ln in said if "no-clang" in ln] == [
        f"ERROR: --backend=tinygrad: backend 'tinygrad' could not be created: tinygrad's CPU device "
        f"compiles its kernels with '{tmp_path / 'no-clang'}', which is not on PATH (Debian / Ubuntu: "
        "apt-get install clang; or set CC)"]
