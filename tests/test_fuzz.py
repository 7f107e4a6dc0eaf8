"""``qdq-conformance fuzz``: a planted bug yields exactly that finding, minimized, kept as a case file that
fails on the backend and passes on the oracle; the same seed and examples give the same findings; the database
carries findings over to the next run; the results file is one ``report`` and ``diff`` read; grouping and
options."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import numpy as np
import pytest

from qdq_conformance.compare import Mismatch
from qdq_conformance.fuzz.describe import Description, build, template
from qdq_conformance.fuzz.fuzz_cmd import parse_duration
from qdq_conformance.fuzz.search import Executor, signature_of, signature_parts
from qdq_conformance.generators.file_schemas import validate
from qdq_conformance.opspecs import BLOCKED, PER_AXIS, PER_TENSOR
from qdq_conformance.runner.execute import CaseResult
from qdq_conformance.runner.expectations import Expectation
from qdq_conformance.runner.outcome import Outcome, Structural
from qdq_conformance.runner.pool import CasePool

ROOT = Path(__file__).resolve().parents[1]
PLANTED = "python:tests.fuzz_backends:planted"
#: the planted bug, as the fuzzer must name it (tests/fuzz_backends.py: the zero point added twice)
PLANTED_SIGNATURE = ("ai.onnx::QuantizeLinear-21 | float/float/uint8 | given | per-tensor | - | runtime | "
                     "failed: values (x finite)")
SPACE = ("--ops", "QuantizeLinear", "--versions", "21", "--types", "float/float/uint8")


def _cli(*args: str, env: dict[str, str] | None = None,
         timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """``qdq-conformance ARGS`` in a subprocess, from the repository (so that ``tests.fuzz_backends``
    imports)."""
    return subprocess.run([sys.executable, "-m", "qdq_conformance.cli", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, "COLUMNS": "300", **(env or {})})


def _fuzz(out: Path, *extra: str, backend: str = PLANTED, examples: int = 150, seed: int = 0,
          env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    p = _cli("fuzz", "--backend", backend, *SPACE, "--examples", str(examples), "--seed", str(seed), "--out",
             str(out), "--expectations", "none", *extra, env=env)
    assert (out / "findings.json").exists(), p.stdout + p.stderr
    return p, json.loads((out / "findings.json").read_text())


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str],
                                                               dict[str, Any]]:
    out = tmp_path_factory.mktemp("fuzz") / "out"
    p, found = _fuzz(out, "--no-database")
    return out, p, found


def test_planted_bug_yields_exactly_that_finding_minimized(planted):
    out, p, found = planted
    assert p.returncode == 1, p.stdout + p.stderr
    assert [f["signature"] for f in found["findings"]] == [PLANTED_SIGNATURE]
    f = found["findings"][0]
    assert f["hits"] >= 1 and f["status"] == "failed"
    assert f["shape"] == [1] and f["elements"] == 1 and f["distinct_x_values"] == 1  # the smallest shape
    doc = __import__("yaml").safe_load((out / f["case_file"]).read_text())
    case = doc["cases"][0]
    # the simplest numbers
    assert case["inputs"]["x"]["values"] == [0] and case["inputs"]["scale"]["values"] == [1]
    assert case["inputs"]["zero_point"]["values"] != [0]  # (the bug needs a non-zero zero point)
    assert "fuzz" in p.stdout and PLANTED_SIGNATURE.split(" | ")[0] in p.stdout  # the final table


def test_the_finding_is_kept_as_a_valid_case_file_with_model_data_and_repro(planted):
    out, _, found = planted
    f = found["findings"][0]
    case_file = out / f["case_file"]
    text = case_file.read_text()
    doc = __import__("yaml").safe_load(text)
    validate(doc, case_file)  # the schema of cases/
    case = doc["cases"][0]
    assert "values differ" in case["description"] and case["spec"]["text"]
    # x = 0: y is the zero point
    assert case["expected"] == {"y": [case["inputs"]["zero_point"]["values"][0]]}
    folder = out / f["folder"]
    assert (out / f["model"]).is_file() and (folder / "record.json").is_file()
    data = (out / f["model"]).parent / "test_data_set_0"
    assert sorted(q.name for q in data.iterdir()) == ["input_0.pb", "input_1.pb", "input_2.pb", "output_0.pb"]
    repro = (out / f["repro"]).read_text()
    assert "QuantizeLinear" in repro and "numpy_helper" in repro


def test_the_case_file_fails_on_the_backend_and_passes_on_the_oracle(planted, tmp_path):
    out, _, _ = planted
    bad = _cli("run", "--backend", PLANTED, "--cases", str(out / "cases"), "--expectations", "none",
               "--results", str(tmp_path / "bad.jsonl"))
    assert bad.returncode == 1, bad.stdout + bad.stderr
    good = _cli("run", "--backend", "oracle", "--cases", str(out / "cases"), "--results",
                str(tmp_path / "ok.jsonl"))
    assert good.returncode == 0, good.stdout + good.stderr
    statuses = [json.loads(line)["status"]
                for line in (tmp_path / "bad.jsonl").read_text().splitlines()[1:-1]]
    assert statuses and set(statuses) == {"failed"}


def test_the_results_file_is_one_report_and_diff_read(planted, tmp_path):
    out, _, found = planted
    results = out / "results.jsonl"
    lines = [json.loads(line) for line in results.read_text().splitlines()]
    assert (lines[0]["type"] == "header" and lines[0]["backend"] == "planted-zp-twice"
            and lines[-1]["type"] == "summary")
    cases = [r for r in lines if r["type"] == "case"]
    assert len(cases) >= found["summary"]["examples_tried"]
    assert any(r["id"] == found["findings"][0]["case_id"] and r["status"] == "failed" for r in cases)
    r = _cli("report", str(results), "-o", str(tmp_path / "report.html"))
    assert r.returncode == 0, r.stderr
    d = _cli("diff", str(results), str(results))
    assert d.returncode == 0, d.stdout + d.stderr


def test_same_seed_and_examples_give_the_same_findings(planted, tmp_path):
    _, _, first = planted
    _, again = _fuzz(tmp_path / "again", "--no-database")
    assert [(f["signature"], f["case_id"], f["hits"]) for f in again["findings"]] == \
        [(f["signature"], f["case_id"], f["hits"]) for f in first["findings"]]
    assert again["summary"]["examples_tried"] == first["summary"]["examples_tried"] == 150


def test_the_database_carries_findings_to_the_next_run(tmp_path):
    env = {"QDQ_CACHE_DIR": str(tmp_path / "cache")}
    p, first = _fuzz(tmp_path / "one", env=env)
    assert [f["signature"] for f in first["findings"]] == [PLANTED_SIGNATURE], p.stdout + p.stderr
    assert any((tmp_path / "cache" / "fuzz" / "hypothesis").rglob("*"))
    # one example with another seed finds nothing by itself; the database gives that run the first run's
    # finding
    p, alone = _fuzz(tmp_path / "alone", "--no-database", examples=1, seed=5)
    assert alone["findings"] == [], p.stdout
    p, second = _fuzz(tmp_path / "two", env=env, examples=1, seed=5)
    assert [f["signature"] for f in second["findings"]] == [PLANTED_SIGNATURE], p.stdout + p.stderr
    assert second["findings"][0]["case_id"] == first["findings"][0]["case_id"]  # the minimal example, as kept


def test_the_oracle_gives_no_finding(tmp_path):
    p, found = _fuzz(tmp_path / "oracle", "--no-database", backend="oracle", examples=60)
    assert p.returncode == 0, p.stdout + p.stderr
    assert found["findings"] == [] and "no finding" in p.stdout


def test_usage_errors(tmp_path):
    p = _cli("fuzz", "--backend", "oracle", "--ops", "NoSuchOp", "--out", str(tmp_path / "x"))
    assert p.returncode == 2 and "no operator version matches" in p.stderr
    p = _cli("fuzz", "--backend", "no-such-backend", "--examples", "1", "--out", str(tmp_path / "y"))
    assert p.returncode == 4 and "unknown backend" in p.stderr
    p = _cli("fuzz", "--backend", "oracle", "--budget", "soon")
    assert p.returncode == 2 and "duration" in p.stderr
    p = _cli("fuzz", "--help")
    assert p.returncode == 0 and "--budget" in p.stdout and "exit status" in p.stdout


def test_parse_duration():
    assert parse_duration("90") == parse_duration("90s") == 90
    assert parse_duration("10m") == 600 and parse_duration("1h") == 3600 and parse_duration("1m30s") == 90
    for bad in ("", "soon", "0", "m"):
        with pytest.raises(argparse.ArgumentTypeError):
            parse_duration(bad)


def _description(**kw: Any) -> Description:
    base = dict(domain="ai.onnx", op="QuantizeLinear", version=21, types=("float", "float", "uint8"),
                zero_point="given", granularity=PER_TENSOR, x_shape=(3,), x=(0.0, float("nan"), 2.5),
                scale=(1.0,), zero_point_values=(3.0,))
    base.update(kw)
    return Description(**base)  # type: ignore[arg-type]


def test_a_description_is_the_corpus_case_its_template_expands_to():
    d = _description()
    data = template(d)
    validate({"cases": [data]}, "x.yaml")
    case = build(d)
    assert case.id.startswith(f"quantizelinear-21-fuzz-{d.key}-float-uint8")
    # NaN to an integer: a catalogued question, as in the corpus
    assert case.status == "implementation-defined"
    assert case.ambiguity and case.readings
    axis = build(_description(granularity=PER_AXIS, x_shape=(2, 3), scale_shape=(3,), axis=-1,
                              x=(0.0,) * 6, scale=(1.0, 2.0, 4.0), zero_point_values=(0.0, 1.0, 2.0)))
    assert axis.attrs == {"axis": -1} and axis.inputs[1][1].shape == (3,)
    blocked = build(_description(granularity=BLOCKED, x_shape=(2, 5), scale_shape=(2, 2), axis=1,
                                 block_size=3, x=(0.0,) * 10, scale=(1.0,) * 4, zero_point_values=(0.0,) * 4))
    assert blocked.attrs == {"axis": 1, "block_size": 3} and blocked.inputs[1][1].shape == (2, 2)


def test_signatures_group_by_operator_types_granularity_form_and_kind_of_mismatch():
    case = build(_description(x=(0.0, 1.0, 2.5)))
    values = Outcome("failed", "x", mismatches=[(0, Mismatch("values differ", 1, 3, [(1,)]))])
    result = SimpleNamespace(status="failed", message="", outcome=values)
    parts = signature_parts(case, "runtime", result)
    assert (signature_of(parts)
            == ("ai.onnx::QuantizeLinear-21 | float/float/uint8 | given | per-tensor | - | "
                "runtime | failed: values (x finite)"))
    shape = SimpleNamespace(status="failed", message="", outcome=Outcome(
        "failed", "x", mismatches=[(0, Structural("expected uint8 [3], got int8 [3]", subject="output y"))]))
    assert signature_parts(case, "initializer",
                           shape)["mismatch"] == "failed: wrong output type, shape or count"
    rejected = SimpleNamespace(status="error", message="rejected a valid model: no", outcome=None)
    assert signature_parts(case, "runtime", rejected)["mismatch"] == "error: rejected a valid model"
    nan = build(_description(x=(float("nan"), 1.0, 2.5)))
    assert signature_parts(nan, "runtime", SimpleNamespace(status="failed", message="", outcome=Outcome(
        "failed", "x", mismatches=[(0, Mismatch("values differ", 1, 3, [(0,)]))])))["mismatch"] == \
        "failed: values (x=nan)"
    assert np.isnan(nan.inputs[0][1][0])


def test_a_per_axis_bug_shrinks_shape_scale_and_zero_point_together(tmp_path):
    """Any per-axis case fails: each finding shrinks to the smallest valid per-axis shape ([1] with the axis
    given, [1, 1] with the default axis 1), its one channel's scale and zero point with it (not stuck at
    2x2x2x2)."""
    out = tmp_path / "axis"
    p = _cli("fuzz", "--backend", "python:tests.fuzz_backends:per_axis", "--ops", "DequantizeLinear",
             "--versions", "21", "--types", "uint8/float/float", "--granularity", "per-axis", "--examples",
             "60", "--seed", "3", "--out", str(out), "--expectations", "none", "--no-database")
    assert (out / "findings.json").exists(), p.stdout + p.stderr
    found = json.loads((out / "findings.json").read_text())
    assert p.returncode == 1 and found["findings"], p.stdout + p.stderr
    smallest = {"per-axis": [1], "per-axis-default-axis": [1, 1]}
    for f in found["findings"]:
        assert f["shape"] == smallest[f["parts"]["granularity"]], f
        case = __import__("yaml").safe_load((out / f["case_file"]).read_text())["cases"][0]
        assert case["inputs"]["scale"]["values"] == [1] and case["inputs"]["scale"]["shape"] == [1]
        assert case["inputs"].get("zero_point", {"values": [0]})["values"] == [0]  # (given or omitted)
        assert case["inputs"]["x"]["values"] == [0] * f["elements"]


def test_a_finding_is_new_unless_a_failing_corpus_case_has_its_root_cause(planted, tmp_path):
    """--corpus-results / --judge compare root causes (the signature qdq-conformance findings groups by,
    numbers masked): a corpus case failing the same way in another shape and with other values exposes the
    finding."""
    import shutil

    out = tmp_path / "out"
    shutil.copytree(planted[0], out)
    rows = json.loads((out / "findings.json").read_text())["findings"]
    # the same bug, found again in a corpus case of another shape, with more elements differing
    doc = __import__("yaml").safe_load((out / rows[0]["case_file"]).read_text())
    case = doc["cases"][0]
    case["id"] = "corpus-like"
    case.pop("expected", None)
    case["shape"] = case["inputs"]["x"]["shape"] = [3]
    case["inputs"]["x"]["values"] = case["inputs"]["x"]["values"] * 3
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "c.yaml").write_text(__import__("yaml").safe_dump(doc))
    bad = _cli("run", "--backend", PLANTED, "--cases", str(tmp_path / "corpus"), "--expectations", "none",
               "--results", str(tmp_path / "bad.jsonl"))
    assert bad.returncode == 1, bad.stdout + bad.stderr
    p = _cli("fuzz", "--judge", str(out), "--corpus-results", str(tmp_path / "bad.jsonl"))
    assert p.returncode == 0 and "0 finding(s), 0 root cause(s)" in p.stdout, p.stdout + p.stderr
    judged = json.loads((out / "findings.json").read_text())
    assert (judged["findings"][0]["in_corpus"] is True
            and judged["findings"][0]["corpus_case"].startswith("quantize"))
    assert judged["summary"]["new_findings"] == 0 and judged["summary"]["root_causes"] == 1
    # a corpus where nothing fails exposes nothing: the finding is new
    good = _cli("run", "--backend", "oracle", "--cases", str(tmp_path / "corpus"), "--results",
                str(tmp_path / "good.jsonl"))
    assert good.returncode == 0, good.stdout + good.stderr
    p = _cli("fuzz", "--judge", str(out), "--corpus-results", str(tmp_path / "good.jsonl"))
    assert p.returncode == 1 and "NEW" in p.stdout and "1 finding(s), 1 root cause(s)" in p.stdout, p.stdout
    p = _cli("fuzz", "--judge", str(tmp_path / "nothing"), "--corpus-results", str(tmp_path / "good.jsonl"))
    assert p.returncode == 2 and "--judge" in p.stderr and "Traceback" not in p.stderr


class _OnePool:
    """A worker pool whose every case ends in ``status`` with ``entry`` (an expectation) applying to it."""

    def __init__(self, status: str, entry: Expectation | None) -> None:
        self.status, self.entry = status, entry

    def get(self, ref: Any, form: str, position: int | None = None) -> CaseResult:
        outcome = Outcome(self.status, "x", mismatches=[(0, Mismatch("values differ", 1, 3, [(1,)]))])
        return CaseResult(self.status, "x", "{}", self.entry, outcome)


@pytest.mark.parametrize(("entry_status", "finding"), [("failed", False), ("error", True), (None, True)])
def test_a_failure_its_expectation_entry_records_is_no_finding(entry_status, finding):
    """A fuzzed example that fails as an expectation entry says is counted as expected, not as a finding; one
    that fails in another status than its entry records, or with no entry, is a finding."""
    entry = None if entry_status is None else Expectation(entry_status, "known", None, 7)
    executor = Executor(cast(CasePool, _OnePool("failed", entry)), ["runtime"])
    ran = executor.run(_description(x=(0.0, 1.0, 2.5)))
    assert (ran is not None) is finding
    assert executor.expected_failures == (0 if finding else 1)
