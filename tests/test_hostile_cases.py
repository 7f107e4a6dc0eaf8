"""Hostile and broken case files: each is one line naming the file (and line or key) and the problem, with the
documented exit status, no traceback, and it costs only its own cases; selection never hides it, the results
file and the report record it; generate replaces only what it made. Plus a Hypothesis property: the case
loader raises CaseFileError or succeeds, on any bytes and any YAML structure."""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qdq_conformance.errors import CaseFileError
from qdq_conformance.generators.corpus import load_file
from qdq_conformance.generators.limits import MAX_CASES, MAX_DEPTH, MAX_ELEMENTS, MAX_FILE_BYTES, MAX_NODES
from qdq_conformance.runner.suite import MANIFEST_VERSION

GOOD = (Path(__file__).parent / "data" / "good.yaml").read_text()  # one template, one case:
GOOD_ID = "quantizelinear-13-demo-float-uint8"


def _with(text: str, **repl: str) -> str:
    """GOOD with lines replaced (``key='new text'`` replaces the line that starts with ``    key:``) or
    added."""
    out = text.replace("id: demo", "id: other")  # (a case id of its own: no clash with good.yaml)
    for key, new in repl.items():
        pattern = re.compile(rf"^    {key}:.*\n(      .*\n)*", re.M)
        out = pattern.sub(lambda _m, new=new: new, out, count=1) if pattern.search(out) else out + new
    return out


def _invalid(rule: str, extra: str) -> str:
    """An invalid QuantizeLinear-21 template breaking ``rule``, its inputs replaced by ``extra``."""
    return _with(GOOD, versions="    versions: [21]\n", status=f"    status: invalid\n    rule: {rule}\n",
                 inputs="") + extra


_LAUGHS = "".join(f"  l{k}: &l{k} [" + ", ".join([f"*l{k - 1}"] * 10) + "]\n" for k in range(1, 9))
_SIZES = ", ".join(map(str, range(1, 301)))

