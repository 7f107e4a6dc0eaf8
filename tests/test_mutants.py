"""The mutant zoo: every mutant is registered, takes effect, leaves the kernel alone, and is judged like a
real run.

The whole score (`qdq-conformance mutants`, every mutant over the whole corpus) runs in CI; here a
representative part: every mutant on its witness, the scorer on a small case folder, and the scorer's verdict
checked against the runner's own worker path (`run_case`) for the killing case.
"""

from __future__ import annotations

import json
import shutil

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from qdq_conformance.backends.base import Rejected
from qdq_conformance.backends.registry import create
from qdq_conformance.cli import main
from qdq_conformance.compare import compare
from qdq_conformance.errors import SpecViolation
from qdq_conformance.generators.status import changes_answer
from qdq_conformance.mutants import REGISTRY, names
from qdq_conformance.mutants.mutant import GraphWitness
from qdq_conformance.reference import evaluate, ops, quantize
from qdq_conformance.reference.readings import readings
from qdq_conformance.reference.steps import active, using
from qdq_conformance.resources import cases_dir

from .test_compute_families import NEW_FAMILIES as COMPUTE_FAMILIES

MUTANTS = [REGISTRY[n] for n in names()]
WITNESSED = [m for m in MUTANTS if m.witness is not None]


def _outcome(fn):
    try:
        return fn()
    except (SpecViolation, Rejected) as e:
        return f"rejected: {e}"


def _differ(a, b) -> bool:
    if isinstance(a, str) or isinstance(b, str):
        return not (isinstance(a, str) and isinstance(b, str))
    return len(a) != len(b) or any(compare(x, y) is not None for x, y in zip(a, b, strict=True))


def _witness_problem(m) -> str | None:
    """Why mutant ``m``'s witness proves nothing (None when it proves the shortcut). A kill is a wrong value:
    the mutant must compute outputs on its witness that differ from the kernel's, and a refusal of a valid
    model is not one. A mutant that accepts what it must refuse has a witness the kernel refuses and it runs.
    For a shortcut that should be killed, the witness is normative (no catalogued reading changes its
    answer), so a case holding it kills the mutant; for a catalogued reading, the mutant gives exactly that
    reading's answer."""
    w = m.witness()
    kernel = _outcome(w.evaluate)
    if isinstance(w, GraphWitness):  # a graph-rewrite mutant: the rewritten graph on the kernel
        mutated = _outcome(lambda: create(f"mutant:{m.id}").run(w.model(), dict(w.feeds)))
    else:
        with using(m.steps()):
            mutated = _outcome(w.evaluate)
    if m.accepts_invalid:
        if not isinstance(kernel, str):
            return f"the kernel runs its witness ({w.note}): it must be a model the spec refuses"
        return f"it refuses its witness as the kernel does ({mutated})" if isinstance(mutated, str) else None
    if isinstance(kernel, str):
        return f"the kernel refuses its witness ({kernel})"
    if isinstance(mutated, str):
        return f"it only refuses its witness, a refusal is no wrong value ({mutated})"
    if not _differ(kernel, mutated):
        return f"no effect on its witness ({w.note})"
    if isinstance(w, GraphWitness):
        return None
    found = readings(w.domain, w.op, w.version, list(w.inputs), dict(w.attrs), kernel)
    changing = {r.key: r for r in found if changes_answer(r, kernel)}
    if m.kind == "defect" and changing:
        return f"its witness is implementation-defined ({sorted(changing)})"
    if m.kind == "reading" and not (m.reading in changing
                                    and not _differ(list(changing[m.reading].outputs), mutated)):
        return f"it does not give the outputs of {m.reading} on its witness"
    return None


def test_the_zoo():
    assert len(MUTANTS) >= 35
    for m in MUTANTS:
        assert m.id and m.shortcut and len(m.violates) > 20, m.id
        assert (m.witness is None) == (m.equivalent is not None), m.id
        backend = create(f"mutant:{m.id}")
        assert backend.name == f"mutant:{m.id}"
    with pytest.raises(ValueError, match="unknown mutant"):
        create("mutant:no-such-shortcut")


