"""Results files as `report`, `findings` and `diff` read them: bad files are one-line errors (exit 2), never
tracebacks; an incomplete file (no summary line, malformed lines skipped, a run interrupted or stopped before
its first case) is read, said in one line per reason on stderr and marked INCOMPLETE on the report's first
screen; a diff with an incomplete or empty side fails the regression gate (--allow-incomplete accepts an
incomplete one)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from qdq_conformance import __version__
from qdq_conformance.cli import main
from qdq_conformance.results import ResultsError, ResultsWriter, encode_record, header, read

from .results_files import record

HEAD = json.dumps(header("fake", "1.0"))


def _case(case_id: str, status: str) -> str:
    """A case record's line, as the runner writes it."""
    return encode_record(record(case_id, status, backend=("fake", "1.0")))


def _edited(line: str, **changes: object) -> str:
    """A writer-made line with keys changed (None: removed): what another tool, or an older format, writes."""
    obj = json.loads(line)
    obj.update({k: v for k, v in changes.items() if v is not None})
    return json.dumps({k: v for k, v in obj.items() if changes.get(k, "") is not None})


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
    ([HEAD, '"just a string"', SUMMARY], None, "2: a record must be a JSON object"),
    ([HEAD, '{"type": "case", "id": 3, "status": "passed"}'], None, "2: a case record needs"),
    ([HEAD, '{"type": "case", "id": "a"}'], None, "2: a case record needs"),
    ([HEAD, '{"type": "mystery"}'], None, "2: unknown record type"),
    ([HEAD, _case("a", "passed"), HEAD], None, "3: a second header"),
    ([HEAD, _edited(_case("a", "passed"), colour="red")], None, '2: unknown key "colour" for a case record'),
    ([HEAD, _edited(_case("a", "passed"), operator=None)], None,
     '2: missing key "operator" for a case record'),
    ([HEAD, _edited(_case("a", "passed"), status="xx")], None, '2: status "xx" is not a run status'),
    ([_edited(HEAD, read=[]), _case("a", "passed")], None, '1: unknown key "read" for a header record'),
    ([_edited(HEAD, python=None), _case("a", "passed")], None, '1: missing key "python" for a header record'),
    ([HEAD, _case("a", "passed"), '{"type": "summary", "count": {}}'], None,
     '3: unknown key "count" for a summary record'),
    ([HEAD, _edited(_case("a", "failed"), expectation={"status": "failed", "line": 3})], None,
     '2: expectation: missing keys "link", "reason"'),
    ([_edited(HEAD, format="onnx-qdq-conformance-results/1", suite_version="0.1.0")], None,
     "1: results format 1 (written by onnx-qdq-conformance 0.1.0): this version reads format 2; "
     "onnx-qdq-conformance 0.1.0 reads format 1"),
    ([_edited(HEAD, format="onnx-qdq-conformance-results/3")], None,
     f'1: results format "3" (written by onnx-qdq-conformance {__version__}): this version reads format 2; '
     "a newer onnx-qdq-conformance wrote it"),
])
def test_bad_results_files_are_one_line_errors(tmp_path, capsys, lines, raw, message):
    path = _file(tmp_path, "bad.jsonl", lines, raw)
    with pytest.raises(ResultsError, match=re.escape(message)):
        read(path)
    for argv in (["report", str(path), "-o", str(tmp_path / "r.html")],
                 ["diff", str(_file(tmp_path, "ok.jsonl", [HEAD, _case("a", "passed"), SUMMARY])),
                  str(path)]):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert (err.startswith("error: ") and message in err and len(err.splitlines()) == 1
                and str(path) in err)


def test_missing_results_file(tmp_path, capsys):
    assert main(["report", str(tmp_path / "nope.jsonl"), "-o", str(tmp_path / "r.html")]) == 2
    assert "nope.jsonl: cannot read" in capsys.readouterr().err


def test_a_cut_last_line_is_an_interrupted_run(tmp_path):
    path = _file(tmp_path, "cut.jsonl", [],
                 raw=(HEAD + "\n" + _case("a", "passed") + "\n" + '{"type": "ca').encode())
    head, cases, summary = read(path)
    assert head["backend"] == "fake" and [c["id"] for c in cases] == ["a"] and summary is None
    assert head["read"] == [{"file": str(path), "summary": False, "malformed": 1, "first_malformed": 3}]


