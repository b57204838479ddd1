"""What the compositions check before any operator runs, and how they refuse: dmljax's one error
format, headed by the composition (``compose.matmul``) and the DirectML operators it lowers to."""

from __future__ import annotations

import operator
from typing import Sequence

import numpy as np

from dmljax._src.dtypes import DataType, x64_enabled
from dmljax._src.errors import ValidationError, Violation, quote
from dmljax._src.validate import X64_TIP

__all__ = ["refuse", "data_type", "same_data_type", "axis_index", "axes_tuple", "check", "VIEW"]

VIEW = "DML_BUFFER_TENSOR_DESC"
"""What a view lowers to: no operator, a tensor desc's Sizes and Strides over the same buffer."""


def refuse(name: str, operators: Sequence[str], problems: Sequence[Violation]) -> ValidationError:
    """The error of composition ``name`` (which lowers to ``operators``, short names)."""
    lowered = " + ".join(f"DML_OPERATOR_{o}" for o in operators) if operators else VIEW
    return ValidationError(f"compose.{name}", lowered, None, list(problems))


def check(name: str, operators: Sequence[str], problems: Sequence[Violation]) -> None:
    """Raise ``refuse(...)`` when there are problems."""
    if problems:
        raise refuse(name, operators, problems)


def data_type(x, arg: str, problems: list[Violation]) -> DataType | None:
    """The DirectML data type of array ``x``, or None with a Violation (a Python number, a list or
    an array of a type DirectML lacks, such as bool or bfloat16)."""
    dtype = getattr(x, "dtype", None)
    if dtype is None or not hasattr(x, "shape"):
        problems.append(Violation(
            "", arg, f"`{arg}` is {quote(x)}, which is not an array",
            "DirectML tensors have a data type; a Python number or list has none",
            "pass an array of the type you mean (np.float32(...), np.asarray(..., np.float32))"))
        return None
    dt = DataType.from_dtype(dtype)
    if dt is None:
        problems.append(Violation("", "", f"`{arg}` has dtype {np.dtype(dtype).name}",
                                  "DirectML's data types: FLOAT64/32/16, (U)INT64/32/16/8",
                                  "cast it explicitly (dmljax.cast on a DirectML type, or astype)"))
    elif dt.needs_x64 and not x64_enabled():
        problems.append(Violation("", "", f"`{arg}` has DataType {dt.name}, which JAX keeps only in its 64-bit mode",
                                  "without it JAX would narrow it silently", X64_TIP))
        return None
    return dt


def same_data_type(arrays: dict[str, object], problems: list[Violation], optional=()) -> DataType | None:
    """The one DirectML data type of ``arrays`` (argument name -> array; those named in
    ``optional`` may be None); Violations for arrays that are not DirectML tensors or whose types
    differ (DirectML never promotes)."""
    types = {arg: data_type(x, arg, problems) for arg, x in arrays.items() if x is not None or arg not in optional}
    known = {arg: t for arg, t in types.items() if t is not None}
    if len(set(known.values())) > 1:
        names = [f"`{a}`" for a in known]
        problems.append(Violation(
            "", "", ", ".join(names[:-1]) + " and " + names[-1] + " have DataTypes "
            + ", ".join(t.name for t in known.values()), "they must have the same DataType",
            "cast explicitly: DirectML never promotes types"))
        return None
    return next(iter(known.values()), None) if len(known) == len(types) else None


def axis_index(axis, ndim: int, arg: str, problems: list[Violation]) -> int | None:
    """``axis`` (negative counts from the end) as an index in [0, ndim), or None with a Violation."""
    try:
        a = operator.index(axis)
    except TypeError:
        a = None
    if a is None or isinstance(axis, (bool, np.bool_)):
        problems.append(Violation("", "", f"`{arg}` is {quote(axis)}", "an integer axis"))
        return None
    if not -ndim <= a < ndim:
        problems.append(Violation("", "", f"`{arg}` is {a} for an array of {ndim} dimensions",
                                  f"an axis in [{-ndim}, {ndim})" if ndim else "a 0-d array has no axes"))
        return None
    return a % ndim


def axes_tuple(axes, ndim: int, arg: str, problems: list[Violation]) -> tuple[int, ...] | None:
    """``axes`` (an int or a sequence of them, negatives from the end) as sorted distinct indices."""
    seq = axes if isinstance(axes, (tuple, list)) else (axes,)
    out = [axis_index(a, ndim, arg, problems) for a in seq]
    if None in out:
        return None
    if not out or len(set(out)) != len(out):
        problems.append(Violation("", "", f"`{arg}` is {quote(axes)}", "one or more distinct axes"))
        return None
    return tuple(sorted(out))