@pytest.mark.parametrize("m", WITNESSED, ids=lambda m: m.id)
def test_witness(m):
    """The shortcut takes effect as a wrong value on its witness (see :func:`_witness_problem`)."""
    problem = _witness_problem(m)
    assert problem is None, f"{m.id}: {problem}"


def test_a_witness_that_only_makes_the_mutant_refuse_is_no_witness():
    """A witness on which the mutant refuses a valid model (here axis-default-0 on a (2, 3) x: the scale of
    length 3 does not fit axis 0) shows no wrong value: the witness test fails on it. The same for a
    witness the mutant computes right, and for a mutant that accepts what it must refuse whose witness the
    kernel runs."""
    from dataclasses import replace

    from qdq_conformance.mutants.mutant import Witness

    refusing = replace(REGISTRY["axis-default-0"], witness=lambda: Witness(
        "QuantizeLinear", 21, [np.ones((2, 3), np.float32), np.array([1, 2, 4], np.float32)], {}, "(2, 3)"))
    assert "only refuses its witness" in (_witness_problem(refusing) or "")
    harmless = replace(REGISTRY["axis-default-0"], witness=lambda: Witness(
        "QuantizeLinear", 21, [np.ones((3, 3), np.float32), np.ones(3, np.float32)], {}, "equal scales"))
    assert "no effect" in (_witness_problem(harmless) or "")
    valid = replace(REGISTRY["block-size-range-unchecked"], witness=harmless.witness)
    assert "the kernel runs its witness" in (_witness_problem(valid) or "")


def _state():
    return (active(), ops.SPEC, quantize.to_integer, quantize.to_float, quantize.divide, quantize.quantize,
            ops.plan_quantize_linear, ops.plan_dequantize_linear,
            dict(quantize.quantize.__kwdefaults__ or {}))


def test_a_mutant_changes_nothing_outside_its_run_even_on_errors():
    before = _state()
    witnesses = [m.witness() for m in WITNESSED]
    expected = [_outcome(w.evaluate) for w in witnesses]
    for m in MUTANTS:
        # an invalid model: the mutant's steps are in force when the kernel raises
        with pytest.raises(Rejected):
            create(f"mutant:{m.id}").run(_bad_model(), {})
        assert _state() == before, m.id
    for w, e in zip(witnesses, expected, strict=True):
        assert not _differ(_outcome(w.evaluate), e), w.note


def _bad_model():
    import onnx
    from onnx import TensorProto, helper

    node = helper.make_node("QuantizeLinear", ["x", "s"], ["y"], block_size=-1)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2]),
                                            helper.make_tensor_value_info("s", TensorProto.FLOAT, [])],
                              [helper.make_tensor_value_info("y", TensorProto.UINT8, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 21)])
    return onnx.load_model_from_string(model.SerializeToString())


# --- the equivalent mutants, on random inputs of the domain where they could differ ------------------------

_NARROW = st.sampled_from([np.float16, ml_dtypes.bfloat16])
_TARGETS = st.sampled_from([np.uint8, np.int8, np.int16, np.uint16, ml_dtypes.int4, ml_dtypes.float8_e4m3fn,
                            ml_dtypes.float8_e5m2, ml_dtypes.float4_e2m1fn])


def _bits(dtype, raw):
    """A value of float type ``dtype`` from raw bits (every finite or special value reachable)."""
    return np.array([raw], np.uint16).view(np.dtype(dtype))


@settings(max_examples=400, deadline=None)
@given(_NARROW, _TARGETS, st.lists(st.integers(0, 0xFFFF), min_size=1, max_size=8), st.integers(0, 0xFFFF))
def test_narrow_division_via_float32_is_equivalent(precision, target, xs, raw_scale):
    x = np.concatenate([_bits(precision, r) for r in xs])
    scale = _bits(precision, raw_scale).reshape(())
    if not np.isfinite(scale.astype(np.float32)) or scale.astype(np.float32) <= 0:
        return  # the scale must be finite and positive
    zp = np.zeros((), target)
    inputs = [x, scale, zp]
    m = REGISTRY["narrow-division-via-float32"]
    kernel = _outcome(lambda: evaluate("ai.onnx", "QuantizeLinear", 23, inputs))
    with using(m.steps()):
        mutated = _outcome(lambda: evaluate("ai.onnx", "QuantizeLinear", 23, inputs))
    assert not _differ(kernel, mutated), (x, scale, target)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 4), st.data())
