"""Loading case and expectation files: safe YAML with the line of every key, and errors that name file, line
and key (the one line-tracking YAML loader; each kind of file has its own :class:`Limits`).

Case files are data, never code: they are parsed with PyYAML's SafeLoader, so ``!!python/...`` tags and every
other executable construct fail; that failure (like a syntax error) is reported with its file and line. Only
plain data loads (mappings with string keys, lists, strings, numbers, booleans, null; an unquoted date stays a
string), and a file is bounded before it can cost much: its size, its nesting depth and the number of nodes it
holds once every alias is expanded (an alias counts as the nodes it repeats, so an alias bomb stops at the
limit).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from qdq_conformance.errors import CaseFileError

__all__ = ["CASE_FILE", "EXPECTATION_FILE", "MAX_DEPTH", "MAX_FILE_BYTES", "MAX_NODES", "CaseFileError",
           "Limits", "LineDict", "LineList", "line_of", "load_yaml", "read_case_file"]

#: the largest case file, in bytes (the corpus's largest is under 30 KB; PyYAML reads about 1 MB in 3 s)
MAX_FILE_BYTES = 1 << 18
#: the deepest nesting of mappings and lists (the corpus nests 7 deep)
MAX_DEPTH = 32
#: the most nodes (mappings, lists, scalars) a file may hold, each alias counted as the nodes it repeats
#: (the corpus's largest file holds about 1,000; PyYAML composes about 15,000 a second)
MAX_NODES = 20_000



@dataclass(frozen=True)
class Limits:
    """What one kind of YAML file may cost before it is refused (named in the messages as ``what``)."""

    what: str
    max_bytes: int
    max_depth: int
    max_nodes: int


CASE_FILE = Limits("case file", MAX_FILE_BYTES, MAX_DEPTH, MAX_NODES)
#: expectation files list many case ids (OpenVINO's: 0.6 MB, about 8,600 nodes)
EXPECTATION_FILE = Limits("expectation file", 1 << 23, MAX_DEPTH, 200_000)

_SCALARS = (str, int, float, bool, type(None))


class LineDict(dict):
    """A mapping that remembers the line of each key (``lines[key]``) and its own first line."""

    lines: dict[str, int]
    line: int


class LineList(list):
    line: int


class _Loader(yaml.SafeLoader):
    """SafeLoader that keeps lines, counts nodes (aliases expanded) and nesting as it composes, and turns
    every problem of a value into a CaseFileError with the value's line."""

    def __init__(self, text: str, name: str, limits: Limits = CASE_FILE) -> None:
        super().__init__(text)
        self.name = name
        self.limits = limits
        self._depth = 0
        self._nodes = 0
        self._sizes: dict[int, int] = {}  # id(node) -> the nodes it holds, aliases expanded

    def _error(self, mark: Any, message: str) -> CaseFileError:
        return CaseFileError(self.name, mark.line + 1 if mark is not None else None, "", message)

    def _count(self, n: int, mark: Any) -> None:
        self._nodes += n
        if self._nodes > self.limits.max_nodes:
            raise self._error(mark,
                              f"more than {self.limits.max_nodes:,} YAML nodes (aliases count as the nodes "
                              f"they repeat); the limit keeps a {self.limits.what} from costing minutes and "
                              "gigabytes")

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            target = self.anchors.get(event.anchor)
            if target is not None:
                size = self._sizes.get(id(target))
                if size is None:
                    raise self._error(event.start_mark,
                                      f"alias *{event.anchor} refers to a node that contains it "
                                      "(a recursive alias)")
                self._count(size, event.start_mark)
            return super().compose_node(parent, index)
        self._depth += 1
        if self._depth > self.limits.max_depth:
            raise self._error(self.peek_event().start_mark,
                              f"nested more than {self.limits.max_depth} levels deep")
        before = self._nodes
        node = super().compose_node(parent, index)
        self._depth -= 1
        self._count(1, node.start_mark)
        self._sizes[id(node)] = self._nodes - before
        return node

    def construct_object(self, node: Any, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep)
        except (CaseFileError, yaml.YAMLError):
            raise
        except (ValueError, TypeError, OverflowError, ArithmeticError) as e:
            # e.g. an integer of 5,000 digits
            raise self._error(node.start_mark, f"cannot read this value: {e}") from None