#: name -> (file content, line or None, the problem: a regex matched against what follows "<file>[:line]: ")
HOSTILE: dict[str, tuple[str | bytes, int | None, str]] = {
    "non-utf8": (b"cases:\n  - id: \xff\xfe\n", 2, r"not UTF-8 text \(byte 0xff at offset 15\)"),
    "utf16": ("cases: []\n".encode("utf-16"), 1, r"not UTF-8 text \(byte 0xff"),
    "latin1-description": (GOOD.replace("description: d", "description: caf\xe9").encode("latin-1"), 3,
                           r"not UTF-8 text \(byte 0xe9"),
    "nul-byte": ("cases:\x00\n", 1, r"invalid YAML: character #x0000 is not allowed"),
    "terminal-escape": (GOOD.replace("description: d", "description: \x1b[2J"), 3,
                        r"invalid YAML: character #x001b is not allowed"),
    "deep-flow-list": ("cases: " + "[" * 20000 + "]" * 20000 + "\n", 1,
                       rf"nested more than {MAX_DEPTH} levels deep"),
    "deep-flow-map": ("cases: " + "{a: " * 5000 + "1" + "}" * 5000 + "\n", 1,
                      r"nested more than \d+ levels deep"),
    "deep-block-list": ("cases:\n" + "".join("  " * k + "-\n" for k in range(1, 60)), 33,
                        r"nested more than \d+ levels deep"),
    "alias-bomb": ("cases: []\nvalues:\n  l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n" + _LAUGHS, 7,
                   rf"more than {MAX_NODES:,} YAML nodes \(aliases count as the nodes they repeat\)"),
    "recursive-alias": ("cases: &a [*a]\n", 1, r"alias \*a refers to a node that contains it"),
    "too-many-nodes": ("cases: [" + "0, " * (MAX_NODES + 10) + "]\n", 1,
                       rf"more than {MAX_NODES:,} YAML nodes"),
    "too-large": ("# " + "x" * MAX_FILE_BYTES + "\ncases: []\n", None,
                  rf"larger than {MAX_FILE_BYTES:,} bytes, the limit for one case file"),
    "id-260-chars": (GOOD.replace("id: demo", "id: " + "a" * 260), 2,
                     r"a+\.\.\.: the case id 'quantizelinear-13-a+' must be at most 160 characters"),
    "attribute-name-260-chars": (_invalid("QDQ009", "    attributes: {" + "b" * 260 + ": 1}\n"), 2,
                                 r"other\.id: the case id .* must be at most 160 characters"),
    "attribute-name-escapes": (_invalid("QDQ009", '    attributes: {"/../../escaped": 1}\n'), 2,
                               r"other\.id: the case id .* must be at most 160 characters of a-z, 0-9 and "
                               r"'-'"),
    "uppercase-id": (GOOD.replace("id: demo", "id: Demo"), 2, r"cases\[0\]\.id: 'Demo' does not match"),
    "integer-5000-digits": (GOOD.replace("versions: [13]", "versions: [" + "9" * 5000 + "]"), 6,
                            r"(cannot read this value: |demo\.versions: no such version)"),
    "python-tag": (GOOD.replace("description: d", "description: !!python/object/apply:os.system ['true']"), 3,
                   r"not plain data .*may not contain tags such as !!python"),
    "set-tag": ("cases: !!set {a, b}\n", 1, r"not plain data \(tag:yaml.org,2002:set\)"),
    "binary-tag": ("cases: !!binary 'AAAA'\n", 1, r"not plain data \(tag:yaml.org,2002:binary\)"),
    "integer-key": ("cases:\n  - 1: 2\n", 2, r"1: keys must be strings"),
    "duplicate-key": (GOOD.replace("    family: basic\n", "    family: basic\n    family: ties\n"), 8,
                      r"family: duplicate key"),
    "duplicate-template-id": (GOOD + GOOD.split("cases:\n", 1)[1], 12,
                              r"demo\.id: duplicate template id \(first at line 2\)"),
    "duplicate-case-id": (GOOD, 2, rf"demo: case id {GOOD_ID} is also produced by \S*/0-good\.yaml:2 "),
    "repeated-size": (_with(GOOD, shape="    shape: {sizes: [3, 3]}\n", inputs=""), 2,
                      r"other: the template gives case id \S+-n3 twice"),
    "empty-file": ("", 1, r"must be an object, got NoneType None"),
    "scalar-document": ("hello\n", 1, r"must be an object, got str 'hello'"),
    "two-documents": ("cases: []\n---\ncases: []\n", 2, r"invalid YAML: but found another document"),
    "unclosed-bracket": (GOOD + "  - id: [unclosed\n", 13, r"invalid YAML: expected ',' or ']'"),
    "no-cases": ("cases: []\n", 1, r"cases: needs at least 1 item\(s\)"),
    "newline-in-key": (GOOD.replace("    family: basic\n",
                                    '    family: basic\n    "colour\\nred\\u2028\\x07": 1\n'), 8,
                       r"cases\[0\]\.colour\\nred\\u2028\\x07: unknown key"),
    "huge-enum-value": (GOOD.replace("family: basic", "family: " + "z" * 100_000), 7,
                        r"cases\[0\]\.family: 'z+\.\.\.$"),
    "negative-dimension": (_with(GOOD, shape="    shape: [-1, 5]\n", inputs=""), 10,
                           r"cases\[0\]\.shape\[0\]: -1 is below the minimum 0"),
    "shape-20000x20000": (_with(GOOD, shape="    shape: [20000, 20000]\n", inputs=""), 10,
                          rf"other\.shape: shape 20000x20000 has 400,000,000 elements, more than the "
                          rf"{MAX_ELEMENTS:,} allowed per tensor"),
    "input-shape-huge": (_invalid("QDQ005",
                                  "    inputs:\n      x: {values: [1], shape: [99999999999999999999]}\n"),
                         11, r"other\.inputs\.x\.shape: shape huge has more than 10\*\*18 elements"),
    "attribute-sweep-80000": (_invalid("QDQ009", "    attributes: {a: [" + ", ".join(map(str, range(400))) +
                                       "], b: [" + ", ".join(map(str, range(200))) + "]}\n"), 2,
                              rf"other: expands into more than {MAX_CASES:,} cases"),
    "size-sweep": (_with(GOOD, versions="    versions: all\n", types="    types: {x: any, y: any}\n",
                         shape=f"    shape: {{sizes: [{_SIZES}]}}\n", inputs=""), 2,
                   rf"other: expands into more than {MAX_CASES:,} cases"),
    "entry-of-another-operator": (_with(GOOD, status="    status: implementation-defined\n"
                                              "    ambiguity: block-size-empty-axis\n"), 9,
                                  r"other\.ambiguity: quantizelinear-13-other-float-uint8: ai\.onnx "
                                  r"QuantizeLinear-13 is not among the operators of block-size-empty-axis "
                                  r"\(QuantizeLinear 21-28, DequantizeLinear 21-28\)"),
    "unknown-version": (GOOD.replace("versions: [13]", "versions: [99999999999999999999]"), 6,
                        r"demo\.versions: no such version\(s\)"),
}
def _cli(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "qdq_conformance.cli", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=600, env=env)


