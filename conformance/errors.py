"""The project's errors: SpecViolation, the one exception the reference kernel raises for anything it cannot
or must not compute; CaseFileError, a case file that cannot be loaded (one line: file, line, key, problem)."""

from __future__ import annotations


class SpecViolation(Exception):
    """A model, input or attribute the specification does not allow (or an operator the kernel does not know).

    ``rule`` is a stable rule id from :data:`conformance.rules.RULES`; ``op``, ``domain`` and ``version``
    name the operator version, and ``input`` the offending input or attribute when there is one.
    The message reads ``<domain>::<op>-<version>: <input>: <detail> [<rule>]``.
    """

    def __init__(
        self,
        rule: str,
        detail: str,
        *,
        op: str = "?",
        domain: str = "ai.onnx",
        version: int | None = None,
        input: str | None = None,  # noqa: A002 - the spec's word
    ) -> None:
        self.rule = rule
        self.detail = detail
        self.op = op
        self.domain = domain or "ai.onnx"
        self.version = version
        self.input = input
        where = f"{self.domain}::{op}-{version if version is not None else '?'}"
        subject = f" {input}:" if input else ""
        super().__init__(f"{where}:{subject} {detail} [{rule}]")


#: the longest key and problem a CaseFileError's one line quotes (a hostile file can make either huge)
MAX_KEY_CHARS = 200
MAX_PROBLEM_CHARS = 1000


def one_line(text: str, limit: int | None = None) -> str:
    """``text`` as one printable line: line breaks, control characters and lone surrogates escaped
    (``\\n``, ``\\x00``, ``\\ud800``), cut to ``limit`` characters with ``...``."""
    if not text.isprintable():
        text = "".join(c if c.isprintable()
                       else c.encode("unicode_escape", "backslashreplace").decode("ascii")
                       for c in text)
    if limit is not None and len(text) > limit:
        text = text[: max(limit - 3, 0)] + "..."
    return text


class CaseFileError(Exception):
    """A case file that cannot be loaded: one line naming the file, the line (when known), the key and the
    problem.

    ``file``, ``line``, ``key`` and ``message`` keep what was given; the message (``str``) is one printable
    line, whatever a hostile file put in its keys or values."""

    def __init__(self, file: object, line: int | None, key: str, message: str) -> None:
        self.file = str(file)
        self.line = line
        self.key = key
        self.message = message
        where = one_line(f"{self.file}:{line}" if line else self.file)
        problem = one_line(message, MAX_PROBLEM_CHARS)
        super().__init__(f"{where}: {one_line(key, MAX_KEY_CHARS)}: {problem}" if key
                         else f"{where}: {problem}")

    def __reduce__(self) -> tuple[type[CaseFileError], tuple[str, int | None, str, str]]:
        return type(self), (self.file, self.line, self.key, self.message)
