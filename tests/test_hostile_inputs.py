"""Hostile input to the command line: each is one line naming the file and the problem, a documented exit status,
no traceback, and nothing written where it must not be."""

from __future__ import annotations

from pathlib import Path

from qdq_conformance.cli import main

ESCAPING_CASE = """\
cases:
  - id: evil
    description: An unknown attribute name that walks out of the output folder.
    spec: {operator: QuantizeLinear, versions: "21", text: "Attributes of QuantizeLinear-21."}
    operator: QuantizeLinear
    versions: [21]
    family: basic
    status: invalid
    rule: QDQ012
    types: {x: float, scale: float, y: uint8}
    attributes: {"/../../../escaped": 1}
"""


def test_generate_never_writes_outside_out(tmp_path, capsys):
    cases = tmp_path / "cases"
    cases.mkdir()
    (cases / "evil.yaml").write_text(ESCAPING_CASE)
    out = tmp_path / "a" / "b" / "out"
    assert main(["generate", "--cases", str(cases), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "evil.yaml:2: evil.id: the case id" in err and "Traceback" not in err
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p.parent != cases]
    assert written == [] or all(Path(out) in p.parents for p in written)
    assert not list(tmp_path.rglob("model.onnx"))
