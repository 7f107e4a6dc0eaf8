"""The results file's schema: which keys each record type and each object in one must have and may have
(:data:`KEYS`), which JSON types each field may hold (:data:`FIELDS`), both derived from the typed records
(records.py), and the validators that hold a record to it (:func:`valid`, the fast pass; :func:`check`, which
says where a record goes wrong). A record that breaks it is an error naming its line and key, never a
traceback in a reader; the writer holds a record to the same keys (``files.encode_record``)."""

from __future__ import annotations

import json
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Union, get_args, get_origin, get_type_hints

from ..domain import ClauseText, SourceText, SpecText
from .records import (
    IN_MEMORY,
    CaseRecord,
    ExpectationRecord,
    ExpectationsStatus,
    Header,
    MismatchRecord,
    PreviewRecord,
    StaleEntry,
    Summary,
    Tally,
)


class ResultsError(Exception):
    """A results file that cannot be read: the message names the file (and line) and the problem."""


FORMAT_PREFIX = "onnx-qdq-conformance-results/"
#: the format this version writes and reads; a file of another names the version that reads it (files.py)
FORMAT_VERSION = "2"
FORMAT = f"{FORMAT_PREFIX}{FORMAT_VERSION}"


@dataclass(frozen=True)
class Obj:
    """A JSON object whose fields follow ``FIELDS[kind]`` and whose keys ``KEYS[kind]`` (unless ``keys`` is
    false: a top-level record, whose keys :func:`check_keys` checks first)."""

    kind: str
    keys: bool = True


@dataclass(frozen=True)
class Each:
    """A JSON list (``container`` list) or object (dict) whose every element or value follows ``spec``."""

    container: type[list[Any]] | type[dict[str, Any]]
    spec: Spec
    nullable: bool = True


@dataclass(frozen=True)
class Number:
    """A JSON number a float can hold (a report formats it as one)."""


Spec = Union[tuple[type, ...], Obj, Each, Number]  # noqa: UP007 - a runtime alias (Python 3.10)
_TEXT, _INT, _NUMBER = (str,), (int,), Number()
_FLOAT_MAX = 2.0**1023
_PREVIEW, _TEXTS = Obj("preview"), Each(list, _TEXT, nullable=False)
#: the fields of a case record no view reads (the reader checks ``type``, ``id`` and ``status`` itself)
_NOT_READ = frozenset({"type", "id", "status", "backend", "backend_version", "file", "line"})
#: the record types that are objects of their own in a results file, and their kind
_KINDS: dict[object, str] = {ExpectationRecord: "expectation", PreviewRecord: "preview",
                             MismatchRecord: "mismatch", ExpectationsStatus: "expectations_status",
                             Tally: "tally", StaleEntry: "stale", SpecText: "spec", ClauseText: "clause",
                             SourceText: "source"}
#: the fields of a header and a summary the views read (and so the reader checks)
_HEADER_READ = frozenset({"backend", "backend_version", "started", "expectations", "expectations_status",
                          "optimization", "backend_options"})
_SUMMARY_READ = frozenset({"expectations", "duration_s", "counts", "stale_expectations", "stale_markers"})


def _spec_of(hint: object) -> tuple[Spec, bool]:
    """The spec of a field's type hint, and whether null may stand for it."""
    if hint is Any:
        return (object,), True
    args = get_args(hint)
    if get_origin(hint) in (Union, types.UnionType):
        kinds = [a for a in args if a is not type(None)]
        nullable = len(kinds) < len(args)
        if len(kinds) == 1:
            return _spec_of(kinds[0])[0], nullable
        return tuple(k for k in kinds if isinstance(k, type)), nullable
    if hint in _KINDS:
        return Obj(_KINDS[hint]), False
    origin = get_origin(hint)
    if origin in (list, dict):
        inner, nullable = _spec_of(args[-1])
        if inner == (object,):  # (list[Any], dict[str, Any]: any JSON value)
            return (origin,), False
        return Each(origin, inner, nullable), False
    if hint is float:
        return _NUMBER, False
    return ((hint,) if isinstance(hint, type) else (object,)), False


def _fields_of(record: type, leave_out: frozenset[str] = frozenset(),
               only: frozenset[str] | None = None) -> dict[str, Spec]:
    """A typed record's fields (those ``only`` names, when given) as specs: ``FIELDS`` is derived from the
    record types, not kept beside them."""
    return {name: _spec_of(hint)[0] for name, hint in get_type_hints(record).items()
            if name not in leave_out and (only is None or name in only)}


