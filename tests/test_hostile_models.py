"""Hostile and broken models given to ``qdq-conformance check``: each ends in one line naming the file (and
the node or tensor) and the problem, exit status 2 for an input that cannot be read and 1 for a model that
breaks a rule, never a traceback or a hang; a good model given beside it is still checked, and ``--json`` is
always JSON. (tests/test_hostile_models_fuzz.py throws arbitrary bytes and mutated models at the loader.)"""

from __future__ import annotations

import json
import os
import re
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import AttributeProto, TensorProto, helper, numpy_helper

from qdq_conformance.checker import check_file
from qdq_conformance.cli import main

F, U8 = TensorProto.FLOAT, TensorProto.UINT8
SCALE = np.array([0.5, 0.25, 2.0, 1.0], np.float32)


def _model(attrs: dict | None = None, opset: int = 21) -> onnx.ModelProto:
    """x [2, 4] -> QuantizeLinear (per-axis, scale 's', zero point 'z') -> DequantizeLinear -> y."""
    inits = [numpy_helper.from_array(SCALE, "s"), numpy_helper.from_array(np.zeros(4, np.uint8), "z")]
    q = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"], name="q", axis=1, **(attrs or {}))
    dq = helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"], name="dq", axis=1)
    g = helper.make_graph([q, dq], "g", [helper.make_tensor_value_info("x", F, [2, 4])],
                          [helper.make_tensor_value_info("y", F, [2, 4])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 10
    return m


def _init(m: onnx.ModelProto, name: str) -> TensorProto:
    return next(t for t in m.graph.initializer if t.name == name)


def _save(m: onnx.ModelProto, folder: Path, name: str = "model.onnx") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(m.SerializeToString())
    return folder / name


def _raw(data: bytes) -> Callable[[Path], Path]:
    def build(tmp: Path) -> Path:
        (tmp / "model.onnx").write_bytes(data)
        return tmp / "model.onnx"
    return build


def _edit(change: Callable[[onnx.ModelProto], object]) -> Callable[[Path], Path]:
    """The base model with ``change`` applied."""
    def build(tmp: Path) -> Path:
        m = _model()
        change(m)
        return _save(m, tmp)
    return build


def _external(**info: str | None) -> Callable[[Path], Path]:
    """The base model with the scale stored in s.bin; ``info`` overrides its external_data (None: leave
    out)."""
    def build(tmp: Path) -> Path:
        m = _model()
        s = _init(m, "s")
        (tmp / "s.bin").write_bytes(s.raw_data)
        s.ClearField("raw_data")
        s.data_location = TensorProto.EXTERNAL
        entries = {"location": "s.bin", "offset": "0", "length": "16", **info}
        for key, value in entries.items():
            if value is not None:
                s.external_data.add(key=key, value=value)
        return _save(m, tmp)
    return build


def _then(build: Callable[[Path], Path], prepare: Callable[[Path], object]) -> Callable[[Path], Path]:
    def both(tmp: Path) -> Path:
        prepare(tmp)
        return build(tmp)
    return both


def _set(name: str, **fields: object) -> Callable[[onnx.ModelProto], None]:
    def change(m: onnx.ModelProto) -> None:
        t = _init(m, name)
        for key, value in fields.items():
            if value is None:
                t.ClearField(key)  # type: ignore[arg-type]
            elif isinstance(value, list):
                t.ClearField(key)  # type: ignore[arg-type]
                getattr(t, key).extend(value)
            else:
                setattr(t, key, value)
    return change


def _attr(node: int, a: AttributeProto) -> Callable[[onnx.ModelProto], None]:
    def change(m: onnx.ModelProto) -> None:
        n = m.graph.node[node]
        kept = [x for x in n.attribute if x.name != a.name]
        del n.attribute[:]
        n.attribute.extend([*kept, a])
    return change


def _function_opset(version: int) -> Callable[[onnx.ModelProto], None]:
    def change(m: onnx.ModelProto) -> None:
        body = [helper.make_node("DequantizeLinear", ["fx", "fs"], ["fy"], name="f_dq")]
        m.functions.append(helper.make_function("local", "Deq", ["fx", "fs"], ["fy"], body,
                                                [helper.make_opsetid("", version)]))
        m.opset_import.append(helper.make_opsetid("local", 1))
    return change


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _nested(depth: int) -> bytes:
    """The base model plus a Loop whose body nests ``depth`` Loops (built as bytes: too deep for protobuf)."""
    graph = b""
    for _ in range(depth):
        attr = _field(1, b"body") + _varint(20 << 3) + _varint(AttributeProto.GRAPH) + _field(6, graph)
        graph = _field(1, _field(4, b"Loop") + _field(5, attr))
    return GOOD + _field(7, graph)  # a second graph field merges into the first


def _constant_scale(tensor: TensorProto) -> Callable[[onnx.ModelProto], None]:
    def change(m: onnx.ModelProto) -> None:
        m.graph.initializer.remove(_init(m, "s"))
        m.graph.node.insert(0, helper.make_node("Constant", [], ["s"], value=tensor))
    return change


def _mkfifo(path: Path) -> None:
    os.mkfifo(path)


GOOD = _model().SerializeToString()
UNREADABLE, ERRORS = 2, 1

#: id -> (build the file in a fresh folder, exit status, what its one line says)
CASES: dict[str, tuple[Callable[[Path], Path], int, str]] = {
    "empty-file": (_raw(b""), UNREADABLE, r"empty file"),
    "garbage": (_raw(bytes(range(256)) * 4), UNREADABLE, r"not an ONNX model"),
    "truncated": (_raw(GOOD[:-7]), UNREADABLE, r"not an ONNX model"),
    "text-file": (_raw(b"this is not a model\n" * 3), UNREADABLE, r"not an ONNX model"),
    "no-graph": (_edit(lambda m: m.ClearField("graph")), UNREADABLE, r"no graph"),
    "model-is-a-directory": (lambda t: t, UNREADABLE, r"directory"),
    "model-missing": (lambda t: t / "absent.onnx", UNREADABLE, r"No such file"),
    "model-is-a-fifo": (lambda t: (_mkfifo(t / "m.onnx"), t / "m.onnx")[1], UNREADABLE,
                        r"not a regular file"),
    "model-is-a-device": (lambda t: Path(os.devnull), UNREADABLE, r"not a regular file"),
    "external-offset-negative": (_external(offset="-4"), UNREADABLE, r"tensor 's'.*offset '-4'"),
    "external-offset-not-a-number": (_external(offset="abc"), UNREADABLE, r"tensor 's'.*offset 'abc'"),
    "external-offset-huge": (_external(offset=str(2**70)), UNREADABLE, r"tensor 's'.*offset"),
    "external-length-negative": (_external(length="-1"), UNREADABLE, r"tensor 's'.*length '-1'"),
    "external-length-not-a-number": (_external(length="1e3"), UNREADABLE, r"tensor 's'.*length '1e3'"),
    "external-length-vs-dims": (_external(length="12"), UNREADABLE, r"tensor 's'.*12 bytes.*16"),
    "external-no-location": (_external(location=None), UNREADABLE, r"tensor 's'.*no location"),
    "external-location-missing": (_external(location="absent.bin"), UNREADABLE, r"tensor 's'.*'absent.bin'"),
    "external-location-directory": (_then(_external(location="sub"), lambda t: (t / "sub").mkdir()),
                                    UNREADABLE, r"tensor 's'.*'sub' is not a regular file"),
    "external-location-fifo": (_then(_external(location="pipe"), lambda t: _mkfifo(t / "pipe")), UNREADABLE,
                               r"tensor 's'.*'pipe' is not a regular file"),
    "external-location-parent": (_then(_external(location="../s.bin"), lambda t: (t.parent / "s.bin")
                                       .write_bytes(SCALE.tobytes())), UNREADABLE, r"tensor 's'.*outside"),
    "external-location-absolute": (_external(location="/etc/hostname"), UNREADABLE, r"tensor 's'.*outside"),
    "external-location-nul": (_external(location="s\x00.bin"), UNREADABLE,
                              r"tensor 's'.*'s\\x00.bin' holds a NUL"),
    "external-file-short": (_external(offset="8"), UNREADABLE, r"tensor 's'.*has 16 bytes"),
    "external-2gib-scale-header": (_external(length=str(2**31)), UNREADABLE, r"tensor 's'.*2147483648"),
    "external-constant-escapes": (_edit(_constant_scale(TensorProto(
        name="v", data_type=F, dims=[4], data_location=TensorProto.EXTERNAL,
        external_data=[onnx.StringStringEntryProto(key="location", value="../../x.bin")]))), UNREADABLE,
        r"tensor 'v'.*outside"),
    "dims-overflow": (_edit(_set("s", dims=[2**62, 2**62])), UNREADABLE, r"tensor 's'.*too large"),
    "dims-2-to-63-wraps-negative": (_edit(_set("s", dims=[-(2**63)])), UNREADABLE, r"tensor 's'.*negative"),
    "dims-negative": (_edit(_set("s", dims=[-4])), UNREADABLE, r"tensor 's': dims \[-4\] hold a negative"),
    "raw-data-short": (_edit(_set("s", raw_data=SCALE.tobytes()[:12])), UNREADABLE, r"tensor 's'.*12 bytes"),
    "raw-data-long-weight": (_edit(_set("z", raw_data=b"\0" * 9)), UNREADABLE, r"tensor 'z'.*9 bytes"),
    "float-data-count": (_edit(_set("s", raw_data=None, float_data=[1.0, 2.0, 3.0])), UNREADABLE,
                         r"tensor 's'.*3 values"),
    "int32-data-count": (_edit(_set("z", raw_data=None, int32_data=[0] * 7)), UNREADABLE,
                         r"tensor 'z'.*7 values"),
    "data-type-unknown-id": (_edit(_set("s", data_type=99)), UNREADABLE, r"tensor 's'.*data_type 99"),
    "data-type-undefined": (_edit(_set("s", data_type=0)), UNREADABLE, r"tensor 's'.*data_type"),
    "input-shape-overflow": (_edit(lambda m: [d.__setattr__("dim_value", 2**62) for d in
                                              m.graph.input[0].type.tensor_type.shape.dim]), UNREADABLE,
                             r"graph input 'x'.*too large"),
    "opset-99": (_edit(lambda m: m.opset_import[0].__setattr__("version", 99)), UNREADABLE,
                 r"ai.onnx opset 99.*installed onnx"),
    "function-opset-99": (_edit(_function_opset(99)), UNREADABLE, r"function local::Deq.*ai.onnx opset 99"),
    "function-opset-0": (_edit(_function_opset(0)), UNREADABLE, r"function local::Deq.*opset 0"),
    "deeply-nested-subgraphs": (_raw(_nested(200)), UNREADABLE, r"not an ONNX model"),
    "scale-string-typed": (_edit(_constant_scale(helper.make_tensor("v", TensorProto.STRING, [4],
                                                                    [b"a"] * 4))),
                           ERRORS, r"node 1 'q'.*QDQ002"),
    "undefined-scale-name": (_edit(lambda m: m.graph.node[0].input.__setitem__(1, "nowhere")), ERRORS,
                             r"node 0 'q'.*'nowhere'.*not defined"),
    "node-without-inputs": (_edit(lambda m: m.graph.node[0].ClearField("input")), ERRORS,
                            r"node 0 'q'.*QDQ011.*x"),
    "node-without-scale": (_edit(lambda m: m.graph.node[1].input.__delitem__(slice(1, 3))), ERRORS,
                           r"node 1 'dq'.*QDQ011"),
    "axis-as-string": (_edit(_attr(0, helper.make_attribute("axis", "1"))), ERRORS,
                       r"node 0 'q'.*QDQ010.*axis"),
    "axis-as-float": (_edit(_attr(0, helper.make_attribute("axis", 1.0))), ERRORS,
                      r"node 0 'q'.*QDQ010.*axis"),
    "attribute-type-unknown": (_edit(_attr(0, AttributeProto.FromString(
        AttributeProto(name="axis", i=1).SerializeToString() + bytes([0xA0, 0x01, 99])))), ERRORS,
                               r"node 0 'q'.*QDQ010.*axis"),
    "block-size-negative": (_edit(_attr(0, helper.make_attribute("block_size", -2))), ERRORS,
                            r"node 0 'q'.*QDQ010.*block_size"),
    "block-size-huge": (_edit(_attr(0, helper.make_attribute("block_size", 2**62))), ERRORS,
                        r"node 0 'q'.*QDQ005"),
    "axis-huge": (_edit(_attr(0, helper.make_attribute("axis", -(2**63)))), ERRORS, r"node 0 'q'.*QDQ007"),
    "output-dtype-unknown": (_edit(_attr(0, helper.make_attribute("output_dtype", 99))), ERRORS,
                             r"node 0 'q'.*QDQ004|node 0 'q'.*output_dtype"),
    # the model around the nodes (QDQ021-QDQ023) and every problem of a node
    "nodes-in-reverse-order": (_edit(lambda m: m.graph.node.reverse()), ERRORS,
                               r"node 0 'dq'.*QDQ021: input 'q' is produced later, by node 1 'q'"),
    "node-reads-its-own-output": (_edit(lambda m: m.graph.node[0].input.__setitem__(0, "q")), ERRORS,
                                  r"node 0 'q'.*QDQ021: input 'q' is produced later, by node 0 'q'"),
    "ir-8-with-int4": (_edit(lambda m: (m.__setattr__("ir_version", 8), m.graph.initializer.append(
        helper.make_tensor("w", TensorProto.INT4, [2], [1, 2])))), ERRORS,
                       r"model: error QDQ023.*int4 \(IR 10\)"),
    "cast-to-float8-at-ir-3": (_edit(lambda m: (m.__setattr__("ir_version", 3), m.graph.node.append(
        helper.make_node("Cast", ["y"], ["c"], to=TensorProto.FLOAT8E5M2)))), ERRORS,
        r"model: error QDQ023.*float8e5m2 \(IR 9\).*attribute to"),
    "four-problems-in-one-node": (_edit(lambda m: (_attr(0, helper.make_attribute("axis", 9))(m),
                                                   _attr(0, helper.make_attribute("foo", 1))(m),
                                                   _attr(0, helper.make_attribute("output_dtype", 3))(m),
                                                   _set("s", data_type=TensorProto.INT8,
                                                        raw_data=b"\1" * 4)(m))),
                                  ERRORS, r"node 0 'q'.*QDQ002.*y_scale"),
}


@contextmanager
def _deadline(seconds: int) -> Iterator[None]:
    """A hang (a FIFO opened for reading) fails the test instead of stopping the run."""
    def fail(*_: object) -> None:
        raise TimeoutError(f"the checker did not finish in {seconds} s")
    old = signal.signal(signal.SIGALRM, fail)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _save(_model(), tmp_path_factory.mktemp("good"), "good.onnx")


def test_there_are_enough_hostile_inputs():
    assert len(CASES) >= 25


@pytest.mark.parametrize("case", sorted(CASES))
def test_hostile_model_is_one_line_and_the_good_one_is_still_checked(case, tmp_path, good, capsys):
    build, status, pattern = CASES[case]
    folder = tmp_path / "in"
    folder.mkdir()
    bad = build(folder)
    with _deadline(60):
        assert main(["check", str(bad), str(good)]) == status
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    if status == UNREADABLE:
        assert len(err.splitlines()) == 1, err
        assert err.startswith(f"{bad}: cannot check: ") and re.search(pattern, err), err
        assert out.splitlines()[-1].endswith("; 1 unreadable"), out
    else:
        assert err == ""
        lines = [ln for ln in out.splitlines() if ln.startswith(f"{bad}: ") and " error " in ln]
        assert lines and any(re.search(pattern, ln) for ln in lines), out
    with _deadline(60):
        assert main(["check", "--json", str(bad), str(good)]) == status
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert err == "" and doc["summary"]["exit_status"] == status
    checked = {m["path"]: m for m in doc["models"]}
    assert checked[str(good)]["nodes_checked"] == 2 and checked[str(good)]["findings"] == []
    if status == UNREADABLE:
        assert [u["path"] for u in doc["unreadable"]] == [str(bad)]
        assert re.search(pattern, doc["unreadable"][0]["error"])
    else:
        assert doc["unreadable"] == [] and checked[str(bad)]["nodes_checked"] >= 1


def _external_scale(tmp: Path, count: int, size: int | None = None) -> Path:
    """Q -> DQ without zero points, the scale of ``count`` float values in s.bin (a sparse file of
    ``size``)."""
    m = _model()
    for n in m.graph.node:
        del n.input[2:]
    m.graph.initializer.remove(_init(m, "z"))
    s = _init(m, "s")
    s.ClearField("raw_data")
    del s.dims[:]
    s.dims.append(count)
    s.data_location = TensorProto.EXTERNAL
    s.external_data.add(key="location", value="s.bin")
    with open(tmp / "s.bin", "wb") as fh:
        fh.truncate(size if size is not None else 4 * count)
    return _save(m, tmp)


def test_a_2_gib_scale_is_not_read(tmp_path, monkeypatch):
    """A scale whose file really holds 2 GiB (sparse): the shape rule reports it, its values are never
    read."""
    from qdq_conformance.checker import tensor_facts as graph

    path = _external_scale(tmp_path, 2**29)
    read: list[str] = []
    monkeypatch.setattr(graph, "read_external", lambda t, d: read.append(t.name) or iter(()))
    report = check_file(path)
    assert {f.rule for f in report.findings if f.severity == "error"} == {"QDQ005"}
    notes = [f.message for f in report.findings if f.rule == "QDQ020"]
    assert notes and all("2147483648 bytes" in n and "not read" in n for n in notes) and read == []


def test_external_values_are_read_in_bounded_chunks(tmp_path, monkeypatch):
    """Read 8 bytes at a time, a scale's values are still all checked: the zero at index 3 is found."""
    from qdq_conformance.checker import tensor_facts as graph
    from qdq_conformance.checker import tensors

    path = _external_scale(tmp_path, 4)
    (tmp_path / "s.bin").write_bytes(np.array([0.5, 0.25, 1.0, 0.0], np.float32).tobytes())
    chunks: list[int] = []
    real = graph.read_external
    monkeypatch.setattr(tensors, "CHUNK", 8)
    monkeypatch.setattr(graph, "read_external", lambda t, d: (chunks.append(len(c)) or c for c in real(t, d)))
    findings = check_file(path).findings
    assert [(f.rule, f.severity, f.node_name) for f in findings] == [("QDQ014", "warning", "q"),
                                                                     ("QDQ014", "warning", "dq")]
    assert "1 of 4 scale values are zero or not finite (first: index 3 = 0.0)" in findings[0].message
    assert chunks == [8, 8, 8, 8]


def test_a_checker_bug_is_one_line_and_the_other_models_are_still_checked(tmp_path, good, capsys,
                                                                          monkeypatch):
    from qdq_conformance.checker import check_cmd as cli

    real = cli.check_file
    monkeypatch.setattr(cli, "check_file", lambda p: real(p) if p == good else [][1])
    assert main(["check", str(tmp_path / "x.onnx"), str(good)]) == 2
    out, err = capsys.readouterr()
    assert (err == f"{tmp_path / 'x.onnx'}: cannot check: internal error in the checker (IndexError: list "
                   "index out "
            "of range); please report it with the model\n")
    assert out.endswith("1 model, 2 quantization nodes: 0 errors, 0 warnings, 0 notes; 1 unreadable\n")
    assert main(["check", "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["summary"]["exit_status"] == 2


def test_a_negative_declared_dimension_is_one_error_and_unknown_to_the_nodes(tmp_path, capsys):
    """Some exporters write -1 for an unknown dimension: the model breaks IR.md (a dimension is a size), said
    once (QDQ025, issue 38), and the nodes are checked with it read as unknown, as a symbolic one (no other
    finding)."""
    path = _edit(lambda m: m.graph.input[0].type.tensor_type.shape.dim[0].__setattr__("dim_value",
                                                                                      -1))(tmp_path)
    assert main(["check", str(path)]) == 1
    out = capsys.readouterr().out
    assert out.endswith("2 quantization nodes: 1 error, 0 warnings, 0 notes\n"), out
    assert "model: error QDQ025: a shape has a negative dimension: graph input" in out


def test_output_names_with_control_characters_stay_on_one_line(tmp_path, capsys):
    folder = tmp_path / "in\nside"
    path = _edit(_attr(0, helper.make_attribute("axis", 7)))(folder)
    assert main(["check", str(path), str(folder / "missing\n.onnx")]) == 2
    out, err = capsys.readouterr()
    assert len(err.splitlines()) == 1 and len(out.splitlines()) == 2, (out, err)
