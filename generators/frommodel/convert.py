"""Models to case templates: every quantization node read, configurations deduplicated across nodes and
models, each configuration's templates checked by expanding them with the corpus's own code, and every node
accounted for (in a configuration whose cases exist, or the reason it is in none)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from qdq_conformance.checker import ModelReport, Unreadable, check_file
from qdq_conformance.errors import CaseFileError

from ..expand import expand
from ..file_schemas import validate
from ..graph_expand import expand_graph
from ..template import Template
from . import graph_templates, graphs
from .graphs import Pattern
from .node_configs import NodeConfig, NodeRef, Skipped, node_ref, read_node
from .shapes import TooLarge, concrete
from .templates import config_id, config_text, templates

#: the reason of a configuration whose templates the corpus refused (a problem of this tool; it follows)
NO_CASE = "no case could be made (a problem of this tool)"


@dataclass
class Configuration:
    """One distinct node configuration: its first node's values, every node that has it, its templates (those
    that expand) and how many concrete cases they make."""

    first: NodeConfig
    refs: list[NodeRef] = field(default_factory=list)
    templates: list[dict[str, object]] = field(default_factory=list)
    cases: int = 0
    done: bool = False
    #: why the configuration has no case, when the model is the reason (a tensor an invalid case cannot cut)
    reason: str | None = None
    #: templates the corpus refused: a problem of this tool, never of the model
    problems: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        """No case, and not for a reason of the model's: this tool's fault."""
        return not self.templates and self.reason is None

    def why(self) -> str | None:
        """The reason its nodes are in no case (None: they are in cases)."""
        return None if self.templates else self.reason or NO_CASE

    @property
    def id(self) -> str:
        return config_id(self.first)

    def text(self) -> str:
        return config_text(self.first)


@dataclass
class ModelCount:
    path: str
    name: str
    nodes: int = 0
    in_cases: int = 0
    reasons: Counter[str] = field(default_factory=Counter)


@dataclass
class Conversion:
    """What ``cases --from-model`` made of its models."""

    models: list[ModelCount] = field(default_factory=list)
    configurations: list[Configuration] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    unreadable: list[tuple[str, str]] = field(default_factory=list)
    graphs: list[Pattern] = field(default_factory=list)

    @property
    def nodes(self) -> int:
        return sum(m.nodes for m in self.models)

    @property
    def in_cases(self) -> int:
        return sum(len(c.refs) for c in self.configurations if c.templates)

    def reasons(self) -> Counter[str]:
        out: Counter[str] = Counter(s.reason for s in self.skipped)
        for c in self.configurations:
            why = c.why()
            if why:
                out[why] += len(c.refs)
        return out

    def summary(self) -> str:
        """``N quantization nodes: K in cases, M not (reasons)``."""
        reasons = self.reasons()
        missing = sum(reasons.values())
        why = ", ".join(f"{n} {r}" for r, n in reasons.most_common())
        line = (f"{self.nodes} quantization node{'s' if self.nodes != 1 else ''}: {self.in_cases} in cases, "
                f"{missing} not")
        return line + (f" ({why})" if why else "")


def _names(paths: list[Path]) -> dict[Path, str]:
    """What a case's ``source`` calls each model: its file name, or the path as given where two share one."""
    counts = Counter(p.name for p in paths)
    return {p: p.name if counts[p.name] == 1 else str(p) for p in paths}


def _expand(tpl: dict[str, object], where: str) -> int:
    """The number of cases ``tpl`` expands to with the corpus's own code (0: its recipe applies to none);
    raises CaseFileError for a template the corpus refuses."""
    validate({"cases": [tpl]}, where)
    try:
        return len(expand(Template(tpl, where)))
    except CaseFileError as e:
        if "expands to no case" in e.message:
            return 0
        raise


def _finish(conf: Configuration) -> None:
    """The configuration's templates, each expanded once to check it (those that make no case are left
    out)."""
    if conf.done:
        return
    conf.done = True
    try:
        made = concrete(conf.first)
        made_templates = templates(conf.first, made, conf.refs)
    except TooLarge as e:
        conf.reason = "a tensor too large for an invalid case"
        conf.problems.append(str(e))
        return
    except Exception as e:  # noqa: BLE001 - this tool's defect: said as such, the other nodes go on
        conf.problems.append(internal(e))
        return
    for tpl in made_templates:
        try:
            n = _expand(tpl, f"<{conf.id}>")
        except CaseFileError as e:
            conf.problems.append(f"{tpl['id']}: {e.message}")
            continue
        except Exception as e:  # noqa: BLE001 - (as above)
            conf.problems.append(f"{tpl['id']}: {internal(e)}")
            continue
        if n:
            conf.templates.append(tpl)
            conf.cases += n


