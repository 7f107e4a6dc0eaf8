#!/usr/bin/env python3
"""A worked example of an external runner for ``--backend command:CMD``.

Usage (the suite calls it once per case):  command_runner.py CASE_DIR OUT_DIR

CASE_DIR holds model.onnx and test_data_set_0/input_K.pb (graph-input order); write OUT_DIR/output_K.pb and
exit 0; exit 77 for "not implemented", 78 for "invalid model", with the reason as the last line on stderr.
A runtime without Python does the same in its own language. This one uses ONNX Runtime's Python API, so

    pytest --backend "command:python examples/command_runner.py" -k quantizelinear-21-ties

should agree with --backend ort.
"""

import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper


def main(case_dir: str, out_dir: str) -> int:
    import onnxruntime as ort

    case, out = Path(case_dir), Path(out_dir)
    model = onnx.load(str(case / "model.onnx"))
    feeds = {}
    for k, inp in enumerate(model.graph.input):
        tensor = onnx.load_tensor(str(case / "test_data_set_0" / f"input_{k}.pb"))
        feeds[inp.name] = numpy_helper.to_array(tensor)
    try:
        sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    except Exception as e:  # noqa: BLE001 - the runner's contract is an exit status
        text = str(e)
        print(text.strip().splitlines()[0] if text.strip() else "rejected", file=sys.stderr)
        return 77 if "NOT_IMPLEMENTED" in text or "IR version" in text else 78
    if any(a.dtype.kind not in "biuf" for a in feeds.values()):
        print("this example feeds numpy-native types only", file=sys.stderr)
        return 77
    outputs = sess.run(None, feeds)
    for k, (value, info) in enumerate(zip(outputs, model.graph.output, strict=True)):
        tensor = numpy_helper.from_array(np.asarray(value), info.name)
        (out / f"output_{k}.pb").write_bytes(tensor.SerializeToString())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
