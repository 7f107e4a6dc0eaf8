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
