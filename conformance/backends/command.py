"""``command:CMD``: an external runner, for runtimes without Python.

For every case the runner writes the case in the exported layout and runs ``CMD CASE_DIR OUT_DIR``:

    CASE_DIR/model.onnx
    CASE_DIR/test_data_set_0/input_K.pb    (one TensorProto per graph input, in graph-input order)

The command writes ``OUT_DIR/output_K.pb`` (one TensorProto per graph output, in order) and exits with:

    0   outputs written
    77  unsupported: the model uses something the runtime does not implement (reason on the last stderr line)
    78  rejected: the runtime refuses the model as invalid (reason on the last stderr line)
    any other status: an error (stderr is reported)

CMD is split like a shell command line (shlex), so ``command:python my_runner.py --device cpu`` works.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import onnx

from ..generators.suite_layout import DATA_SET, MODEL, input_file, output_file, read_tensor
from ..types import to_tensor_proto
from .base import Rejected, Unsupported

EXIT_UNSUPPORTED = 77
EXIT_REJECTED = 78


class CommandBackend:
    def __init__(self, command: str, version: str = "unknown") -> None:
        self.argv = shlex.split(command)
        if not self.argv:
            raise ValueError("command: needs a command line, e.g. command:./my_runner")
        program = self.argv[0]
        if shutil.which(program) is None:  # (a usage error before any case runs, not an error in every case)
            where = "no such file" if not os.path.exists(program) else "not an executable file"
            raise ValueError(f"command:{command}: {program}: " + (where if os.sep in program else
                                                                   "not found on PATH"))
        self.name = f"command:{command}"
        self.version = version

    def run(self, model: onnx.ModelProto, feeds: Mapping[str, np.ndarray]) -> list[np.ndarray]:
        with tempfile.TemporaryDirectory(prefix="qdq-case-") as tmp:
            case_dir, out_dir = Path(tmp) / "case", Path(tmp) / "out"
            data = case_dir / DATA_SET
            data.mkdir(parents=True)
            out_dir.mkdir()
            (case_dir / MODEL).write_bytes(model.SerializeToString())
            for k, inp in enumerate(model.graph.input):
                tensor = to_tensor_proto(feeds[inp.name], inp.name)
                (data / input_file(k)).write_bytes(tensor.SerializeToString())
            proc = subprocess.run([*self.argv, str(case_dir), str(out_dir)], capture_output=True, text=True,
                                  errors="replace")
            reason = _last_line(proc.stderr) or _last_line(proc.stdout) or f"exit status {proc.returncode}"
            if proc.returncode == EXIT_UNSUPPORTED:
                raise Unsupported(reason)
            if proc.returncode == EXIT_REJECTED:
                raise Rejected(reason)
            if proc.returncode != 0:
                raise RuntimeError(f"{self.argv[0]} exited with status {proc.returncode}: "
                                   f"{proc.stderr.strip()[-2000:]}")
            outputs = []
            for k in range(len(model.graph.output)):
                path = out_dir / output_file(k)
                if not path.exists():
                    raise RuntimeError(f"{self.argv[0]} wrote no {path.name}")
                outputs.append(read_tensor(path))
            return outputs

    def repro(self, model_code: str, output_names: list[str]) -> str:
        # (what run() does: the case in the exported layout, the command, its outputs read back)
        return (f"{model_code}\nimport os, subprocess, tempfile\n"
                "d = tempfile.mkdtemp(); os.makedirs(f'{d}/case/test_data_set_0'); os.makedirs(f'{d}/out')\n"
                "onnx.save(model, f'{d}/case/model.onnx')\n"
                "for k, i in enumerate(model.graph.input):\n"
                "    onnx.save_tensor(numpy_helper.from_array(feeds[i.name], i.name),\n"
                "                     f'{d}/case/test_data_set_0/input_{k}.pb')\n"
                f"done = subprocess.run({self.argv!r} + [f'{{d}}/case', f'{{d}}/out'], check=False)\n"
                "print('exit status', done.returncode)\n"
                "outputs = [numpy_helper.to_array(onnx.load_tensor(f'{d}/out/output_{k}.pb'))\n"
                "           for k in range(len(model.graph.output))]\n"
                f"for name, value in zip({output_names!r}, outputs):\n    print(name, value.dtype, value)\n")


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in (text or "").strip().splitlines() if ln.strip()]
    return lines[-1][:500] if lines else ""