def _env(tmp: Path) -> dict[str, str]:
    return {**os.environ, "QDQ_CACHE_DIR": str(tmp / "cache")}


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """Every hostile file beside one good one; one `run` (-k selecting the good case) and one `generate`."""
    tmp = tmp_path_factory.mktemp("hostile")
    cases = tmp / "cases"
    cases.mkdir()
    (cases / "0-good.yaml").write_text(GOOD)  # (collected first: it keeps its id)
    for name, (content, _, _) in HOSTILE.items():
        path = cases / f"{name}.yaml"
        path.write_bytes(content) if isinstance(content, bytes) else path.write_text(content,
                                                                                     encoding="utf-8")
    results = tmp / "r.jsonl"
    run = _cli("run", "--backend=onnx-reference", "--cases", str(cases), "--expectations", "none", "--form",
               "runtime", "--results", str(results), "--report", str(tmp / "r.html"), "--", "-k", GOOD_ID,
               cwd=tmp, env=_env(tmp))
    gen = _cli("generate", "--cases", str(cases), "--out", str(tmp / "suite"), "--format", "folder", cwd=tmp,
               env=_env(tmp))
    records = [json.loads(line) for line in results.read_text().splitlines()]
    return {"cases": cases, "run": run, "generate": gen, "records": records, "tmp": tmp}


def _expected(cases: Path, name: str) -> re.Pattern[str]:
    _, line, problem = HOSTILE[name]
    where = re.escape(str(cases / f"{name}.yaml")) + (f":{line}" if line else "")
    return re.compile(f"{where}: (.*: )?{problem}")


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_case_file_is_one_line_and_costs_only_itself(hostile: dict[str, object], name: str) -> None:
    cases, run, gen = hostile["cases"], hostile["run"], hostile["generate"]
    assert isinstance(cases, Path)
    assert isinstance(run, subprocess.CompletedProcess) and isinstance(gen, subprocess.CompletedProcess)
    expected = _expected(cases, name)
    # run: exit 1 (a case file could not be loaded), its error recorded under its file's name, in one line
    assert run.returncode == 1, run.stdout[-3000:] + run.stderr[-3000:]
    assert "Traceback" not in run.stdout + run.stderr
    (rec,) = [r for r in hostile["records"] if r.get("id") == f"case-file:{name}.yaml"]  # type: ignore[union-attr]
    assert rec["status"] == "error" and rec["form"] == "load" and rec["file"] == str(cases / f"{name}.yaml")
    assert "\n" not in rec["message"] and len(rec["message"]) < 1500
    assert expected.match(rec["message"]), rec["message"]
    # generate: exit 1 (errors, the good case written), one line on stderr for this file
    assert gen.returncode == 1 and "Traceback" not in gen.stdout + gen.stderr, gen.stderr[-3000:]
    lines = [ln for ln in gen.stderr.splitlines() if ln.startswith(f"error: {cases / name}.yaml")]
    assert len(lines) == 1 and expected.match(lines[0][len("error: "):]), gen.stderr[-3000:]


