"""The mutmut harness (tools/kernel_mutation.py): what it leaves unmutated, and a triage covering its run."""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import yaml

ROOT = Path(__file__).resolve().parents[1]
TRIAGE = ROOT / "tools" / "kernel_mutation_triage.yaml"


def _harness() -> ModuleType:
    spec = importlib.util.spec_from_file_location("kernel_mutation", ROOT / "tools" / "kernel_mutation.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("kernel_mutation", module)
    spec.loader.exec_module(module)
    return module


SOURCE = '''\
def f(spec, x, name):
    if x < 0:
        raise spec.violation("QDQ010", f"x {x} is negative; it must be "
                             "positive", name)
    if x > 9:
        raise ValueError(f"x {x} is too large "
                         "for the oracle")
    with np.errstate(over="ignore"):
        y = x * 2
    raise SpecViolation("QDQ012", "text", op="Q", version=x)
'''


def test_quiet_messages_marks_the_text_of_refusals_never_their_rule() -> None:
    new, marked = _harness().quiet_messages(SOURCE)
    assert ast.dump(ast.parse(new)) == ast.dump(ast.parse(SOURCE))  # the layout only
    lines = new.splitlines()
    quiet = [k for k, line in enumerate(lines) if line.endswith("# pragma: no mutate")]
    assert marked == len(quiet)
    # every line holding a rule id or a computed value stays mutated
    for k, line in enumerate(lines):
        if "QDQ0" in line or "y = x * 2" in line or line.strip().startswith(("if ", "def ")):
            assert k not in quiet, line
    # the text of both refusals, the whole ValueError and the errstate header are not
    for text in ("is negative", '"positive", name', "too large", "for the oracle", "np.errstate", '"text"',
                 'op="Q"'):
        assert any(text in lines[k] for k in quiet), text


def test_every_mutant_the_last_run_let_through_has_a_verdict() -> None:
    """tools/kernel_mutation_triage.yaml: the last run's survivors and no-test mutants (as mutmut listed
    them), and the verdict of each: killed by a case of the corpus (named), equivalent with its reason, or
    open (a live mutant, with what a case would need: docs/mutants.md counts them)."""
    triage = yaml.safe_load(TRIAGE.read_text())
    let_through = set(triage["run"]["survived"]) | set(triage["run"]["no_tests"])
    judged: dict[str, str] = {}
    for group in triage["verdicts"]:
        assert group["verdict"] in {"killed", "equivalent", "open"}, group["verdict"]
        assert group.get("reason") and (group["verdict"] != "killed" or group.get("case"))
        for mutant in group["mutants"]:
            assert mutant not in judged, f"{mutant}: two verdicts"
            judged[mutant] = group["verdict"]
    assert sorted(let_through - set(judged)) == [], "mutants without a verdict"
    assert sorted(set(judged) - let_through) == [], "verdicts for mutants the run does not list"


def _answers() -> ModuleType:
    spec = importlib.util.spec_from_file_location("kernel_answers", ROOT / "tools" / "kernel_answers.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_answer_judges_the_model_binding_on_rewritten_models() -> None:
    """tools/kernel_answers.py: a node case's rewritten models answer as the case (its parameters as Constant
    nodes, an omitted input spelled "") or are refused with the rule `check` gives (a malformed model), and a
    changed part of an answer is a difference."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    x = np.array([-1.5, 0.25, 2.0, 300.0], np.float32)
    node = helper.make_node("QuantizeLinear", ["x", "s"], ["y"])
    graph = helper.make_graph([node], "q", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                              [helper.make_tensor_value_info("y", TensorProto.UINT8, [4])],
                              [numpy_helper.from_array(np.array(0.5, np.float32), "s")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)], ir_version=9)
    case = {"kind": "node", "domain": "", "op": "QuantizeLinear", "version": 19, "asked": None,
            "inputs": [x, np.array(0.5, np.float32)], "attrs": {}, "model": model.SerializeToString(),
            "feeds": {"x": x}, "forms": True}
    answers = _answers()
    got = answers.answer(case)
    codes = np.array([0, 0, 4, 255], np.uint8)
    assert got["outputs"][0].tolist() == codes.tolist() and got["evaluate"][0] == "outputs"
    forms = got["forms"]
    for name in ("constant[]", "constant[ai.onnx]", "omitted-input"):
        assert forms[name][0] == "outputs" and forms[name][1][0].tolist() == codes.tolist(), name
    rules = {name: value for name, (kind, value) in forms.items() if kind == "rule"}
    assert rules == {"no-opset": "QDQ001", "two-nodes": "QDQ012", "float-attribute": "QDQ010",
                     "float-attribute@any": "QDQ010", "extra-input": "QDQ011", "no-value": "QDQ011",
                     "no-value@any": "QDQ011", "empty-required": "QDQ011", "float64-x": "QDQ002",
                     "constant[]+float-attribute@any": "QDQ010",
                     "constant[ai.onnx]+float-attribute@any": "QDQ010"}, rules
    assert answers.differences(got, answers.answer(case)) == []
    changed = dict(got, forms=dict(forms, **{"two-nodes": ("rule", "QDQ001")}))
    assert answers.differences(changed, got) == ["forms"]
    assert onnx.checker.check_model(model) is None


def test_a_graph_answer_holds_the_replay_and_the_refusals_of_an_invalid_graph() -> None:
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    nodes = [helper.make_node("DequantizeLinear", ["x", "s"], ["f"]), helper.make_node("Relu", ["f"], ["r"]),
             helper.make_node("QuantizeLinear", ["r", "s"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.UINT8, [3])],
                              [helper.make_tensor_value_info("y", TensorProto.UINT8, [3])],
                              [numpy_helper.from_array(np.array(0.5, np.float32), "s")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=7)
    feeds = {"x": np.array([0, 7, 255], np.uint8)}
    case = {"kind": "graph", "model": model.SerializeToString(), "feeds": feeds, "forms": True}
    got = _answers().answer(case)
    assert got["forms"] == {"tensor-attribute": ("rule", "QDQ010"), "foreign-op": ("rule", "QDQ012")}
    assert [s[0] for s in got["steps"]] == [0, 1, 2] and got["any"][0].tolist() == [0, 7, 255]