GARBLED = "\x00\x00\xff garbled"
#: name -> (lines of the file, the one line each reader says: none for a whole file)
INCOMPLETE: dict[str, tuple[list[str], list[str]]] = {
    "whole": ([HEAD, _case("a", "passed"), SUMMARY], []),
    "header-only": ([HEAD],
                    ["{f}: incomplete: no summary line (the run was killed, crashed or is still running"]),
    "cut-in-the-middle": ([HEAD, _case("a", "passed"), '{"type": "case", "id": "b", "form": "ru'],
                          ["{f}: incomplete: no summary line (the run was killed, crashed or is still "
                           "running: the cases it had not finished are missing); 1 malformed line skipped "
                           "(not JSON: cut short or garbled), the first at line 3"]),
    "garbled-lines": ([HEAD, _case("a", "passed"), "{not json", _case("b", "passed"), GARBLED, "[" * 100000,
                       SUMMARY],
                      ["{f}: incomplete: 3 malformed lines skipped (not JSON: cut short or garbled), the "
                       "first at line 3"]),
    "integer-too-long": ([HEAD, _case("a", "passed"),
                          '{"type": "case", "id": "b", "duration": ' + "9" * 5000 + "}", SUMMARY],
                         ["{f}: incomplete: 1 malformed line skipped (not JSON: cut short or garbled), the "
                          "first at line 3"]),
    "interrupted": ([HEAD, _case("a", "passed"), json.dumps({"type": "summary", "counts": {"passed": 1},
                                                             "interrupted": True, "signal": "SIGTERM"})],
                    ["fake 1.0: incomplete: the run was interrupted (SIGTERM)"]),
    "backend-not-created": ([HEAD,
                             json.dumps({"type": "summary", "counts": {},
                                         "error": "backend 'x' could not be created: x cannot be imported"})],
                            ["fake 1.0: incomplete: the run ended before its first case (backend 'x' could "
                             "not be created: x cannot be imported)"]),
}


@pytest.mark.parametrize("name", list(INCOMPLETE))
def test_every_reader_says_in_one_line_that_a_file_is_incomplete(tmp_path, capsys, name):
    lines, said = INCOMPLETE[name]
    path = _file(tmp_path, f"{name}.jsonl", lines)
    said = [line.replace("{f}", str(path)) for line in said]
    whole = _file(tmp_path, "whole-old.jsonl", [HEAD, _case("a", "passed"), SUMMARY])
    html = tmp_path / "r.html"

    def warnings() -> list[str]:
        err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
        assert all(ln.startswith("warning: ") and ": incomplete: " in ln for ln in err), err
        return [ln[len("warning: "):] for ln in err]

    for argv in (["report", str(path), "-o", str(html)], ["findings", str(path)],
                 ["report", str(path), str(whole), "-o", str(html)]):  # (a scoreboard)
        assert main(argv) == 0
        got = warnings()
        assert len(got) == len(said) and all(g.startswith(w) for g, w in zip(got, said, strict=True)), got
        if argv[0] == "report":
            page = html.read_text()
            assert ("INCOMPLETE RESULTS: " in page) == bool(said)
            if said:  # on the first screen: right under the title, before the verdict
                assert page.index("INCOMPLETE RESULTS: ") < page.index("</h1>") + 200
    # diff: an incomplete side fails the gate, whichever side it is, unless --allow-incomplete
    for old, new in ((whole, path), (path, whole)):
        assert main(["diff", str(old), str(new)]) == (1 if said else 0), name
        out = capsys.readouterr()
        assert ("INCOMPLETE: " in out.out) == bool(said)
        assert len([ln for ln in out.err.splitlines() if ln.strip()]) == len(said)
        empty = name in ("header-only", "backend-not-created") and new == path  # (nothing to compare: never)
        assert main(["diff", str(old), str(new), "--allow-incomplete"]) == (1 if empty else 0), name
        out = capsys.readouterr()
        if said and not empty:
            assert "INCOMPLETE (accepted: --allow-incomplete): " in out.out


