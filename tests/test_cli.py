from __future__ import annotations

import subprocess
import sys

from conformance.cli import build_parser, main


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
    r = subprocess.run([sys.executable, "-m", "conformance.cli", "--version"], capture_output=True, text=True)
    assert r.returncode == 0 and "qdq-conformance" in r.stdout