def test_one_element_per_tensor_is_equivalent(rank, data):
    axis = data.draw(st.integers(-rank, rank - 1))
    shape = [data.draw(st.integers(1, 3)) for _ in range(rank)]
    shape[axis] = 1
    x = np.array(data.draw(st.lists(st.floats(-300, 300, width=32), min_size=int(np.prod(shape)),
                                    max_size=int(np.prod(shape)))), np.float32).reshape(shape)
    scale = np.array([data.draw(st.sampled_from([0.5, 1.0, 0.1, 3.0]))], np.float32)
    zp = np.array([data.draw(st.integers(0, 255))], np.uint8)
    m = REGISTRY["one-element-per-tensor"]
    for op, inputs in (("QuantizeLinear", [x, scale, zp]),
                       ("DequantizeLinear", [zp.repeat(x.size).reshape(shape),
                                            scale, zp])):
        kernel = _outcome(lambda op=op, inputs=inputs: evaluate("ai.onnx", op, 21, inputs, {"axis": axis}))
        with using(m.steps()):
            mutated = _outcome(lambda op=op,
                               inputs=inputs: evaluate("ai.onnx", op, 21, inputs, {"axis": axis}))
        assert not _differ(kernel, mutated)


# --- the command, on a representative part of the corpus
# ------------------------------------------------------