#: What the reports, the diff and the compliance table read of each record type, and the JSON types each field
#: may hold (null always may, unless an Each says otherwise for its elements): a record that breaks it is an
#: error naming its line and field, where the reader's code would have failed with a traceback. Derived from
#: the record types (records.py): the case record, the fields of the header and the summary the views read,
#: and the objects in them.
FIELDS: dict[str, dict[str, Spec]] = {
    "header": _fields_of(Header, only=_HEADER_READ),
    "case": _fields_of(CaseRecord, _NOT_READ),
    "summary": _fields_of(Summary, only=_SUMMARY_READ),
    **{kind: _fields_of(record) for record, kind in _KINDS.items() if isinstance(record, type)},
}
#: The case-record keys a kept results file (``results.kept``: its header has ``kept_from``) leaves out: the
#: fields no table of the compliance page or the scoreboard reads, and an unsupported case's message.
KEPT_LEAVES_OUT = ("inputs", "expected", "actual", "readings", "spec", "attributes", "repro", "comparison",
                   "duration")
_KEPT_OPTIONAL = frozenset({*KEPT_LEAVES_OUT, "message"})
#: The case-record keys a kept subset (``results.kept.keep_subset``: its header has ``kept_subset``) leaves
#: out of a failing case, and the only keys it keeps of a case that did not fail on that release.
SUBSET_LEAVES_OUT = ("inputs", "readings", "spec", "attributes", "repro", "duration")
SUBSET_KEEPS = ("type", "id", "form", "status")


@dataclass(frozen=True)
class Keys:
    """The keys a record (or an object in one) must have, and those it may have."""

    required: frozenset[str]
    allowed: frozenset[str]

    def problem(self, obj: dict[str, object]) -> str | None:
        """What is wrong with ``obj``'s keys, in words (None: nothing)."""
        keys = obj.keys()
        unknown = sorted(k for k in keys if k not in self.allowed)
        if unknown:
            return (f"unknown key{'s' * (len(unknown) > 1)} {', '.join(map(json.dumps, unknown[:5]))}"
                    + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""))
        missing = sorted(self.required - keys)
        if missing:
            return (f"missing key{'s' * (len(missing) > 1)} {', '.join(map(json.dumps, missing[:5]))}"
                    + (f" and {len(missing) - 5} more" if len(missing) > 5 else ""))
        return None


def _keys_of(record: Any, leave_out: frozenset[str] = frozenset(),
             also_required: frozenset[str] = frozenset(), optional: frozenset[str] = frozenset()) -> Keys:
    allowed = frozenset(record.__required_keys__ | record.__optional_keys__) - leave_out
    return Keys(frozenset(record.__required_keys__ | also_required) - optional - leave_out, allowed)


_TYPE = frozenset({"type"})
#: Which keys each record type (and each object in a record) must have and may have, from the typed records:
#: the keys of a ``TypedDict`` class are required, those of its ``total=False`` subclass may be left out. A
#: kept file's case records (``case-kept``) may leave out :data:`KEPT_LEAVES_OUT`, a kept subset's
#: (``case-subset``) all but :data:`SUBSET_KEEPS` (it keeps those of a case that did not fail, what it kept of
#: one that did: :data:`SUBSET_LEAVES_OUT`); a file's header never holds
#: what a reader adds to it (``records.IN_MEMORY``).
KEYS: dict[str, Keys] = {
    "header": _keys_of(Header, leave_out=IN_MEMORY),
    "case": _keys_of(CaseRecord),
    "case-kept": _keys_of(CaseRecord, optional=_KEPT_OPTIONAL),
    "case-subset": Keys(frozenset(SUBSET_KEEPS), _keys_of(CaseRecord).allowed),
    "summary": _keys_of(Summary, also_required=_TYPE),
    **{kind: _keys_of(record) for record, kind in _KINDS.items()},
}

_NAMES = {dict: "an object", list: "a list", str: "text", int: "a whole number", float: "a number",
          bool: "true or false", type(None): "null"}


def json_type(value: object) -> str:
    return _NAMES.get(type(value), type(value).__name__)


def valid(value: object, spec: Spec) -> bool:
    """Whether ``value`` (not null) follows ``spec``: the fast pass over every record (:func:`check` says
    where a record that fails it goes wrong)."""
    return _validator(spec)(value)


Validator = Callable[[object], bool]
_VALIDATORS: dict[Spec, Validator] = {}


def _validator(spec: Spec) -> Validator:
    """``spec`` as one function, made once: a report reads tens of thousands of records, and deciding what
    each part of a spec is, part by part and record by record, was most of the time the check took."""
    fn = _VALIDATORS.get(spec)
    if fn is None:
        fn = _VALIDATORS[spec] = _make(spec)
    return fn


def _make(spec: Spec) -> Validator:
    if type(spec) is tuple:
        kinds = spec
        return lambda value: isinstance(value, kinds)
    if type(spec) is Number:
        return lambda value: isinstance(value, float) or (isinstance(value, int) and abs(value) < _FLOAT_MAX)
    if type(spec) is Obj:
        return _make_obj(spec)
    assert isinstance(spec, Each)
    return _make_each(spec)