def _map(loader: _Loader, node: yaml.MappingNode) -> LineDict:
    d = LineDict()
    d.lines = {}
    d.line = node.start_mark.line + 1
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if not isinstance(key, str):
            shown = repr(key) if isinstance(key, _SCALARS) else f"a {type(key).__name__}"
            raise CaseFileError(loader.name, key_node.start_mark.line + 1, shown, "keys must be strings")
        if key in d:
            raise CaseFileError(loader.name, key_node.start_mark.line + 1, key, "duplicate key")
        d[key] = loader.construct_object(value_node, deep=True)
        d.lines[key] = key_node.start_mark.line + 1
    return d


def _seq(loader: _Loader, node: yaml.SequenceNode) -> LineList:
    items = LineList(loader.construct_object(n, deep=True) for n in node.value)
    items.line = node.start_mark.line + 1
    return items


def _as_text(loader: _Loader, node: yaml.ScalarNode) -> str:
    return loader.construct_scalar(node)


def _not_plain(loader: _Loader, node: yaml.Node) -> None:
    raise CaseFileError(loader.name, node.start_mark.line + 1, "", f"not plain data ({node.tag}); "
                        f"{loader.limits.what}s hold mappings, lists, strings, numbers, booleans and null "
                        "only")


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _map)
_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _seq)
_Loader.add_constructor("tag:yaml.org,2002:timestamp", _as_text)  # an unquoted date is its text
for _tag in ("binary", "set", "omap", "pairs"):
    _Loader.add_constructor(f"tag:yaml.org,2002:{_tag}", _not_plain)


def read_case_file(path: str | Path, limits: Limits = CASE_FILE) -> bytes:
    """The bytes of one file, at most ``limits.max_bytes`` of them (CaseFileError otherwise, or when
    unreadable)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(limits.max_bytes + 1)
    except OSError as e:
        raise CaseFileError(path, None, "", f"cannot read: {e.strerror or e}") from None
    if len(data) > limits.max_bytes:
        raise CaseFileError(path, None, "",
                            f"larger than {limits.max_bytes:,} bytes, the limit for one {limits.what}")
    return data


def _decode(path: Path, data: bytes, limits: Limits) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise CaseFileError(path, line, "",
                            f"not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start}); "
                            f"{limits.what}s are UTF-8") from None


def load_yaml(path: str | Path, text: str | None = None, limits: Limits = CASE_FILE) -> Any:
    """Parse one case file (or another kind, by its ``limits``); any problem (unreadable, too large, not
    UTF-8, invalid YAML, not plain data, over a limit) becomes a CaseFileError with its line."""
    path = Path(path)
    if text is None:
        text = _decode(path, read_case_file(path, limits), limits)
    elif len(text) > limits.max_bytes:
        raise CaseFileError(path, None, "",
                            f"larger than {limits.max_bytes:,} bytes, the limit for one {limits.what}")
    loader: _Loader | None = None
    try:
        loader = _Loader(text, str(path), limits)
        return loader.get_single_data()
    except CaseFileError:
        raise
    except yaml.reader.ReaderError as e:
        line = text.count("\n", 0, e.position) + 1 if isinstance(e.position, int) else None
        ch = f"#x{e.character:04x}" if isinstance(e.character, int) else repr(e.character)
        raise CaseFileError(path, line, "",
                            f"invalid YAML: character {ch} is not allowed ({e.reason})") from None
    except yaml.constructor.ConstructorError as e:
        line = e.problem_mark.line + 1 if e.problem_mark else None
        raise CaseFileError(path, line, "",
                            f"not plain data ({e.problem}); {limits.what}s may not contain tags "
                            "such as !!python/...") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        raise CaseFileError(path, mark.line + 1 if mark else None, "", f"invalid YAML: "
                            f"{getattr(e, 'problem', None) or e}") from None
    finally:
        if loader is not None:
            loader.dispose()


def line_of(obj: object, key: str | None = None) -> int | None:
    """The line of ``obj[key]`` (or of ``obj``) when ``obj`` came from :func:`load_yaml`."""
    if key is not None and isinstance(obj, LineDict):
        return obj.lines.get(key, obj.line)
    return getattr(obj, "line", None)
