"""A run in shards, merged (qdq_conformance.results.merge), is the run: the same report, findings and diff as
the run on one machine; shard files that are not one run are refused in one line; a missing shard is shown.

One real selection of cases (ONNX Runtime, DequantizeLinear-23 cases with expected errors and failures, both
graph forms) is run four times side by side: whole, and as shards 1/3, 2/3, 3/3.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from qdq_conformance.cli import main
from qdq_conformance.reports.render import unpack_cases
from qdq_conformance.results.merge import load_run

SELECTION = "dequantizelinear-23 and (float8-zero-point or int32-extremes or blocked-int4-float-blocked)"


@dataclass
class Done:
    returncode: int
    stdout: str
    stderr: str


def _cli(*args: object) -> Done:
    """``qdq-conformance ARGS`` in this process (a subprocess each would cost a second of imports)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    return Done(code, out.getvalue(), err.getvalue())


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """{"whole": the run's results file, "1".."3": its shards'}, run side by side."""
    pytest.importorskip("onnxruntime")
    tmp = tmp_path_factory.mktemp("shards")
    out = {name: tmp / f"{name}.jsonl" for name in ("whole", "1", "2", "3")}
    procs = []
    for name, path in out.items():
        shard = [] if name == "whole" else ["--shard", f"{name}/3"]
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--backend=ort", "--workers",
             "1", "--results", str(path), "-k", SELECTION, *shard],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=tmp))
    for p, path in zip(procs, out.values(), strict=True):
        text, _ = p.communicate()  # (0, or 1 when a case fails that no expectation entry covers)
        assert p.returncode in (0, 1) and load_run([path])[2], text[-2000:]
    return out


def _shards(runs: dict[str, Path], *names: str) -> list[Path]:
    return [runs[n] for n in names]


#: what legitimately differs between a report of the run and of its shards merged, and nothing else: when each
#: run started and how long it ran (the "started" row), each case's duration (in the embedded case data), and
#: the merged run's "shards" row (which files, their shards, case counts and durations)
def _normalised(html: str) -> tuple[str, list[dict]]:
    html = re.sub(r"<tr><td>started</td><td>[^<]*</td></tr>", "<tr><td>started</td><td>-</td></tr>", html)
    html = re.sub(r'<tr><td>shards</td><td id="shards">[^<]*</td></tr>\n?', "", html)
    packed = re.search(r'<script type="application/octet-stream" id="data"[^>]*>([^<]*)</script>', html)
    assert packed
    cases = unpack_cases(packed.group(1))
    for c in cases:
        c.pop("duration")
    return html.replace(packed.group(1), "-"), cases


def test_three_shards_merged_give_the_report_of_the_whole_run(runs, tmp_path):
    whole = load_run([runs["whole"]])
    assert len(whole[1]) >= 40 and {c["status"] for c in whole[1]} >= {"passed", "error", "failed"}
    parts = [load_run([runs[k]])[1] for k in "123"]
    assert all(parts) and sum(map(len, parts)) == len(whole[1])  # each shard ran some, together all
    for cmd in (["report", runs["whole"], "-o", tmp_path / "whole.html"],
                ["report", *_shards(runs, "3", "1", "2"), "-o", tmp_path / "merged.html"]):  # any order
        proc = _cli(*cmd)
        assert proc.returncode == 0, proc.stderr
    a = (tmp_path / "whole.html").read_text()
    b = (tmp_path / "merged.html").read_text()
    assert a != b and 'id="shards">3 of 3 shards merged' in b and "shards-attention" not in b
    assert _normalised(a) == _normalised(b)


def test_three_shards_merged_give_the_findings_and_summary_of_the_whole_run(runs):
    whole = _cli("findings", "--json", runs["whole"])
    merged = _cli("findings", "--json", *_shards(runs, "1", "2", "3"))
    assert whole.returncode == merged.returncode == 0, whole.stderr + merged.stderr
    a, b = json.loads(whole.stdout), json.loads(merged.stdout)
    assert b.pop("shards")["complete"] is True and "shards" not in a
    assert a == b and a["findings"] and a["failing"] == sum(f["count"] for f in a["findings"])
    h, cases, summary = load_run(_shards(runs, "1", "2", "3"))
    H, CASES, SUMMARY = load_run([runs["whole"]])
    assert summary and SUMMARY
    # the tally recomputed over shards
    for key in ("counts", "expectations", "stale_expectations", "surprises"):
        assert summary[key] == SUMMARY[key], key
    assert [{**c, "duration": 0} for c in cases] == [{**c, "duration": 0} for c in CASES]


def test_three_shards_merged_diff_to_nothing_against_the_whole_run(runs):
    for args in (["--old", runs["whole"], "--new", *_shards(runs, "1", "2", "3")],
                 ["--old", *_shards(runs, "2", "3", "1"), "--new", runs["whole"]]):
        proc = _cli("diff", *args)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert ("0 regressed, 0 now failing (expected), 0 fixed, 0 changed, 0 appeared, 0 "
                "disappeared") in proc.stdout