@pytest.fixture(scope="module")
def small_corpus(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cases")
    for name in ("mutant_killers.yaml", "contrib_microsoft.yaml", "case.schema.json"):
        shutil.copy(cases_dir() / name, folder / name)
    return folder


def test_mutants_command(small_corpus, capsys):
    only = ["round-half-away", "dq-narrow-subtract", "dql-zero-point-half-away", "dq-scale-not-rounded",
            "blocked-*", "narrow-division-via-float32", "dq-product-in-float32"]
    code = main(["mutants", "--cases", str(small_corpus), "--only", *only, "--json", "--jobs", "1"])
    report = json.loads(capsys.readouterr().out)
    verdicts = {v["mutant"]: v for v in report["verdicts"]}
    assert set(verdicts) == {"round-half-away", "dq-narrow-subtract", "dql-zero-point-half-away",
                             "dq-scale-not-rounded", "blocked-index-from-last-axis", "blocked-partial-block",
                             "narrow-division-via-float32", "dq-product-in-float32"}
    for mid in ("round-half-away", "dq-narrow-subtract", "dql-zero-point-half-away", "dq-scale-not-rounded"):
        assert verdicts[mid]["status"] == "killed" and verdicts[mid]["case"], mid
    assert verdicts["dql-zero-point-half-away"]["case"] == "dynamicquantizelinear-11-dql-zero-point-tie"
    assert verdicts["narrow-division-via-float32"]["status"] == "equivalent"
    assert verdicts["dq-product-in-float32"]["status"] == "reading"
    # No blocked case in these files: the blocked mutants survive, and the exit status says so.
    assert verdicts["blocked-partial-block"]["status"] == "surviving"
    assert report["summary"]["surviving"] == ["blocked-index-from-last-axis", "blocked-partial-block"]
    assert report["summary"]["counted"] == 6 and report["summary"]["killed"] == 4
    assert code == 1
    assert main(["mutants", "--cases", str(small_corpus), "--only", "round-half-away", "--jobs", "1"]) == 0
    text = capsys.readouterr().out
    assert "killed     round-half-away" in text and "mutation score: 1/1 killed (100.0%)" in text
    assert main(["mutants", "--only", "no-such-mutant"]) == 2
    assert "no mutant matches no-such-mutant" in capsys.readouterr().err


def test_a_kill_is_a_failure_of_the_real_worker_path(small_corpus):
    """The scorer's verdict equals the runner's: run_case (the worker's whole path: model, backend, classify,
    record) with no expectations fails the killing case, and passes it on the kernel."""
    from qdq_conformance.generators.cache import load_file_cached
    from qdq_conformance.mutants.score import score
    from qdq_conformance.runner.execute import ObjRef, Sources, run_case
    from qdq_conformance.runner.expectations import Expectations

    cases = load_file_cached(small_corpus / "contrib_microsoft.yaml", ("default",))
    for mid in ("round-half-away", "zp-before-round", "truncate"):
        (verdict,) = score(cases, [REGISTRY[mid]], jobs=1)
        case = next(c for c in cases if c.id == verdict.case)
        for form in ("runtime", "initializer"):
            result = run_case(create(f"mutant:{mid}"), ObjRef(case), form, Sources(), Expectations())
            assert result.status == "failed", (mid, case.id, form, result.message)
            assert run_case(create("oracle"), ObjRef(case), form, Sources(),
                            Expectations()).status == "passed"


#: The mutants the negative-scale and toolchain case files were added to kill (issue 28), and issue 37's
#: equal-dimension, layouts and graph-history files, and the case of each file that kills it first; the corpus
#: before them let every one through (docs/mutants.md).
NEW_FAMILY_KILLS = {
    "dequantize_negative_scales.yaml": {"scale-abs": "dequantizelinear-10-neg-scale-golden-int8-float"},
    "quantize_negative_scales.yaml": {"scale-abs": "quantizelinear-10-neg-scale-golden-float-int8",
                                      "clamp-x-in-scale-order":
                                          "quantizelinear-10-neg-scale-golden-float-int8",
                                      "inf-sign-from-x": "quantizelinear-10-neg-scale-golden-float-int8"},
    "dequantize_toolchain.yaml": {
        "block-size-capped-16": "dequantizelinear-21-tc-weights-blocked-int4-float-blocked-b32-axis0-r2",
        "per-axis-channels-capped-16":
            "dequantizelinear-13-tc-weights-per-axis-wide-int8-float-axis0-r2-x64x3",
        "dq-32-bit-operands-in-float32":
            "quark-extendeddequantizelinear-1-tc-quark-uint32-zero-point-uint32-float-x6"},
    # issue 37: a kill is a wrong value; these four only refused the corpus's distinct-dimension shapes
    "quantize_equal_dims.yaml": {
        "axis-default-0": "quantizelinear-13-per-axis-equal-dims-default-float-int8-axisdefault-r2-eqdims",
        "negative-axis-ignored": "quantizelinear-13-per-axis-equal-dims-float-int8-axism2-r2-eqdims",
        "negative-axis-off-by-one": "quantizelinear-13-per-axis-equal-dims-float-int8-axism1-r2-eqdims"},
    "dequantize_equal_dims.yaml": {
        "dq-axis-default-last":
            "dequantizelinear-13-per-axis-equal-dims-default-int8-float-axisdefault-r3-eqdims"},
    "dequantize_layouts.yaml": {
        "dq-float8-per-axis-along-last-axis": "dequantizelinear-19-layouts-float8e4m3fn-float-axis0-r2"},
    "graph_history.yaml": {
        "relu-q-16bit-zero-point-as-lowest": "graph-relu-q-16bit-int16-o21",
        "remove-dq-q-pair": "graph-requant-chain-mixed-float-scales-int16-o23",
        "qdq-pair-shares-q-scale": "graph-qdq-mixed-float-scales-uint8-o19"},
    **COMPUTE_FAMILIES,  # issue 36's compute families (tests/test_compute_families.py)
}


@pytest.mark.parametrize("name", sorted(NEW_FAMILY_KILLS))
def test_each_new_family_kills_its_mutants(name, tmp_path, capsys):
    for f in (name, "case.schema.json"):
        shutil.copy(cases_dir() / f, tmp_path / f)
    kills = NEW_FAMILY_KILLS[name]
    code = main(["mutants", "--cases", str(tmp_path), "--only", *kills, "--json", "--jobs", "1"])
    verdicts = {v["mutant"]: v for v in json.loads(capsys.readouterr().out)["verdicts"]}
    assert {m: v["case"] for m, v in verdicts.items()} == kills
    assert {v["outcome"] for v in verdicts.values()} == {"failed"}  # wrong values, never a refusal
    assert code == 0


def test_docs_list_every_mutant():
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "mutants.md").read_text(encoding="utf-8")
    missing = [m.id for m in MUTANTS if f"| `{m.id}` |" not in text]
    assert not missing, f"docs/mutants.md does not list {missing}"