def test_allow_incomplete_still_fails_a_regression(tmp_path, capsys):
    old = _file(tmp_path, "old.jsonl", [HEAD, _case("a", "passed"), _case("b", "passed"), SUMMARY])
    new = _file(tmp_path, "new.jsonl", [HEAD, _case("a", "failed"), GARBLED])
    assert main(["diff", str(old), str(new), "--allow-incomplete"]) == 1
    assert "1 regressed" in capsys.readouterr().out


def test_a_file_header_cannot_claim_to_be_whole(tmp_path):
    """What the reader notes of a file (``read``) is never taken from the file: a header that holds it is
    refused, and the reader's own note says what it found."""
    forged = json.dumps({**json.loads(HEAD), "read": [{"file": "x", "summary": True, "malformed": 0}]})
    path = _file(tmp_path, "forged.jsonl", [forged, _case("a", "passed"), GARBLED])
    with pytest.raises(ResultsError, match='1: unknown key "read" for a header record'):
        read(path)
    head, _, _ = read(_file(tmp_path, "honest.jsonl", [HEAD, _case("a", "passed"), GARBLED]))
    assert head["read"] == [{"file": str(tmp_path / "honest.jsonl"), "summary": False, "malformed": 1,
                             "first_malformed": 3}]


def test_the_writer_refuses_a_record_with_an_unknown_or_a_missing_key(tmp_path):
    """A record with a key the schema does not have, and one without a key every record has, are each refused
    in one line naming the case and the key; the file holds neither."""
    writer = ResultsWriter(tmp_path / "r.jsonl")
    head = header("fake", "1.0")
    unknown = record("with-colour", "passed", colour="red")
    missing = record("without-operator", "passed")
    del missing["operator"]  # type: ignore[misc]  # (what a record built by hand can lack)
    for rec, problem in ((unknown, 'unknown key "colour"'), (missing, 'missing key "operator"')):
        with pytest.raises(ResultsError) as info:
            writer.write_record(rec, head)
        text = str(info.value)
        assert problem in text and rec["id"] in text and len(text.splitlines()) == 1, text
    writer.write_record(record("fine", "passed"), head)
    writer.close({"counts": {"passed": 1}}, head)
    assert [c["id"] for c in read(tmp_path / "r.jsonl")[1]] == ["fine"]


def test_shard_files_keep_each_files_incompleteness(tmp_path, capsys):
    def shard(k: int, *tail: str) -> Path:
        head = json.dumps({**json.loads(HEAD), "shard": f"{k}/3"})
        return _file(tmp_path, f"s{k}.jsonl", [head, _case(f"c{k}", "passed"), *tail])
    files = [shard(1, SUMMARY), shard(2, GARBLED, SUMMARY)]  # shard 3 missing; shard 2 with a garbled line
    assert main(["findings", *map(str, files)]) == 0
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert (err == [f"warning: {files[1]}: incomplete: 1 malformed line skipped (not JSON: cut short or "
                    "garbled), the first at line 3",
                    "warning: fake 1.0: incomplete: shard 3 of 3 is missing"]), err


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


def test_the_schema_is_derived_from_the_record_types():
    """FIELDS is not kept beside the typed records: a field added to a record type is checked by the
    reader."""
    from typing import get_type_hints

    from qdq_conformance.results import FIELDS, CaseRecord, Each, ExpectationRecord, Obj, PreviewRecord

    assert set(FIELDS["case"]) == set(get_type_hints(CaseRecord)) - {"type", "id", "status", "backend",
                                                                     "backend_version", "file", "line"}
    assert set(FIELDS["expectation"]) == set(get_type_hints(ExpectationRecord))
    assert set(FIELDS["preview"]) == set(get_type_hints(PreviewRecord))
    assert FIELDS["case"]["expectation"] == Obj("expectation")
    assert FIELDS["case"]["mismatches"] == Each(list, Obj("mismatch"), nullable=False)  # list[MismatchRecord]
    assert FIELDS["case"]["expected"] == Each(list, Obj("preview"))  # list[PreviewRecord | None]
    assert FIELDS["case"]["version"] == (int, str)