def test_a_missing_shard_is_shown_on_the_first_screen_in_findings_and_fails_the_diff_gate(runs, tmp_path):
    given = _shards(runs, "1", "3")
    proc = _cli("report", *given, "-o", tmp_path / "r.html")
    assert proc.returncode == 0, proc.stderr
    html = (tmp_path / "r.html").read_text()
    first_screen = html[html.index("<body>"):html.index('<h2 id="findings-title"')]
    assert "The run is incomplete (shard 2 of 3 is missing)" in first_screen
    assert 'id="shards-attention"' in first_screen and "Shard 2 of 3 is missing" in first_screen
    text = _cli("findings", *given)
    assert text.returncode == 0 and "The run is incomplete (shard 2 of 3 is missing)" in text.stdout
    js = json.loads(_cli("findings", "--json", *given).stdout)
    assert (js["shards"]["missing"] == [2] and js["shards"]["complete"] is False
            and "incomplete" in js["verdict"]["text"])
    diff = _cli("diff", "--old", runs["whole"], "--new", *given)
    assert (diff.returncode == 1
            and "INCOMPLETE: the new run is incomplete (shard 2 of 3 is missing)" in diff.stdout)


def _edit_header(src: Path, dst: Path, **fields: object) -> Path:
    lines = src.read_text().splitlines(keepends=True)
    head = json.loads(lines[0])
    head.update(fields)
    dst.write_text(json.dumps(head) + "\n" + "".join(lines[1:]))
    return dst


@pytest.mark.parametrize("command", ["report", "findings", "diff"])
def test_shard_files_that_are_not_one_run_are_refused_in_one_line(runs, tmp_path, command):
    other_version = _edit_header(runs["2"], tmp_path / "v.jsonl", backend_version="0.0.1")
    other_n = _edit_header(runs["2"], tmp_path / "n.jsonl", shard="2/4")
    twice = _edit_header(runs["1"], tmp_path / "again.jsonl")  # shard 1/3 run again
    dup = _edit_header(runs["1"], tmp_path / "dup.jsonl", shard="2/3")  # shard 1's cases, labelled 2/3
    version = load_run([runs["whole"]])[0]["backend_version"]
    cases = [
        ([runs["1"], other_version, runs["3"]],
         f"{runs['1']} (ort {version}) and {other_version} (ort 0.0.1): "
         "the shards of one run must share the backend version"),
        ([runs["1"], other_n], f"{runs['1']} (1/3) and {other_n} (2/4): shards of different runs"),
        ([runs["1"], twice, runs["2"]], f"{runs['1']} and {twice}: shard 1/3 given twice"),
        ([runs["1"], dup], f"{runs['1']} (1/3) and {dup} (2/3) both hold case "),
    ]
    for files, message in cases:
        if command == "report":
            proc = _cli("report", *files, "-o", tmp_path / "r.html")
        elif command == "findings":
            proc = _cli("findings", *files)
        else:
            proc = _cli("diff", "--old", runs["whole"], "--new", *files)
        assert proc.returncode == 2, (files, proc.stdout[-500:])
        assert proc.stderr.startswith("error: " + message), proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    if command != "report":  # (report: a scoreboard of several backends' runs)
        proc = _cli(command, *(["--old", runs["whole"], "--new"] if command == "diff" else []), runs["whole"],
                    runs["1"])
        assert proc.returncode == 2 and "not the shard files of one run" in proc.stderr, proc.stderr


def test_shards_of_one_backend_merge_beside_other_runs_in_a_scoreboard(runs, tmp_path):
    other = _edit_header(runs["whole"], tmp_path / "other.jsonl", backend="other-backend")
    proc = _cli("report", runs["1"], other, runs["2"], runs["whole"], runs["3"], "-o",
                tmp_path / "board.html")
    assert proc.returncode == 0, proc.stderr
    html = (tmp_path / "board.html").read_text()
    totals = re.search(r'<table id="totals"><tr>(.*?)</tr>', html)
    assert totals
    version = load_run([runs["whole"]])[0]["backend_version"]
    names = re.findall(r"<th>([^<]*)</th>", totals.group(1))[1:]
    # shards merged, files apart
    assert names == [f"ort {version}", f"other-backend {version}", f"ort {version}"]


def test_shards_that_differ_in_what_they_should_not_merge_with_a_warning_on_the_first_screen(runs, tmp_path):
    odd = _edit_header(runs["2"], tmp_path / "odd.jsonl", onnx_version="0.0.0")
    proc = _cli("report", runs["1"], odd, runs["3"], "-o", tmp_path / "r.html")
    assert proc.returncode == 0, proc.stderr
    html = (tmp_path / "r.html").read_text()
    first_screen = html[html.index("<body>"):html.index('<h2 id="findings-title"')]
    assert ('id="shards-attention"' in first_screen
            and "Warning: the shards differ in onnx_version: " in first_screen)
    assert f"{odd} 0.0.0" in first_screen and "missing" not in first_screen
    assert "Warning: the shards differ in onnx_version" in _cli("findings", runs["1"], odd, runs["3"]).stdout


def test_a_run_missing_shards_calls_no_entry_stale(runs, tmp_path):
    """One shard of three, alone, is a subset of the corpus: an entry all of whose cases passed in that shard
    is no stale entry of the run (the matrix printed "4 stale entries" for CI's one shard of sixteen)."""
    lines = runs["1"].read_text(encoding="utf-8").splitlines()
    summary = json.loads(lines[-1])
    assert summary["type"] == "summary"
    summary["stale_in_shard"] = [{"line": 7, "cases": ["dequantizelinear-23-*"]}]
    summary["stale_unchecked"] = "is a subset of the corpus: --shard 1/3"  # (as a shard of the whole corpus)
    one = tmp_path / "one-shard.jsonl"
    one.write_text("\n".join([*lines[:-1], json.dumps(summary)]) + "\n", encoding="utf-8")
    _, _, merged = load_run([one])
    assert merged is not None
    assert merged["stale_expectations"] == []
    assert "1 of 3 shards" in str(merged.get("stale_unchecked"))
