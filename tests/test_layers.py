"""The package's dependency direction (docs/architecture.md): no import cycle between any two modules, and no
module importing a module of a higher layer.

Read from the source with :mod:`ast` (every ``import``, at module level or inside a function, under
``TYPE_CHECKING`` too), for the modules of the installed ``qdq_conformance`` namespace wherever its folders
are (tests/sources.py). ``python -m pytest tests/test_layers.py`` is its own step in ``.ci/run``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from .sources import ROOTS, modules

#: The layers, lowest first. A module belongs to the layer of its longest matching prefix; it may import
#: modules of its own layer and of lower ones, never of a higher one.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("types and specs", ("qdq_conformance", "qdq_conformance.types", "qdq_conformance.domain",
                         "qdq_conformance.opspecs", "qdq_conformance.rules", "qdq_conformance.errors",
                         "qdq_conformance.resources", "qdq_conformance.ambiguities",
                         "qdq_conformance.compare", "qdq_conformance.modelbuild", "qdq_conformance.cachedir",
                         "qdq_conformance.progress", "qdq_conformance.gcpause", "qdq_conformance.cpu",
                         "qdq_conformance.blame", "qdq_conformance.install", "qdq_conformance.sharding")),
    ("kernel", ("qdq_conformance.reference",)),
    ("results", ("qdq_conformance.results",)),
    ("checker", ("qdq_conformance.checker",)),
    ("generators", ("qdq_conformance.generators",)),
    ("runner and backends",
     ("qdq_conformance.runner", "qdq_conformance.backends", "qdq_conformance.mutants")),
    ("reports", ("qdq_conformance.reports",)),
    ("front ends", ("qdq_conformance.plugin", "qdq_conformance.fuzz", "qdq_conformance.mutants.mutants_cmd",
                    "qdq_conformance.checker.check_cmd", "qdq_conformance.cli",
                    "qdq_conformance.spec_cmd", "qdq_conformance.generate_cmd",
                    "qdq_conformance.show_cmd", "qdq_conformance.repro_cmd", "qdq_conformance.compliance_cmd",
                    "qdq_conformance.frommodel_cmd", "qdq_conformance.matrix")),
)

def _imports(name: str, path: Path, is_package: bool, known: dict[str, tuple[Path, bool]]) -> set[str]:
    """The first-party modules ``name`` imports (``from pkg import mod`` is an import of ``pkg.mod``)."""
    deps: set[str] = set()
    package = name if is_package else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        for t in targets:
            while t and t not in known:
                t = t.rpartition(".")[0]
            if t and t != name:
                deps.add(t)
    return deps


def _graph() -> dict[str, set[str]]:
    known = modules()
    return {name: _imports(name, path, is_package, known) for name, (path, is_package) in known.items()}


def _layer(module: str) -> int:
    best, level = -1, -1
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best:
                best, level = len(p), i
    return level


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[v] = min(low[v], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return _graph()


def test_every_module_has_a_layer(graph):
    assert [m for m in graph if _layer(m) < 0] == []


def test_the_walk_sees_every_stage(graph):
    for root in ROOTS + ("qdq_conformance.reference", "qdq_conformance.runner", "qdq_conformance.plugin"):
        assert root in graph
    assert len(graph) > 100


def test_no_import_cycle_between_modules(graph):
    assert _cycles(graph) == []


def test_no_module_imports_a_higher_layer(graph):
    upward = sorted(f"{m} ({LAYERS[_layer(m)][0]}) imports {d} ({LAYERS[_layer(d)][0]})"
                    for m, deps in graph.items() for d in deps if _layer(d) > _layer(m))
    assert upward == []


def _unexplained_local_imports(path: Path) -> list[int]:
    """Lines of imports inside a function or class with no comment saying why: on a line of the run of imports
    it belongs to, or on the line above the run."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    found = []
    for outer in ast.walk(ast.parse(text, str(path))):
        if not isinstance(outer, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for node in ast.walk(outer):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            first = last = node.lineno - 1
            while first > 0 and lines[first - 1].lstrip().startswith(("import ", "from ")):
                first -= 1
            while last + 1 < len(lines) and lines[last + 1].lstrip().startswith(("import ", "from ")):
                last += 1
            run = lines[first:last + 1]
            if (not any("#" in line for line in run)
                and not (first > 0 and lines[first - 1].lstrip().startswith("#"))):
                found.append(node.lineno)
    return sorted(set(found))


def test_imports_inside_functions_say_why():
    """Imports belong at the top of a module; one inside a function says why in a comment (an optional
    dependency, or a cost measured and saved)."""
    unexplained = [f"{name} line {line}" for name, (path, _) in sorted(modules().items())
                   for line in _unexplained_local_imports(path)]
    assert unexplained == []


def test_the_cycle_finder_finds_cycles():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


#: (module, function) outside the results layer that call ``json`` or ``gzip``, and what they encode: never a
#: results file or a record of one, which go through ``results`` (``encode_record`` / ``decode_record``,
#: ``ResultsWriter``, ``read``, ``kept``). A new call site is added here with what it encodes.
CODECS_OUTSIDE_RESULTS = {
    ("qdq_conformance.checker.check_cmd", "run"): "check --json's report",
    ("qdq_conformance.runner.suite", "load_suite"): "an exported suite's manifest.json",
    ("qdq_conformance.runner.suite", "scope"): "an exported suite's manifest.json",
    ("qdq_conformance.fuzz.fuzz_cmd", "_config_digest"): "what identifies a fuzz run's settings (a digest)",
    ("qdq_conformance.fuzz.fuzz_cmd", "_search"): "findings.json, a fuzz run's own list of findings",
    ("qdq_conformance.fuzz.fuzz_output", "rejudge"): "findings.json, judged again",
    ("qdq_conformance.fuzz.describe", "Description.key"): "a fuzzed example's key (its description hashed)",
    ("qdq_conformance.plugin.selection", "case_index"): "the selection index under the cache directory",
    ("qdq_conformance.mutants.mutants_cmd", "run"): "mutants --json's report",
    ("qdq_conformance.backends.iree_backend", "Cache.entry"): "IREE's compile cache",
    ("qdq_conformance.backends.iree_backend", "Cache.put_entry"): "IREE's compile cache",
    ("qdq_conformance.backends.iree_backend", "Cache.module"): "IREE's compile cache",
    ("qdq_conformance.backends.iree_backend", "Cache.put_module"): "IREE's compile cache",
    ("qdq_conformance.reports.page", "pack"): "a page's embedded data (gzip, base64)",
    ("qdq_conformance.reports.page", "unpack"): "a page's embedded data (gzip, base64)",
    ("qdq_conformance.reports.render", "_page"): "the report page's table of short names",
    ("qdq_conformance.reports.reports_cmd", "run_findings"): "findings --json's report",
    ("qdq_conformance.generators.export", "encode_manifest"): "an exported suite's manifest.json",
    ("qdq_conformance.generators.export", "owned_folders"): "an exported suite's manifest.json",
    ("qdq_conformance.generators.export", "check_archive_out"): "an exported suite archive's manifest.json",
    ("qdq_conformance.generators.file_schemas", "schema"): "the case files' JSON Schema",
    ("qdq_conformance.generators.file_schemas", "expectation_schema"): "the expectation files' JSON Schema",
    ("qdq_conformance.generators.suite_layout", "_data_json"): "an exported case's tolerance (data.json)",
    ("qdq_conformance.generators.frommodel.output", "write"): "cases --from-model's from-model.json",
    ("qdq_conformance.generators.frommodel.output", "_earlier"): "cases --from-model's from-model.json",
    ("qdq_conformance.matrix.environments", "UvEnvironments.make"): "what a release's environment holds",
    ("qdq_conformance.matrix.environments", "_read_json"): "what a release's environment holds",
    ("qdq_conformance.plugin.rerun", "state_path"): "--lf / --sw state: the key of its file (a digest)",
    ("qdq_conformance.plugin.rerun", "_read"): "--lf / --ff / --sw state (failed ids, the next case)",
    ("qdq_conformance.plugin.rerun", "_write"): "--lf / --ff / --sw state (failed ids, the next case)",
    ("qdq_conformance.install", "origin"): "pip's direct_url.json (PEP 610): where the package came from",
}


def _codec_calls(path: Path) -> set[str]:
    """The functions (``Class.method`` for a method; ``<module>`` at the top) of a module that call ``json``
    or ``gzip`` (``json.loads``, ``gzip.open``, ... and names imported from them)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    imported = {a.asname or a.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                and node.module in ("json", "gzip") for a in node.names}
    found: set[str] = set()

    def visit(node: ast.AST, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                visit(child, child.name if where == "<module>" else f"{where}.{child.name}")
                continue
            if isinstance(child, ast.Call):
                f = child.func
                if ((isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name)
                     and f.value.id in ("json", "gzip")) or (isinstance(f, ast.Name) and f.id in imported)):
                    found.add(where.split(".<", 1)[0])
            visit(child, where)
    visit(tree, "<module>")
    return found


def test_results_files_are_read_and_written_in_the_results_layer_only():
    """No module outside ``qdq_conformance.results`` encodes or decodes JSON or gzip but where
    :data:`CODECS_OUTSIDE_RESULTS` says what it encodes (never a results file or record); every results file
    and record is read and written through the results layer."""
    seen = {(name, fn) for name, (path, _) in modules().items()
            if not (name == "qdq_conformance.results" or name.startswith("qdq_conformance.results."))
            for fn in _codec_calls(path)}
    assert seen - set(CODECS_OUTSIDE_RESULTS) == set(), "a results file or record encoded outside results/?"
    assert set(CODECS_OUTSIDE_RESULTS) - seen == set(), "stale entries"


def test_the_codec_finder_finds_calls(tmp_path):
    path = tmp_path / "probe.py"
    path.write_text("import json\nfrom gzip import decompress\nclass C:\n    def m(self):\n"
                    "        return json.loads('1')\ndef f(b):\n    return decompress(b)\n"
                    "x = json.dumps(1)\n")
    assert _codec_calls(path) == {"C.m", "f", "<module>"}