def _patterns(report: ModelReport, main: dict[int, tuple[NodeConfig, Configuration]], path: Path, name: str,
              patterns: dict[tuple[object, ...], Pattern]) -> None:
    """The model's graph patterns around nodes whose configurations made cases, deduplicated into
    ``patterns``."""
    if report.model is None or not main:
        return
    in_cases = {}
    for k, (cfg, conf) in main.items():
        _finish(conf)
        if conf.templates:
            in_cases[k] = cfg
    scope = next(c.site.scope for c in report.nodes if c.site.graph == "main")
    try:
        found = graphs.find(report.model, in_cases, scope, name, path.parent)
    except Exception as e:  # noqa: BLE001 - graph cases are extra: their defect costs them only
        patterns.setdefault(("failed", name), Pattern(("failed", name), "", "graph patterns",
                                                      problem=internal(e)))
        return
    for f in found:
        pattern = patterns.setdefault(f.key, Pattern(f.key, f.family, f.text, data=f.data, problem=f.problem))
        pattern.refs.append(f.ref)


def internal(e: Exception) -> str:
    """A defect of this tool in one line."""
    return f"internal error ({type(e).__name__}: {' '.join(str(e).split())[:300]}); please report it"


def _graph_templates(p: Pattern) -> None:
    """The pattern's template, expanded once to check it; plainer values where the corpus refuses the boundary
    ones (a graph case is normative), else the reason it has none."""
    if not p.data:
        return
    placed = any(i.first is not None for i in p.data.inputs.values())
    for plain in range(3 if placed else 1):
        tpl = graph_templates.template(p.id, p.family, p.text, p.data, p.refs, plain)
        if tpl is None:
            continue
        try:
            validate({"graphs": [tpl]}, f"<{p.id}>")
            n = len(expand_graph(Template(tpl, f"<{p.id}>")))
        except CaseFileError as e:
            p.problem = e.message
            continue
        except Exception as e:  # noqa: BLE001 - this tool's defect: said as such
            p.problem = internal(e)
            return
        if n:
            p.templates, p.cases, p.problem = [tpl], n, ""
            return


def convert(paths: list[Path]) -> Conversion:
    """Read every model (an unreadable one is listed, the others still read) and make its configurations'
    templates."""
    out = Conversion()
    by_key: dict[tuple[object, ...], Configuration] = {}
    patterns: dict[tuple[object, ...], Pattern] = {}
    names = _names(paths)
    for path in paths:
        try:
            report = check_file(path, keep_nodes=True)
        except Unreadable as e:
            out.unreadable.append((str(path), str(e)))
            continue
        count = ModelCount(str(path), names[path], len(report.nodes))
        main: dict[int, tuple[NodeConfig, Configuration]] = {}
        for checked in report.nodes:
            try:
                got = read_node(checked, names[path], path.parent)
            except Exception as e:  # noqa: BLE001 - this tool's defect costs that node only, said as such
                got = Skipped(node_ref(checked, names[path]), NO_CASE, internal(e))
            if isinstance(got, Skipped):
                out.skipped.append(got)
                count.reasons[got.reason] += 1
                continue
            conf = by_key.setdefault(got.key(), Configuration(got))
            conf.refs.append(got.ref)
            if checked.site.graph == "main":
                main[checked.site.index] = (got, conf)
        out.models.append(count)
        _patterns(report, main, path, names[path], patterns)
    for conf in by_key.values():
        _finish(conf)
        out.configurations.append(conf)
    for pattern in patterns.values():
        _graph_templates(pattern)
        out.graphs.append(pattern)
    for m in out.models:
        refs = [r for c in out.configurations if c.templates for r in c.refs if r.model == m.name]
        m.in_cases = len(refs)
        for c in out.configurations:
            why = c.why()
            if why:
                m.reasons[why] += sum(r.model == m.name for r in c.refs)
    return out

