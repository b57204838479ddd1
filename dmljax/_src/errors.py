"""The one error class of dmljax and the one place its message is formatted."""

from __future__ import annotations

import dataclasses
from typing import Sequence

__all__ = ["ValidationError", "Violation"]


@dataclasses.dataclass(frozen=True)
class Violation:
    """One thing wrong with a call.

    subject: the tensor or attribute in DirectML's spelling (``InputTensor``, ``Min``), or the
        operator itself (empty string) for availability.
    argument: the Python argument that carries it (``input``, ``min``), or empty.
    found: what was found, phrased to follow the subject (``has 3 dimensions``).
    allowed: what is allowed (``supported: 4 to 5``), or empty.
    tip: how to fix it, or empty.
    """

    subject: str
    argument: str
    found: str
    allowed: str = ""
    tip: str = ""

    def format(self) -> str:
        head = self.subject
        if self.argument:
            head += f" (argument `{self.argument}`)"
        line = f"  {head} {self.found}" if head else f"  {self.found[0].upper()}{self.found[1:]}"
        if self.allowed:
            line += f"; {self.allowed}"
        line += "."
        if self.tip:
            tip = self.tip if self.tip.endswith(".") else self.tip + "."
            line += f"\n    Tip: {tip}"
        return line


class ValidationError(ValueError):
    """A call that DirectML would refuse, found before anything is computed.

    ``violations`` holds every problem found; the message lists them all, headed by the
    operator (Python name and DML enum) and the feature level the call was checked at.
    """

    def __init__(self, operator: str, enum_name: str, level: str, violations: Sequence[Violation]):
        self.operator = operator
        self.enum_name = enum_name
        self.feature_level = level
        self.violations = tuple(violations)
        lines = [f"{operator} ({enum_name}) at {level}:"]
        lines += [v.format() for v in self.violations]
        super().__init__("\n".join(lines))