def _make_obj(spec: Obj) -> Validator:
    """An object's validator: fields of plain JSON types tested in place, the others by their validators."""
    plain = [(key, sub) for key, sub in FIELDS[spec.kind].items() if type(sub) is tuple]
    nested = [(key, _validator(sub)) for key, sub in FIELDS[spec.kind].items() if type(sub) is not tuple]
    keys = KEYS[spec.kind] if spec.keys else Keys(frozenset(), frozenset())
    required, allowed, any_keys = keys.required, keys.allowed, not spec.keys

    def obj(value: object) -> bool:
        if not isinstance(value, dict) or not (
                any_keys or (allowed.issuperset(value) and required.issubset(value))):
            return False
        get = value.get
        for key, kinds in plain:
            item = get(key)
            if item is not None and not isinstance(item, kinds):
                return False
        for key, sub in nested:
            item = get(key)
            if item is not None and not sub(item):
                return False
        return True
    return obj


def _make_each(spec: Each) -> Validator:
    """A list's or a map's validator: every item (null only where ``nullable``) follows the inner spec."""
    container, inner, nullable = spec.container, spec.spec, spec.nullable
    if type(inner) is tuple:
        kinds = (*inner, type(None)) if nullable else inner
        # the JSON types that pass, to test a list's element types at C speed (set(map(type, ...)))
        passing = frozenset(t for t in (dict, list, str, int, float, bool, type(None))
                            if issubclass(t, kinds))

        def each_of(value: object) -> bool:
            if not isinstance(value, container):
                return False
            items = value.values() if isinstance(value, dict) else value
            return passing.issuperset(map(type, items)) or all(isinstance(item, kinds) for item in items)
        return each_of
    sub = _validator(inner)

    def each(value: object) -> bool:
        if not isinstance(value, container):
            return False
        for item in value.values() if isinstance(value, dict) else value:
            if item is None:
                if not nullable:
                    return False
            elif not sub(item):
                return False
        return True
    return each


def check(value: object, spec: Spec, where: str) -> None:
    """Raise ResultsError naming ``where`` and what is wrong when ``value`` (not null) does not follow
    ``spec``."""
    if isinstance(spec, tuple):
        if not isinstance(value, spec):
            raise ResultsError(f"{where} must be {' or '.join(_NAMES[t] for t in spec)}, not "
                               f"{json_type(value)}")
    elif isinstance(spec, Number):
        if not valid(value, spec):
            raise ResultsError(f"{where} must be a number a float can hold, not {json_type(value)}"
                               + (" of that size" if isinstance(value, int) else ""))
    elif isinstance(spec, Obj):
        if not isinstance(value, dict):
            raise ResultsError(f"{where} must be an object, not {json_type(value)}")
        wrong = KEYS[spec.kind].problem(value)
        if wrong:
            raise ResultsError(f"{where}: {wrong}")
        for key, sub in FIELDS[spec.kind].items():
            item = value.get(key)
            if item is not None:
                check(item, sub, f"{where}.{key}")
    else:
        if not isinstance(value, spec.container):
            raise ResultsError(f"{where} must be {_NAMES[spec.container]}, not {json_type(value)}")
        for k, item in value.items() if isinstance(value, dict) else enumerate(value):
            if item is not None:
                check(item, spec.spec, f"{where}[{json.dumps(k)}]")
            elif not spec.nullable:
                raise ResultsError(f"{where}[{json.dumps(k)}] must not be null")


def check_keys(obj: dict[str, object], kind: str, where: str) -> None:
    """Raise ResultsError naming ``where`` when ``obj`` has a key a ``kind`` record may not have, or lacks one
    it must have (:data:`KEYS`)."""
    keys = KEYS[kind]
    if keys.allowed.issuperset(obj) and keys.required.issubset(obj):  # (the fast pass, at C speed)
        return
    raise ResultsError(f"{where}: {keys.problem(obj)} for a {kind.split('-')[0]} record of {FORMAT}")


def check_record(obj: dict[str, object], kind: str, where: str, fields: str | None = None) -> None:
    """Hold a ``kind`` record to its keys (``kind``: ``case-kept`` for a kept file's case record) and, unless
    ``fields`` is ``""``, its fields to :data:`FIELDS` (``fields``: the kind whose fields, default ``kind``'s
    own)."""
    check_keys(obj, kind, where)
    kind = fields if fields is not None else kind
    if not kind or _validator(Obj(kind, keys=False))(obj):
        return
    for key, spec in FIELDS[kind].items():
        value = obj.get(key)
        if value is not None and not valid(value, spec):
            check(value, spec, f"{where}: {key}")
            raise ResultsError(f"{where}: {key} is not what a results file holds")  # (check found it first)
