"""The one exception the reference kernel raises for anything it cannot or must not compute."""

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