def test_selection_never_hides_a_load_error_and_the_good_case_runs(hostile: dict[str, object]) -> None:
    run = hostile["run"]
    assert isinstance(run, subprocess.CompletedProcess)
    records = hostile["records"]
    assert isinstance(records, list)
    ran = [r for r in records if r.get("type") == "case" and r["form"] != "load"]
    # -k selected it; the others are errors
    assert [(r["id"], r["status"]) for r in ran] == [(GOOD_ID, "passed")]
    errors = [r for r in records if r.get("form") == "load"]
    assert len(errors) == len(HOSTILE)
    summary = records[-1]
    assert summary["type"] == "summary" and summary["counts"] == {"error": len(HOSTILE), "passed": 1}
    assert f"{len(HOSTILE)} failed, 1 passed in" in run.stdout and "deselected" not in run.stdout
    # the report counts them too
    tmp = hostile["tmp"]
    assert isinstance(tmp, Path)
    html = (tmp / "r.html").read_text()
    assert re.search(r'data-status="error">\s*' + str(len(HOSTILE)) + r"\s*<", html)
    manifest = json.loads((tmp / "suite" / "manifest.json").read_text())
    assert [e["id"] for e in manifest["cases"]] == [GOOD_ID]


def test_a_marker_selection_that_matches_nothing_still_fails_on_a_load_error(tmp_path: Path) -> None:
    cases = tmp_path / "cases"
    cases.mkdir()
    (cases / "good.yaml").write_text(GOOD)
    (cases / "bad.yaml").write_bytes(b"cases:\n  - id: \xff\n")
    res = tmp_path / "r.jsonl"
    p = _cli("run", "--backend=onnx-reference", "--cases", str(cases), "--expectations", "none", "--results",
             str(res), "--", "-m", "v21", cwd=tmp_path, env=_env(tmp_path))
    assert p.returncode == 1, p.stdout[-2000:]
    # (the good file's cases are not collected at all: a -k / -m selection skips the items it cannot match
    # before they are built, plugin/selection.py, so pytest reports no "deselected" for them)
    assert "Traceback" not in p.stdout + p.stderr and "1 failed in " in p.stdout
    (rec,) = [json.loads(x) for x in res.read_text().splitlines() if '"case"' in x]
    assert (rec["id"] == "case-file:bad.yaml"
            and rec["message"].startswith(f"{cases / 'bad.yaml'}:2: not UTF-8"))


def test_duplicate_ids_across_files_are_one_error_naming_both(tmp_path: Path) -> None:
    from qdq_conformance.generators.corpus import case_files, load

    cases = tmp_path / "cases"
    cases.mkdir()
    (cases / "a.yaml").write_text(GOOD)
    (cases / "b.yaml").write_text("# the same template again\n" + GOOD)
    corpus = load(case_files(cases))
    assert [c.id for c in corpus.cases] == [GOOD_ID] and len(corpus.errors) == 1
    assert str(corpus.errors[0]) == (f"{cases / 'b.yaml'}:3: demo: case id {GOOD_ID} is also produced by "
                                     f"{cases / 'a.yaml'}:2 (case ids must be unique across the case files)")
    res = tmp_path / "r.jsonl"
    p = _cli("run", "--backend=onnx-reference", "--cases", str(cases), "--expectations", "none", "--results",
             str(res), cwd=tmp_path, env=_env(tmp_path))
    assert p.returncode == 1 and "Traceback" not in p.stdout + p.stderr
    recs = [json.loads(x) for x in res.read_text().splitlines() if '"case"' in x]
    assert sorted((r["id"], r["form"]) for r in recs) == [("case-file:b.yaml", "load"),
                                                          (GOOD_ID, "initializer"),
                                                           (GOOD_ID, "runtime")]


