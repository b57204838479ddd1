"""The one error class of dmljax and the one place its message is formatted."""

from __future__ import annotations

import dataclasses
import linecache
import os
import reprlib
import sys
from typing import Sequence

__all__ = ["ValidationError", "UnknownOperatorError", "OperatorNotImplementedError", "Violation",
           "quote", "cap", "MAX_FIELD_CHARS", "MAX_MESSAGE_CHARS", "note_call_site"]

MAX_FIELD_CHARS = 700
"""The most characters a message quotes from one field of a Violation (a value quoted whole can
make a message of megabytes)."""

MAX_MESSAGE_CHARS = 2000
"""The most characters of a ValidationError's message: the problems past it are counted, not
listed (all of them stay in ``.violations``)."""

_REPR = reprlib.Repr()
_REPR.maxstring = 60
_REPR.maxother = 60
_REPR.maxlong = 40
_REPR.maxlist = _REPR.maxtuple = _REPR.maxdict = _REPR.maxset = _REPR.maxfrozenset = 6
_REPR.maxlevel = 3


def quote(value: object) -> str:
    """``repr(value)`` for a message: bounded in length (long strings, numbers and containers are
    abbreviated with ``...``) and safe on self-referential containers, on integers too long for
    ``repr`` and on objects whose repr fails."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 256:
        return f"{'-' if value < 0 else ''}<an integer of {value.bit_length()} bits>"
    try:
        text = _REPR.repr(value)
    except Exception:  # noqa: BLE001  (a user object's __repr__ may raise anything)
        text = f"<{_type_name(value)} object>"
    return _cap(text if isinstance(text, str) else f"<{_type_name(value)} object>", 80)


def cap(text: object, limit: int = 80) -> str:
    """``text`` (a str, or a value whose ``str`` is wanted) cut to ``limit`` characters."""
    if not isinstance(text, str):
        try:
            text = str(text) if not isinstance(text, int) or abs(text).bit_length() <= 256 else quote(text)
        except Exception:  # noqa: BLE001
            text = f"<{_type_name(text)} object>"
    return _cap(text, limit)


def _type_name(value: object) -> str:
    return _cap(getattr(type(value), "__name__", "?"), 40)


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
        subject, found = cap(self.subject, MAX_FIELD_CHARS), cap(self.found, MAX_FIELD_CHARS)
        allowed, tip = cap(self.allowed, MAX_FIELD_CHARS), cap(self.tip, MAX_FIELD_CHARS)
        head = subject
        if self.argument:
            head += f" (argument `{cap(self.argument, 80)}`)"
        line = f"  {head} {found}" if head else f"  {found[:1].upper()}{found[1:]}"
        if allowed:
            line += f"; {allowed}"
        line += "."
        if tip:
            tip = tip if tip.endswith((".", "?", "!")) else tip + "."
            line += f"\n    Tip: {tip}"
        return line


def _more(count: int) -> str:
    if count <= 0:
        return ""
    return f"\n  ... and {count} more problem{'s' if count > 1 else ''} (every one is in the error's .violations)."


class ValidationError(ValueError):
    """A call that DirectML would refuse, found before anything is computed.

    ``violations`` holds every problem found; the message lists them, headed by the operator
    (Python name and DML enum) and the feature level the call was checked at (left out where no
    level applies, e.g. for an operator name that is not DirectML's). The message is at most
    MAX_MESSAGE_CHARS long: problems past that are counted at its end, not listed.
    """

    def __init__(self, operator: str, enum_name: str, level: str | None, violations: Sequence[Violation]):
        self.operator = operator
        self.enum_name = enum_name
        self.feature_level = level
        self.violations = tuple(violations)
        head = f"{cap(operator)} ({cap(enum_name)})" + (f" at {cap(level)}" if level else "")
        count = len(self.violations)
        text, shown = head + ":", 0
        for v in self.violations:  # formatted one by one: the rest are only counted
            line = v.format()
            reserve = len(_more(count - shown - 1))
            if len(text) + 1 + len(line) + reserve > MAX_MESSAGE_CHARS:
                if shown == 0:  # the first problem is always shown, cut to fit
                    text += "\n" + _cap(line, MAX_MESSAGE_CHARS - len(text) - 1 - reserve)
                    shown = 1
                break
            text += "\n" + line
            shown += 1
        text += _more(count - shown)
        super().__init__(text)


class UnknownOperatorError(ValidationError):
    """A name or value that is not a DirectML operator (``DML_OPERATOR_TYPE``) at all."""


class OperatorNotImplementedError(ValidationError, NotImplementedError):
    """A DirectML operator that dmljax does not implement yet."""


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # .../dmljax/
_LIBRARIES = (os.sep + "jax" + os.sep, os.sep + "jaxlib" + os.sep, os.sep + "functools.py",
              os.sep + "contextlib.py")


def _outside(path: str) -> bool:
    """Whether a frame's file is the caller's: not dmljax's, JAX's or the standard wrappers'."""
    return not (os.path.abspath(path).startswith(_PACKAGE) or any(p in path for p in _LIBRARIES)
                or path.startswith("<frozen"))


def note_call_site(error: BaseException) -> BaseException:
    """``error`` with a note naming the caller's line that called the operator (the innermost
    frame outside dmljax and JAX), shown under its traceback: in a long jitted function, the
    operator's name alone does not say which of its calls failed. The message itself is unchanged."""
    frame = sys._getframe(1)
    while frame is not None and not _outside(frame.f_code.co_filename):
        frame = frame.f_back
    if frame is not None and hasattr(error, "add_note"):
        path, line = frame.f_code.co_filename, frame.f_lineno
        code = linecache.getline(path, line).strip()
        error.add_note(f"The call: {cap(path, 200)}:{line}, in {cap(frame.f_code.co_name, 80)}"
                       + (f": {cap(code, 200)}" if code else ""))
    return error
