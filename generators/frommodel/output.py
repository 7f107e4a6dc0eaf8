"""The folder ``cases --from-model`` writes: one case file per configuration (``<config id>-<op>.yaml``; graph
templates in ``graph_<config id>.yaml``), and ``from-model.json``, the accounting of every quantization node
(the configuration and file it is in, or the reason it is in none) and of every configuration.

``--out`` must be a new or empty folder, or one an earlier ``cases --from-model`` wrote (it holds
``from-model.json``): then the files that accounting lists are replaced and nothing else is touched.
Generating twice from the same models gives identical bytes.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import yaml

from .convert import Conversion
from .node_configs import NodeRef

ACCOUNTING = "from-model.json"
FORMAT = "onnx-qdq-conformance-from-model/1"
SCHEMA_LINE = "# yaml-language-server: $schema=https://onnx-qdq-conformance/case.schema.json\n"


class OutFolderError(Exception):
    """``--out`` is not a folder this command may write (one line)."""


def _earlier(out: Path) -> list[str]:
    """The files an earlier run listed in ``out`` (empty for a new or empty folder); OutFolderError for a
    folder this command did not write."""
    if not out.exists():
        return []
    if not out.is_dir():
        raise OutFolderError(f"--out {out}: not a folder")
    entries = sorted(p.name for p in out.iterdir())
    if not entries:
        return []
    if ACCOUNTING not in entries:
        raise OutFolderError(f"--out {out}: the folder is not empty and holds no {ACCOUNTING} (an earlier "
                             "cases --from-model writes one); give a new or empty folder")
    try:
        doc = json.loads((out / ACCOUNTING).read_text(encoding="utf-8"))
        files = [str(f) for f in doc["files"]]
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise OutFolderError(f"--out {out}: {ACCOUNTING} cannot be read ({e})") from None
    if doc.get("format") != FORMAT or any(os.sep in f or "/" in f or f.startswith(".") for f in files):
        raise OutFolderError(f"--out {out}: {ACCOUNTING} is not one this command wrote")
    return files


class _Dumper(yaml.SafeDumper):
    """Plain YAML: a value repeated in several templates (the source) is written out each time, no anchors."""

    def ignore_aliases(self, data: Any) -> bool:  # noqa: ANN401 - PyYAML's signature
        return True


def _dump(doc: dict[str, Any]) -> str:
    return SCHEMA_LINE + yaml.dump(doc, Dumper=_Dumper, sort_keys=False, default_flow_style=None, width=110,
                                   allow_unicode=False)


def case_files(conv: Conversion) -> dict[str, str]:
    """File name -> text of every case file the conversion makes."""
    files: dict[str, str] = {}
    for conf in conv.configurations:
        if not conf.templates:
            continue
        s = conf.first.spec
        name = f"{conf.id}-{s.name.lower()}-{s.version}.yaml"
        files[name] = _dump({"description": f"Cases made from a model: {conf.text()}.",
                             "cases": conf.templates})
    for g in conv.graphs:
        if not g.templates:
            continue
        files[g.file] = _dump({"description": f"Graph cases made from a model: {g.text}.",
                               "graphs": g.templates})
    return files


def _node_row(ref: NodeRef, **more: Any) -> dict[str, Any]:
    return {"model": ref.model, "graph": ref.graph, "index": ref.index, "name": ref.name,
            "operator": ref.operator, **more}


def accounting(conv: Conversion, files: dict[str, str]) -> dict[str, object]:
    """``from-model.json``: every node, every configuration, every model's counts and the summary line."""
    nodes: list[dict[str, Any]] = []
    confs: list[dict[str, Any]] = []
    by_id = {name.split("-", 1)[0]: name for name in files}
    for conf in conv.configurations:
        file = by_id.get(conf.id)
        confs.append({"id": conf.id, "configuration": conf.text(), "file": file, "nodes": len(conf.refs),
                      "templates": [t["id"] for t in conf.templates], "cases": conf.cases,
                      "problems": conf.problems})
        for ref in conf.refs:
            nodes.append(_node_row(ref, configuration=conf.id, file=file, reason=conf.why(),
                                   detail="; ".join(conf.problems) if conf.why() else None))
    for s in conv.skipped:
        nodes.append(_node_row(s.ref, configuration=None, file=None, reason=s.reason, detail=s.detail))
    order = {m.name: k for k, m in enumerate(conv.models)}
    nodes.sort(key=lambda n: (order.get(n["model"], 0), n["graph"] != "main", n["graph"], n["index"]))
    return {"format": FORMAT, "summary": conv.summary(),
            "models": [{"path": m.path, "name": m.name, "quantization_nodes": m.nodes, "in_cases": m.in_cases,
                        "not_in_cases": dict(m.reasons.most_common())} for m in conv.models],
            "unreadable": [{"path": p, "error": e} for p, e in conv.unreadable],
            "configurations": confs,
            "graphs": [g.row() for g in conv.graphs],
            "files": sorted(files), "nodes": nodes}


def write(conv: Conversion, out: Path) -> list[str]:
    """Write the case files and the accounting into ``out`` (OutFolderError when ``out`` is not this command's
    to write; OSError when it cannot be written); the case files written are returned."""
    earlier = _earlier(out)
    files = case_files(conv)
    doc = accounting(conv, files)
    out.mkdir(parents=True, exist_ok=True)
    for name in earlier:
        if name not in files:
            (out / name).unlink(missing_ok=True)
    for name, text in files.items():
        (out / name).write_text(text, encoding="utf-8")
    (out / ACCOUNTING).write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    return sorted(files)

