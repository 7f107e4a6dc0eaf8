"""What a backend hands back, made safe to judge, record and print.

A backend's ``run`` should return a list of numpy arrays in the registry's dtypes. Whatever else comes back
(None, a string, a single array, a list of Python lists, an object array, a float64 array for an int8 output
...) is described here, so that the case fails with a message that says what was expected and what came back,
instead of the runner failing on it; only numeric arrays travel on (an object array may not even pickle). What
a backend says (its exceptions, what it prints) is made printable: no control character reaches a terminal or
a report.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..types import by_dtype

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
#: numpy kinds kept as arrays besides the registry's dtypes: bool, integers, floats, complex
_NUMERIC = frozenset("biufc")


@dataclass
class RawResult:
    """What one call of a backend did, before it is judged (``outcome.classify``)."""

    kind: str  # ok | unsupported | not-applicable | rejected | error | crashed | timeout | harness-error
    #: ok: each output an array (of a registry or plain numeric dtype) or what came back instead
    #: (:class:`Opaque`)
    outputs: list[Any] = field(default_factory=list)
    message: str = ""
    seconds: float = 0.0
    # ok: what the backend returned when it was not a list of outputs ("None", ...)
    returned: str | None = None


@dataclass(frozen=True)
class Opaque:
    """An output that is not a numeric array (None, a list, an object or string array ...): its
    description."""

    what: str


def printable(text: str) -> str:
    """``text`` with its control characters (but newlines and tabs) escaped: what a backend says or prints
    reaches a terminal, a results file and a report, and must not move a cursor or clear a screen there."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def exception_text(e: BaseException, limit: int = 10_000) -> str:
    """``e``'s message, printable and at most ``limit`` characters, even when its ``__str__`` raises."""
    try:
        text = str(e)
    except Exception:  # noqa: BLE001 - an exception that cannot say what it is still ends the case
        text = f"<the {type(e).__name__}'s message cannot be printed>"
    return printable(text if len(text) <= limit else text[:limit] + " ...")


def registered(dtype: np.dtype) -> bool:
    """Whether ``dtype`` is one of the registry's element types."""
    try:
        by_dtype(dtype)
    except (KeyError, TypeError):
        return False
    return True


def type_name(dtype: np.dtype) -> str:
    """The registry's name of ``dtype`` (int8, float, bfloat16 ...), else numpy's (float64, object ...)."""
    return by_dtype(dtype).name if registered(dtype) else str(dtype)


def describe(value: object) -> str:
    """``int8 [2,3]`` for an array; what else it is for anything else."""
    if isinstance(value, Opaque):
        return value.what
    if isinstance(value, np.ndarray):
        return f"{type_name(value.dtype)} [{','.join(str(d) for d in value.shape)}]"
    return "None" if value is None else f"{_a(type(value).__name__)}, not an array"


def take(returned: object) -> tuple[list[np.ndarray | Opaque], str | None]:
    """(the outputs, each an array or an :class:`Opaque`; what came back instead of a list of outputs, or
    None)."""
    if not isinstance(returned, (list, tuple)):
        if isinstance(returned, np.ndarray):
            return [], f"a single array ({describe(returned)}), not a list of outputs"
        return [], "None" if returned is None else f"{_a(type(returned).__name__)}, not a list of outputs"
    return [_output(o) for o in returned], None


def _a(noun: str) -> str:
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


def _output(value: Any) -> Any:
    if isinstance(value, (np.ndarray, np.generic)):
        array = np.asarray(value)
        if array.dtype.kind in _NUMERIC or registered(array.dtype):
            return array
        return Opaque(f"{array.dtype} [{','.join(str(d) for d in array.shape)}]")
    return Opaque(describe(value))


def expected_outputs(expected: Sequence[np.ndarray], names: Sequence[str]) -> str:
    """``2 outputs (y: uint8 [16], y_scale: float [])``"""
    listed = ", ".join(f"{names[k] if k < len(names) else k}: {describe(e)}" for k, e in enumerate(expected))
    return f"{len(expected)} output{'s' if len(expected) != 1 else ''} ({listed})"