def test_a_mutant_whose_steps_cannot_be_built_is_reported():
    from dataclasses import replace

    from qdq_conformance.mutants.mutant import Mutant
    from qdq_conformance.mutants.mutants_cmd import summary
    from qdq_conformance.mutants.score import score

    def steps():
        return replace(REGISTRY["truncate"].steps(), no_such_step=None)

    broken = Mutant("renamed-helper", "replaces a step the kernel no longer has", "-", steps,
                    REGISTRY["truncate"].witness)
    (verdict,) = score([], [broken], jobs=1)
    assert verdict.status == "broken" and "no_such_step" in verdict.message
    s = summary([verdict], {"renamed-helper": "defect"})
    assert s["broken"] == ["renamed-helper"] and not s["surviving"]


def test_a_mutants_steps_are_in_force_only_in_its_own_context():
    """``steps.using`` sets a context variable: another thread evaluating meanwhile sees the spec's steps."""
    import threading

    w = REGISTRY["truncate"].witness()
    kernel = _outcome(w.evaluate)
    seen = []
    with using(REGISTRY["truncate"].steps()):
        mutated = _outcome(w.evaluate)
        t = threading.Thread(target=lambda: seen.append(_outcome(w.evaluate)))
        t.start()
        t.join()
    assert _differ(kernel, mutated) and not _differ(kernel, seen[0])
    assert active() is None and not _differ(kernel, _outcome(w.evaluate))


def test_a_rewrite_that_changes_nothing_is_judged_by_the_kernels_own_run():
    """A rewrite mutant runs the kernel's steps: on a case its rewrite leaves as it is (a single node), its
    outcome is the kernel's, computed once per case for every such mutant; the verdicts are those of running
    the mutant on every case (the first kill, the cases run, the refusals)."""
    from qdq_conformance.domain import CaseStatus
    from qdq_conformance.generators.cache import load_file_cached
    from qdq_conformance.generators.corpus import CASES_DIR
    from qdq_conformance.mutants import score as score_mod
    from qdq_conformance.mutants.mutant import MutantBackend
    from qdq_conformance.runner.execute import call_backend
    from qdq_conformance.runner.outcome import classify

    cases = [c for name in ("contrib_microsoft.yaml", "graph_requantize.yaml", "graph_activation.yaml")
             for c in load_file_cached(CASES_DIR / name, ("default",))]
    normative = [c for c in cases if c.status == CaseStatus.NORMATIVE]
    chosen = [REGISTRY[m] for m in ("remove-qdq-pair", "collapse-requant-chain", "drop-relu-between-dq-q")]
    verdicts = score_mod.score(cases, chosen, jobs=1)
    assert score_mod._KERNEL_OUTCOMES  # (the single-node cases were judged by the kernel's run)
    for m, v in zip(chosen, verdicts, strict=True):
        backend, run, refused, killer = MutantBackend(m), 0, 0, None
        for c in normative:
            outcome = classify(call_backend(backend, c.model("runtime"), c.feeds("runtime")),
                               case_status=c.status, expected=c.expected, ulp=c.ulp, bounds=c.output_bounds())
            run += 1
            if outcome.status == "failed":
                killer = c.id
                break
            refused += outcome.status == "error"
        assert (v.case, v.cases_run, v.refused) == (killer, run, refused), m.id
        assert killer is not None, m.id