def test_a_broken_suite_manifest_is_one_error_item(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "manifest.json").write_text('{"cases": [\n')
    p = _cli("run", "--backend=onnx-reference", "--suite", str(suite), "--expectations", "none", cwd=tmp_path,
             env=_env(tmp_path))
    assert p.returncode == 1 and "Traceback" not in p.stdout + p.stderr and "1 failed in" in p.stdout
    assert f"case file error: {suite / 'manifest.json'}: cannot read the suite: JSONDecodeError" in p.stdout


@pytest.mark.parametrize("content,problem", [
    (b"not gzip at all", "cannot read it as a gzipped tar archive"),
    (gzip.compress(b"x" * 1024, mtime=0), "not a tar archive"),
    ("truncated", "ends inside"),
], ids=["not-gzip", "not-tar", "truncated"])
def test_a_broken_suite_archive_is_one_error_item(tmp_path: Path, good_cases: Path, content: object,
                                                  problem: str) -> None:
    suite = tmp_path / "suite.tar.gz"
    if content == "truncated":
        assert _cli("generate", "--cases", str(good_cases), "--out", str(suite), cwd=tmp_path,
                    env=_env(tmp_path)).returncode == 0
        suite.write_bytes(suite.read_bytes()[:-200])
    else:
        suite.write_bytes(content)  # type: ignore[arg-type]
    p = _cli("run", "--backend=onnx-reference", "--suite", str(suite), "--expectations", "none", cwd=tmp_path,
             env=_env(tmp_path))
    assert p.returncode == 1 and "Traceback" not in p.stdout + p.stderr and "1 failed in" in p.stdout
    assert f"case file error: {suite}: cannot read the suite: ArchiveError: {suite}: " in p.stdout
    assert problem in p.stdout, p.stdout[-2000:]


def test_a_suite_manifest_naming_a_folder_outside_the_suite_is_refused(tmp_path: Path) -> None:
    suite = tmp_path / "suite"
    suite.mkdir()
    (tmp_path / "elsewhere").mkdir()
    (suite / "manifest.json").write_text(json.dumps({"manifest_version": MANIFEST_VERSION, "cases": [
        {"id": "x", "status": "normative", "outputs": [], "folders": {"runtime": "../elsewhere"}}]}))
    p = _cli("run", "--backend=onnx-reference", "--suite", str(suite), "--expectations", "none", cwd=tmp_path,
             env=_env(tmp_path))
    assert p.returncode == 1 and "Traceback" not in p.stdout + p.stderr
    assert "folder '../elsewhere' is outside the suite" in p.stdout


# --- generate --out: replace only what generate made
# -------------------------------------------------------------

@pytest.fixture()
def good_cases(tmp_path: Path) -> Path:
    cases = tmp_path / "cases"
    cases.mkdir()
    (cases / "good.yaml").write_text(GOOD)
    return cases


def test_generate_replaces_its_own_stale_cases_and_keeps_the_rest(tmp_path: Path, good_cases: Path) -> None:
    out = tmp_path / "suite"
    env = _env(tmp_path)
    assert _cli("generate", "--cases", str(good_cases), "--out", str(out), "--format", "folder", cwd=tmp_path,
                env=env).returncode == 0
    (out / "notes.txt").write_text("mine")
    (good_cases / "good.yaml").write_text(GOOD.replace("id: demo", "id: renamed"))
    p = _cli("generate", "--cases", str(good_cases), "--out", str(out), "--format", "folder", cwd=tmp_path,
             env=env)
    assert p.returncode == 0, p.stderr
    assert sorted(x.name for x in out.iterdir()) == ["LICENSE", "README.md", "implementation-defined",
                                                     "invalid", "manifest.json", "normative", "notes.txt"]
    assert sorted(x.name for x in (out / "normative").iterdir()) == [
        "test_quantizelinear-13-renamed-float-uint8",
        "test_quantizelinear-13-renamed-float-uint8_initializer"]


