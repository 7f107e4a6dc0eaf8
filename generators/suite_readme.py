"""The README and the license an exported suite carries, so that a vendor who receives the folder alone learns
what it is, what made it, how it is laid out and how to run it (``templates/suite-README.md``)."""

from __future__ import annotations

from functools import cache
from string import Template

from qdq_conformance.compare import rule_interval, rule_ulp
from qdq_conformance.resources import suite_templates_dir

from .suite_layout import GeneratedWith, Manifest

README = "README.md"
LICENSE = "LICENSE"


@cache
def license_text() -> str:
    """The Apache License, Version 2.0, the project's license."""
    return (suite_templates_dir() / "LICENSE-Apache-2.0.txt").read_text(encoding="utf-8")


def readme(manifest: Manifest) -> str:
    """The README of the suite ``manifest`` describes (only what the manifest says: the same suite gives the
    same bytes)."""
    sel = manifest.get("selection") or {}
    patterns = sel.get("patterns") or []
    selection = (("case ids matching " + ", ".join(f"`{p}`" for p in patterns)) if patterns
                 else "every case") + \
        f" of the {', '.join(sel.get('tiers') or ['default'])} tier(s)" + \
        ("" if sel.get("complete") else " (a part of the corpus)")
    kinds = manifest.get("kinds") or {}
    counts = (f"{manifest.get('case_count', 0)}: "
              + ", ".join(f"{v.get('cases', 0)} {k}" for k, v in kinds.items()))
    graphs = sum(1 for c in manifest.get("cases", []) if c.get("graph"))
    nodes = len(manifest.get("cases", [])) - graphs
    shapes = _count(nodes, "single-node model") + (
        f" and {_count(graphs, 'graph')} of several nodes (Q / DQ around the operators runtimes fuse them "
        "with: the manifest's `graph` lists each one's nodes)" if graphs else "")
    forms = list(manifest.get("forms") or [])
    both = set(forms) >= {"runtime", "initializer"}
    forms_note = ("each case in both, as a run of the corpus has it" if both else
                  "only: a run of the corpus also has the other form, whose failures this suite lacks")
    bounded = sum(1 for c in manifest.get("cases", []) if rule_ulp(c.get("comparison")) > 0)
    intervals = sum(1 for c in manifest.get("cases", []) if rule_interval(c.get("comparison")))
    ulp_note = (f"{bounded} case(s) have a ULP bound." if bounded else
                "every normative case is exact (no ULP bound): every data.json holds rtol 0 and atol 0.")
    if intervals:
        ulp_note += f" {intervals} case(s) are judged by an interval."
    made: GeneratedWith | dict[str, str] = manifest.get("generated_with") or {}
    text = Template((suite_templates_dir() / "suite-README.md").read_text(encoding="utf-8"))
    return text.safe_substitute(
        suite_version=manifest.get("suite_version", "?"), onnx_version=manifest.get("onnx_version", "?"),
        corpus_sha256=manifest.get("corpus_sha256") or "?", selection=selection,
        forms=", ".join(forms), forms_note=forms_note, shapes=shapes, counts=counts, ulp_note=ulp_note,
        python=made.get("python", "?"), numpy=made.get("numpy", "?"))


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'s' if n != 1 else ''}"
