from __future__ import annotations

import subprocess
import sys

import pytest

from qdq_conformance.cli import build_parser, main
from qdq_conformance.runner.suite import read_manifest


def test_help_lists_every_command():
    text = build_parser().format_help()
    for cmd in ("demo", "specs", "ambiguities"):
        assert cmd in text


def test_demo_runs_and_shows_spec_answers(capsys):
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "[128, 129, 130, 255, 1, 0]" in out
    assert "[127, -128, 127, -128, 2, 4]" in out
    assert "[QDQ008]" in out


def test_specs_counts_1701_ai_onnx_combinations(capsys):
    assert main(["specs"]) == 0
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("ai.onnx::")]
    assert sum(int(ln.split()[1]) for ln in lines) == 1701


def test_console_script_entry_point():
    r = subprocess.run([sys.executable, "-m", "qdq_conformance.cli", "--version"], capture_output=True,
                       text=True)
    assert r.returncode == 0 and "qdq-conformance" in r.stdout


def test_generate_selection_and_coverage_commands(tmp_path, capsys):
    out = tmp_path / "suite.tar.gz"
    assert main(["generate", "--out", str(out), "dynamicquantizelinear-*"]) == 0
    manifest = __import__("json").loads(read_manifest(out))
    assert (manifest["case_count"] >= 10
            and all(e["operator"] == "DynamicQuantizeLinear" for e in manifest["cases"]))
    # (both graph forms by default, as a run of the corpus has them)
    assert all(set(e["folders"]) == {"runtime", "initializer"} for e in manifest["cases"])
    capsys.readouterr()
    assert main(["coverage", "--strict"]) == 0
    text = capsys.readouterr().out
    assert "ai.onnx type combinations: 1701/1701; gaps: 0" in text


def test_generate_reports_a_bad_case_file_and_keeps_going(tmp_path, capsys):
    cases = tmp_path / "cases"
    cases.mkdir()
    (cases / "good.yaml").write_text((__import__("pathlib").Path(__file__).parent / "data"
                                      / "good.yaml").read_text())
    (cases / "bad.yaml").write_text("cases:\n  - id: x\n    colour: red\n")
    code = main(["generate", "--cases", str(cases), "--out", str(tmp_path / "o.tar.gz")])
    err = capsys.readouterr().err
    assert code == 1 and "bad.yaml:2" in err
    assert (tmp_path / "o.tar.gz").exists()


#: every command module, as ``qdq-conformance NAME`` imports it (cli.py's COMMANDS)
COMMAND_MODULES = {"report": "reports.reports_cmd", "repro-check": "repro_cmd", "show": "show_cmd",
                   "mutants": "mutants.mutants_cmd", "matrix": "matrix.matrix_cmd", "fuzz": "fuzz.fuzz_cmd",
                   "compliance": "compliance_cmd", "cases": "frommodel_cmd", "check": "checker.check_cmd",
                   "generate": "generate_cmd", "demo": "spec_cmd"}


@pytest.mark.parametrize("command", ["report", "repro-check", "run"])
def test_a_subcommand_imports_no_other_commands_modules(command):
    """``qdq-conformance NAME`` builds NAME's parser alone (cli.py): a fresh Python that parses
    ``NAME --help`` has imported no other command's module (each cost a part of a second at every start)."""
    code = ("import sys\nfrom qdq_conformance.cli import main\ntry:\n    main([sys.argv[1], '--help'])\n"
            "except SystemExit:\n    pass\nprint(' '.join(m for m in sys.modules if m.startswith('qdq_')))")
    p = subprocess.run([sys.executable, "-c", code, command], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    imported = {m.removeprefix("qdq_conformance.") for m in p.stdout.split()}
    own = {COMMAND_MODULES.get(command), "show_cmd" if command == "repro-check" else None}  # (show's repro)
    assert {m for m in COMMAND_MODULES.values() if m in imported} - own == set()
    assert COMMAND_MODULES.get(command, "cli") in imported