@pytest.mark.parametrize("setup,message", [
    ("foreign", "not empty, and not made by qdq-conformance generate"),
    ("file", "exists and is not a folder"),
    ("escaping-manifest", "not empty, and not made by qdq-conformance generate"),
    ("broken-manifest", "not empty, and not made by qdq-conformance generate"),
    ("in-the-way", "exists and was not made by qdq-conformance generate; not replaced"),
    ("foreign-readme", "README.md: exists and was not made by qdq-conformance generate; not replaced"),
    ("kind-link", "normative: exists and is not a folder generate made; not replaced"),
])
def test_generate_refuses_what_it_did_not_make(tmp_path: Path, good_cases: Path, setup: str,
                                               message: str) -> None:
    out = tmp_path / "suite"
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep").write_text("x")
    if setup == "file":
        out.write_text("x")
    else:
        out.mkdir()
        (out / "keep.txt").write_text("x")
    if setup == "escaping-manifest":
        (out / "manifest.json").write_text(json.dumps({"suite": "onnx-qdq-conformance",
                                                       "cases": [{"folders": {"runtime": "../victim"}}]}))
    elif setup == "broken-manifest":
        (out / "manifest.json").write_text("[" * 100_000)
    elif setup == "in-the-way":
        (out / "manifest.json").write_text(json.dumps({"suite": "onnx-qdq-conformance", "cases": []}))
        (out / "normative" / f"test_{GOOD_ID}").mkdir(parents=True)
        (out / "normative" / f"test_{GOOD_ID}" / "mine").write_text("x")
    elif setup in ("foreign-readme", "kind-link"):  # (an earlier generate's manifest, which lists no README)
        (out / "manifest.json").write_text(json.dumps({"suite": "onnx-qdq-conformance", "cases": []}))
        if setup == "foreign-readme":
            (out / "README.md").write_text("mine")
        else:
            (out / "normative").symlink_to(victim)
    before = sorted(str(p) for p in tmp_path.rglob("*") if "cache" not in p.parts)
    p = _cli("generate", "--cases", str(good_cases), "--out", str(out), "--format", "folder", cwd=tmp_path,
             env=_env(tmp_path))
    assert p.returncode == 2 and "Traceback" not in p.stderr
    (line,) = p.stderr.strip().splitlines()
    assert line.startswith(f"error: {out}") and message in line
    assert sorted(str(p) for p in tmp_path.rglob("*") if "cache" not in p.parts) == before  # nothing written


@pytest.mark.parametrize("name,form", [("suite", "folder"), ("suite.tar.gz", "tar.gz")])
def test_an_out_folder_that_cannot_be_made_is_one_line(tmp_path: Path, good_cases: Path, name: str,
                                                       form: str) -> None:
    (tmp_path / "file").write_text("x")
    out = tmp_path / "file" / name  # (its parent is a file: the folder cannot be made, root or not)
    p = _cli("generate", "--cases", str(good_cases), "--out", str(out), "--format", form, cwd=tmp_path,
             env=_env(tmp_path))
    assert p.returncode == 2 and "Traceback" not in p.stderr
    (line,) = p.stderr.strip().splitlines()
    assert line.startswith(f"error: --out {out}: cannot write") and "Errno" not in line, line


