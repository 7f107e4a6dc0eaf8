"""What a value recipe computes from (the case's operator kind, element types, scale and zero point) and what
it returns (the values, and a scale they need)."""

from __future__ import annotations

from dataclasses import dataclass

from qdq_conformance.types import ElementType


@dataclass(frozen=True)
class Ctx:
    kind: str  # "Q", "DQ" or "DQL"
    x: ElementType
    scale: ElementType | None
    y: ElementType
    scale_value: float = 1.0  # a representative scale (the first element)
    zp_value: float = 0.0


@dataclass(frozen=True)
class Recipe:
    values: list[float]
    scale: float | None = None  # a scale the values need (overrides the default)
