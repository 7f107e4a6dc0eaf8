"""Loading case files: safe YAML with the line of every key, and errors that name file, line and key.

Case files are data, never code: they are parsed with PyYAML's SafeLoader, so ``!!python/...`` tags and every
other executable construct fail; that failure (like a syntax error) is reported with its file and line.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml


class CaseFileError(Exception):
    """A malformed case file: names the file, the line and the key."""

    def __init__(self, file: str | Path, line: int | None, key: str, message: str) -> None:
        self.file = str(file)
        self.line = line
        self.key = key
        self.message = message
        where = f"{self.file}:{line}" if line else self.file
        super().__init__(f"{where}: {key}: {message}" if key else f"{where}: {message}")


class LineDict(dict):
    """A mapping that remembers the line of each key (``lines[key]``) and its own first line."""

    lines: dict[str, int]
    line: int


class LineList(list):
    line: int


class _Loader(yaml.SafeLoader):
    pass


def _map(loader: _Loader, node: yaml.MappingNode) -> LineDict:
    d = LineDict()
    d.lines = {}
    d.line = node.start_mark.line + 1
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if not isinstance(key, str):
            raise CaseFileError(loader.name, key_node.start_mark.line + 1, str(key), "keys must be strings")
        if key in d:
            raise CaseFileError(loader.name, key_node.start_mark.line + 1, key, "duplicate key")
        d[key] = loader.construct_object(value_node, deep=True)
        d.lines[key] = key_node.start_mark.line + 1
    return d


def _seq(loader: _Loader, node: yaml.SequenceNode) -> LineList:
    items = LineList(loader.construct_object(n, deep=True) for n in node.value)
    items.line = node.start_mark.line + 1
    return items


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _map)
_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _seq)


def load_yaml(path: str | Path, text: str | None = None) -> Any:
    """Parse one case file; any YAML problem becomes a CaseFileError with its line."""
    path = Path(path)
    if text is None:
        text = path.read_text(encoding="utf-8")
    loader = _Loader(text)
    loader.name = str(path)
    try:
        return loader.get_single_data()
    except CaseFileError:
        raise
    except yaml.constructor.ConstructorError as e:
        line = e.problem_mark.line + 1 if e.problem_mark else None
        raise CaseFileError(path, line, "", f"not plain data ({e.problem}); case files may not contain tags "
                            "such as !!python/...") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        raise CaseFileError(path, mark.line + 1 if mark else None, "", f"invalid YAML: "
                            f"{getattr(e, 'problem', e)}") from None
    finally:
        loader.dispose()


def line_of(obj: Any, key: str | None = None) -> int | None:
    """The line of ``obj[key]`` (or of ``obj``) when ``obj`` came from :func:`load_yaml`."""
    if key is not None and isinstance(obj, LineDict):
        return obj.lines.get(key, obj.line)
    return getattr(obj, "line", None)


@dataclass(frozen=True)
class Located:
    """Where a case template came from."""

    file: str
    line: int