def test_generate_replaces_its_own_archive_and_nothing_else(tmp_path: Path, good_cases: Path) -> None:
    """The default format: an archive --out names; one an earlier generate wrote is replaced, any other file
    (or a folder of that name) is refused in one line with nothing written; a name that is not an archive's
    is refused, saying how to write a folder."""
    env = _env(tmp_path)
    out = tmp_path / "suite.tar.gz"
    p = _cli("generate", "--cases", str(good_cases), "--out", str(out), cwd=tmp_path, env=env)
    assert p.returncode == 0, p.stderr
    (good_cases / "good.yaml").write_text(GOOD.replace("id: demo", "id: renamed"))
    p = _cli("generate", "--cases", str(good_cases), "--out", str(out), cwd=tmp_path, env=env)
    assert p.returncode == 0, p.stderr
    with tarfile.open(out) as tar:
        names = tar.getnames()
    renamed = "suite/normative/test_quantizelinear-13-renamed-float-uint8/model.onnx"
    assert names[0] == "suite/manifest.json" and renamed in names and not any("-demo-" in n for n in names)
    assert sorted(x.name for x in tmp_path.iterdir() if x.name != "cache") == ["cases", "suite.tar.gz"]
    for setup, message in (("foreign", "exists and is not a suite archive qdq-conformance generate wrote"),
                           ("folder", "exists and is not a file")):
        other = tmp_path / setup / "other.tar.gz"
        other.parent.mkdir()
        other.mkdir() if setup == "folder" else other.write_bytes(b"\x1f\x8b not mine")
        before = sorted(str(x) for x in tmp_path.rglob("*") if "cache" not in x.parts)
        p = _cli("generate", "--cases", str(good_cases), "--out", str(other), cwd=tmp_path, env=env)
        assert p.returncode == 2 and p.stderr.strip() == f"error: {other}: {message}" + (
            "; not replaced" if setup == "foreign" else " (an archive's --out names a file)"), p.stderr
        assert sorted(str(x) for x in tmp_path.rglob("*") if "cache" not in x.parts) == before
    p = _cli("generate", "--cases", str(good_cases), "--out", str(tmp_path / "plain"), cwd=tmp_path, env=env)
    assert p.returncode == 2 and "Traceback" not in p.stderr and not (tmp_path / "plain").exists()
    assert "an archive's name ends in .tar.gz or .tgz" in p.stderr and "--format folder" in p.stderr


# --- the loader, on anything
# ---------------------------------------------------------------------------------------

_scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=12),
                     st.sampled_from(["QuantizeLinear", "all", "21+", "any", "float", "uint8", "basic",
                                      "normative", "invalid", "per-axis", "blocked", "ties", "QDQ009", "y",
                                      "nan", "-0"]))
_trees = st.recursive(_scalars, lambda kids: st.one_of(st.lists(kids, max_size=4),
                                                       st.dictionaries(st.text(max_size=8), kids,
                                                                       max_size=4)),
                      max_leaves=12)
_KEYS = ["id", "description", "spec", "operator", "domain", "versions", "family", "status", "rule", "types",
         "zero_point", "granularity", "shape", "attributes", "inputs", "expected", "compare", "tier",
         "ambiguity"]


def _load(tmp: Path, data: bytes) -> None:
    path = tmp / "fuzz.yaml"
    path.write_bytes(data)
    try:
        load_file(path, ("default",))
    except CaseFileError as e:
        assert "\n" not in str(e) and str(e).startswith(str(path))


_SETTINGS = settings(max_examples=60, deadline=None, derandomize=True,
                     suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@_SETTINGS
@given(data=st.binary(max_size=300))
def test_any_bytes_load_or_fail_cleanly(tmp_path: Path, data: bytes) -> None:
    _load(tmp_path, data)


@_SETTINGS
@given(doc=_trees)
def test_any_yaml_structure_loads_or_fails_cleanly(tmp_path: Path, doc: object) -> None:
    _load(tmp_path, yaml.safe_dump(doc, allow_unicode=True).encode("utf-8", "surrogatepass"))


@_SETTINGS
@given(changes=st.dictionaries(st.sampled_from(_KEYS), _trees, max_size=3))
def test_any_change_to_a_good_template_loads_or_fails_cleanly(tmp_path: Path,
                                                              changes: dict[str, object]) -> None:
    doc = yaml.safe_load(GOOD)
    doc["cases"][0].update(changes)
    _load(tmp_path, yaml.safe_dump(doc, allow_unicode=True).encode("utf-8", "surrogatepass"))
