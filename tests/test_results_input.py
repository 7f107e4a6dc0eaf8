"""Results files as `report` and `diff` read them: bad files are one-line errors (exit 2), never tracebacks; a diff
whose new run is empty or did not finish fails the regression gate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from qdq_conformance.cli import main
from qdq_conformance.runner.results import ResultsError, header, read

HEAD = json.dumps(header("fake", "1.0"))


def _case(case_id: str, status: str) -> str:
    return json.dumps({"type": "case", "id": case_id, "form": "runtime", "status": status, "message": ""})


def _file(tmp_path: Path, name: str, lines: list[str], raw: bytes | None = None) -> Path:
    p = tmp_path / name
    if raw is not None:
        p.write_bytes(raw)
    else:
        p.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return p


SUMMARY = json.dumps({"type": "summary", "counts": {}})


@pytest.mark.parametrize(("lines", "raw", "message"), [
    ([], b"", "empty file"),
    ([], b"\x00\xff\xfe garbage", "1: not a JSON line"),
    (["[1, 2, 3]"], None, "1: not a results file"),
    (['{"type": "case", "id": "a", "status": "passed"}'], None, "1: not a results file"),
    ([HEAD, "{not json", _case("a", "passed"), SUMMARY], None, "2: not a JSON line"),
    ([HEAD, '"just a string"', SUMMARY], None, "2: a record must be a JSON object"),
    ([HEAD, '{"type": "case", "id": 3, "status": "passed"}'], None, "2: a case record needs"),
    ([HEAD, '{"type": "case", "id": "a"}'], None, "2: a case record needs"),
    ([HEAD, '{"type": "mystery"}'], None, "2: unknown record type"),
    ([HEAD, _case("a", "passed"), HEAD], None, "3: a second header"),
    ([HEAD, "[" * 100000, SUMMARY], None, "2: not a JSON line"),
])
def test_bad_results_files_are_one_line_errors(tmp_path, capsys, lines, raw, message):
    path = _file(tmp_path, "bad.jsonl", lines, raw)
    with pytest.raises(ResultsError, match=message):
        read(path)
    for argv in (["report", str(path), "-o", str(tmp_path / "r.html")],
                 ["diff", str(_file(tmp_path, "ok.jsonl", [HEAD, _case("a", "passed"), SUMMARY])), str(path)]):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("error: ") and message in err and len(err.splitlines()) == 1 and str(path) in err


def test_missing_results_file(tmp_path, capsys):
    assert main(["report", str(tmp_path / "nope.jsonl"), "-o", str(tmp_path / "r.html")]) == 2
    assert "nope.jsonl: cannot read" in capsys.readouterr().err


def test_a_cut_last_line_is_an_interrupted_run(tmp_path):
    path = _file(tmp_path, "cut.jsonl", [], raw=(HEAD + "\n" + _case("a", "passed") + "\n" + '{"type": "ca').encode())
    head, cases, summary = read(path)
    assert head["backend"] == "fake" and [c["id"] for c in cases] == ["a"] and summary is None


def test_diff_gate_fails_on_an_empty_or_unfinished_new_run(tmp_path, capsys):
    old = _file(tmp_path, "old.jsonl", [HEAD, _case("a", "passed"), _case("b", "failed"), SUMMARY])
    empty = _file(tmp_path, "empty.jsonl", [HEAD])
    unfinished = _file(tmp_path, "unfinished.jsonl", [HEAD, _case("a", "passed")])
    finished = _file(tmp_path, "finished.jsonl", [HEAD, _case("a", "passed"), _case("b", "passed"), SUMMARY])
    assert main(["diff", str(old), str(empty)]) == 1
    assert "INCOMPLETE: the new results file has no case records" in capsys.readouterr().out
    assert main(["diff", str(old), str(unfinished)]) == 1
    assert "INCOMPLETE: the new run did not finish" in capsys.readouterr().out
    assert main(["diff", str(old), str(unfinished), "--exit-zero"]) == 0
    capsys.readouterr()
    assert main(["diff", str(old), str(finished)]) == 0
    assert "INCOMPLETE" not in capsys.readouterr().out
