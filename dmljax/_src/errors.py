"""The one error class of dmljax and the one place its message is formatted."""

from __future__ import annotations

import dataclasses
import reprlib
from typing import Sequence

__all__ = ["ValidationError", "UnknownOperatorError", "OperatorNotImplementedError", "Violation",
           "quote", "MAX_FIELD_CHARS"]

MAX_FIELD_CHARS = 1000
"""The most characters a message quotes from one field of a Violation (a value quoted whole can
make a message of megabytes)."""

_REPR = reprlib.Repr()
_REPR.maxstring = 60
_REPR.maxother = 60
_REPR.maxlong = 40
_REPR.maxlist = _REPR.maxtuple = _REPR.maxdict = _REPR.maxset = _REPR.maxfrozenset = 6
_REPR.maxlevel = 3


def quote(value: object) -> str:
    """``repr(value)`` for a message: bounded in length (long strings, numbers and containers are
    abbreviated with ``...``) and safe on self-referential containers and on objects whose repr
    fails."""
    try:
        text = _REPR.repr(value)
    except Exception:  # noqa: BLE001  (a user object's __repr__ may raise anything)
        text = f"<{type(value).__name__} object>"
    return _cap(text, 80)


def _cap(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclasses.dataclass(frozen=True)
class Violation:
    """One thing wrong with a call.

    subject: the tensor or attribute in DirectML's spelling (``InputTensor``, ``Min``), or the
        operator itself (empty string) for availability.
    argument: the Python argument that carries it (``input``, ``min``), or empty.
    found: what was found, phrased to follow the subject (``has 3 dimensions``).
    allowed: what is allowed (``supported: 4 to 5``), or empty.
    tip: how to fix it, or empty.

    Each field is capped at MAX_FIELD_CHARS characters in the message.
    """

    subject: str
    argument: str
    found: str
    allowed: str = ""
    tip: str = ""

    def format(self) -> str:
        subject, found = _cap(self.subject, MAX_FIELD_CHARS), _cap(self.found, MAX_FIELD_CHARS)
        allowed, tip = _cap(self.allowed, MAX_FIELD_CHARS), _cap(self.tip, MAX_FIELD_CHARS)
        head = subject
        if self.argument:
            head += f" (argument `{_cap(self.argument, 80)}`)"
        line = f"  {head} {found}" if head else f"  {found[:1].upper()}{found[1:]}"
        if allowed:
            line += f"; {allowed}"
        line += "."
        if tip:
            tip = tip if tip.endswith(".") else tip + "."
            line += f"\n    Tip: {tip}"
        return line


class ValidationError(ValueError):
    """A call that DirectML would refuse, found before anything is computed.

    ``violations`` holds every problem found; the message lists them all, headed by the
    operator (Python name and DML enum) and the feature level the call was checked at (left out
    where no level applies, e.g. for an operator name that is not DirectML's).
    """

    def __init__(self, operator: str, enum_name: str, level: str | None, violations: Sequence[Violation]):
        self.operator = operator
        self.enum_name = enum_name
        self.feature_level = level
        self.violations = tuple(violations)
        head = f"{_cap(operator, 80)} ({_cap(enum_name, 80)})" + (f" at {level}" if level else "")
        lines = [head + ":"]
        lines += [v.format() for v in self.violations]
        super().__init__("\n".join(lines))


class UnknownOperatorError(ValidationError):
    """A name or value that is not a DirectML operator (``DML_OPERATOR_TYPE``) at all."""


class OperatorNotImplementedError(ValidationError, NotImplementedError):
    """A DirectML operator that dmljax does not implement yet."""
