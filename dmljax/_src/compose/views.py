"""Strided views: broadcasting, rank padding, reshapes and transposes as tensor descs, the way
DirectMLX expresses them (``dml::Reinterpret``, ``dml::Broadcast``); slicing, concatenation and
splitting as DirectML's SLICE1, JOIN and SPLIT.

A view is a DML_BUFFER_TENSOR_DESC (``dmljax.TensorDesc``: DataType, Sizes, Strides) over the
packed buffer of an array. No operator runs: the view is read as DirectML reads an operator's
input bound with that desc (``buffers.read_view``, which lowers to XLA's reshape, slice, transpose
and broadcast, never to arithmetic), so every bit is kept, NaN payloads and FLOAT32 denormals
included. A broadcast is a stride of 0, rank padding leading sizes of 1, a transpose permuted
strides and a reshape the packed strides of new sizes.
"""

from __future__ import annotations

import builtins
import math
import operator
from typing import Sequence

import jax.numpy as jnp
import numpy as np

from dmljax._src.buffers import read_view
from dmljax._src.compose.checks import axes_tuple, axis_index, check, data_type, refuse
from dmljax._src.errors import ValidationError, Violation, quote
from dmljax._src.ops import OPERATORS
from dmljax._src.tensor_desc import TensorDesc, index_of_last_element, packed_strides

__all__ = ["reinterpret", "broadcast_shapes", "broadcast_to", "broadcast_arrays", "reshape", "expand_dims",
           "squeeze", "transpose", "swapaxes", "slice", "concatenate", "split"]


def _shape(shape, arg: str, problems: list[Violation], allow_minus_one: bool = False) -> tuple[int, ...] | None:
    seq = shape if isinstance(shape, (tuple, list)) else (shape,)
    try:
        out = tuple(operator.index(s) for s in seq)
    except TypeError:
        out = None
    if out is None or any(isinstance(s, (bool, np.bool_)) for s in seq):
        problems.append(Violation("", "", f"`{arg}` is {quote(shape)}", "a tuple of integers"))
        return None
    low = -1 if allow_minus_one else 1
    if any(s < low or s == 0 for s in out):
        problems.append(Violation("", "", f"`{arg}` is {quote(shape)}",
                                  "sizes of at least 1 (DirectML has no empty tensors)"
                                  + (", or one -1 for the size that fits" if allow_minus_one else "")))
        return None
    return out


def reinterpret(x, sizes: Sequence[int], strides: Sequence[int] | None = None):
    """The view of ``x``'s packed buffer through the desc {Sizes ``sizes``, Strides ``strides``}.

    DirectMLX's ``dml::Reinterpret``: no operator, a DML_BUFFER_TENSOR_DESC over the same buffer,
    read as DirectML reads an input bound with it (strides in elements; None: packed). The desc
    must stay inside the buffer.

    >>> import numpy as np
    >>> from dmljax import compose
    >>> compose.reinterpret(np.arange(3, dtype=np.float32), (2, 3), (0, 1))   # a broadcast
    Array([[0., 1., 2.],
           [0., 1., 2.]], dtype=float32)
    """
    problems: list[Violation] = []
    dt = data_type(x, "x", problems)
    check("reinterpret", (), problems)
    flat = jnp.reshape(x, (-1,))  # the buffer (a packed array is its own buffer)
    try:
        desc = TensorDesc(dt, tuple(sizes), None if strides is None else tuple(strides))
    except ValidationError as e:
        raise _as_view_error("reinterpret", e) from None
    last = index_of_last_element(desc.sizes, desc.effective_strides)
    if last >= flat.shape[0]:
        check("reinterpret", (), [Violation(
            "", "", f"the desc {{Sizes {list(desc.sizes)}, Strides {list(desc.effective_strides)}}} reads element {last} "
                    f"of `x`, which holds {flat.shape[0]}", "a view stays inside the buffer it views")])
    return read_view(flat, desc)


def _as_view_error(name: str, e: ValidationError) -> ValidationError:
    return refuse(name, (), e.violations)


def _view(x, sizes: tuple[int, ...], strides: tuple[int, ...] | None):
    """A view the caller has already checked; a 0-d result is the buffer's one element."""
    if tuple(x.shape) == sizes and strides == packed_strides(sizes):
        return x
    if not sizes:
        return jnp.reshape(x, ())
    return reinterpret(x, sizes, strides)


def broadcast_shapes(*shapes) -> tuple[int, ...]:
    """NumPy's broadcast of ``shapes`` (aligned at the end, each size 1 or the common one)."""
    out = _broadcast_shapes("broadcast_shapes", shapes, [f"`shapes[{i}]`" for i in range(len(shapes))])
    return out


def _broadcast_shapes(name: str, shapes, args, operators=()) -> tuple[int, ...]:
    rank = max((len(s) for s in shapes), default=0)
    out = []
    for i in range(rank):
        sizes = {s[len(s) - rank + i] for s in shapes if len(s) - rank + i >= 0} - {1}
        if len(sizes) > 1:
            listed = ", ".join(f"{a} {tuple(s)}" for a, s in zip(args, shapes))
            check(name, operators, [Violation("", "", f"{listed} do not broadcast",
                                              "each size 1 or the same, the shapes aligned at the end (NumPy's rule)")])
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def _broadcast_strides(shape: tuple[int, ...], target: tuple[int, ...]) -> tuple[int, ...]:
    pad = len(target) - len(shape)
    strides = (0,) * pad + packed_strides(shape)
    full = (1,) * pad + shape
    return tuple(0 if f == 1 and t != 1 else s for f, t, s in zip(full, target, strides))


def broadcast_to(x, shape: Sequence[int]):
    """``x`` broadcast to ``shape`` by NumPy's rule: leading sizes of 1 (rank padding) and a
    stride of 0 along each dimension of size 1 that grows. A view: no operator, no copy in
    DirectML (a desc), no arithmetic here.

    >>> import numpy as np
    >>> from dmljax import compose
    >>> compose.broadcast_to(np.array([1, 2], np.int8), (2, 2))
    Array([[1, 2],
           [1, 2]], dtype=int8)
    """
    problems: list[Violation] = []
    data_type(x, "x", problems)
    target = _shape(shape, "shape", problems)
    check("broadcast_to", (), problems)
    have = tuple(x.shape)
    if len(have) > len(target) or any(h not in (1, t) for h, t in zip(have[::-1], target[::-1])):
        check("broadcast_to", (), [Violation("", "", f"`x` of shape {have} does not broadcast to {target}",
                                             "each size of `x` is 1 or the target's, aligned at the end (NumPy's rule)")])
    return _view(x, target, _broadcast_strides(have, target))


def broadcast_arrays(*arrays):
    """The arrays broadcast to their common shape (NumPy's rule), each a view."""
    shape = _broadcast_shapes("broadcast_arrays", [tuple(np.shape(a)) for a in arrays],
                              [f"`arrays[{i}]`" for i in range(len(arrays))])
    return [broadcast_to(a, shape) for a in arrays]


def reshape(x, shape: Sequence[int]):
    """``x`` with new sizes, its elements in the same (row-major) order: the packed desc of the
    new sizes over the same buffer (one size may be -1: the size that fits).

    >>> import numpy as np
    >>> from dmljax import compose
    >>> compose.reshape(np.arange(6, dtype=np.float32), (2, -1)).shape
    (2, 3)
    """
    problems: list[Violation] = []
    data_type(x, "x", problems)
    target = _shape(shape, "shape", problems, allow_minus_one=True)
    check("reshape", (), problems)
    count = math.prod(x.shape)
    if target.count(-1) > 1:
        check("reshape", (), [Violation("", "", f"`shape` {target} has more than one -1", "at most one -1")])
    if -1 in target:
        rest = math.prod(s for s in target if s != -1)
        if count % rest:
            check("reshape", (), [Violation("", "", f"`shape` {target} cannot hold the {count} elements of "
                                                         f"`x` {tuple(x.shape)}", "a -1 that is a whole number")])
        target = tuple(count // rest if s == -1 else s for s in target)
    if math.prod(target) != count:
        check("reshape", (), [Violation("", "", f"`shape` {target} holds {math.prod(target)} elements, `x` "
                                                     f"{tuple(x.shape)} {count}", "the same element count")])
    return _view(x, target, packed_strides(target))


def expand_dims(x, axis):
    """``x`` with a dimension of size 1 inserted at ``axis`` (an int or several; negatives count
    from the end of the result): rank padding, a desc."""
    problems: list[Violation] = []
    data_type(x, "x", problems)
    check("expand_dims", (), problems)
    rank = x.ndim + (len(axis) if isinstance(axis, (tuple, list)) else 1)
    axes = axes_tuple(axis, rank, "axis", problems)
    check("expand_dims", (), problems)
    it = iter(x.shape)
    return reshape(x, tuple(1 if i in axes else next(it) for i in range(rank)))


def squeeze(x, axis=None):
    """``x`` without the dimensions of size 1 named by ``axis`` (None: all of them): a desc."""
    problems: list[Violation] = []
    data_type(x, "x", problems)
    check("squeeze", (), problems)
    axes = tuple(i for i, s in enumerate(x.shape) if s == 1) if axis is None else axes_tuple(
        axis, x.ndim, "axis", problems)
    if axes is not None and axis is not None and any(x.shape[a] != 1 for a in axes):
        problems.append(Violation("", "", f"`axis` {quote(axis)} names a dimension of `x` {tuple(x.shape)} "
                                              "whose size is not 1", "dimensions of size 1"))
    check("squeeze", (), problems)
    return reshape(x, tuple(s for i, s in enumerate(x.shape) if i not in axes))


def transpose(x, axes: Sequence[int] | None = None):
    """``x`` with its dimensions permuted (None: reversed), as ``jnp.transpose``: the desc with
    permuted Sizes and Strides over the same buffer (how DirectMLX transposes).

    >>> import numpy as np
    >>> from dmljax import compose
    >>> compose.transpose(np.arange(6, dtype=np.float32).reshape(2, 3))
    Array([[0., 3.],
           [1., 4.],
           [2., 5.]], dtype=float32)
    """
    problems: list[Violation] = []
    data_type(x, "x", problems)
    check("transpose", (), problems)
    if axes is None:
        axes = tuple(range(x.ndim))[::-1]
    perm = [axis_index(a, x.ndim, "axes", problems) for a in (axes if isinstance(axes, (tuple, list)) else [axes])]
    if not problems and sorted(perm) != list(range(x.ndim)):
        problems.append(Violation("", "", f"`axes` is {quote(axes)} for an array of {x.ndim} dimensions",
                                  "a permutation of its dimensions"))
    check("transpose", (), problems)
    strides = packed_strides(tuple(x.shape))
    return _view(x, tuple(x.shape[a] for a in perm), tuple(strides[a] for a in perm))


def swapaxes(x, axis1: int, axis2: int):
    """``x`` with two dimensions exchanged: a transpose (permuted strides)."""
    problems: list[Violation] = []
    data_type(x, "x", problems)
    check("swapaxes", (), problems)
    a = axis_index(axis1, x.ndim, "axis1", problems)
    b = axis_index(axis2, x.ndim, "axis2", problems)
    check("swapaxes", (), problems)
    perm = list(range(x.ndim))
    perm[a], perm[b] = perm[b], perm[a]
    return transpose(x, perm)


def slice(x, starts: Sequence[int], stops: Sequence[int], steps: Sequence[int] | None = None,
          axes: Sequence[int] | None = None):
    """``x[start:stop:step]`` along ``axes`` (default the first ``len(starts)``), with Python's
    rules (negative starts and stops count from the end and are clipped; a negative step walks
    back), by DML_OPERATOR_SLICE1 (bit-exact data movement; its gradient is SLICE_GRAD's). An
    empty slice is refused: DirectML has no empty tensors.

    >>> import numpy as np
    >>> from dmljax import compose
    >>> compose.slice(np.arange(10, dtype=np.int32), [-1], [2], [-3])      # x[-1:2:-3]
    Array([9, 6, 3], dtype=int32)
    """
    problems: list[Violation] = []
    data_type(x, "x", problems)
    check("slice", ("SLICE1",), problems)
    if x.ndim == 0:
        check("slice", ("SLICE1",), [Violation("", "", "`x` is 0-d", "an array of 1 or more dimensions")])
    n = len(starts) if isinstance(starts, (tuple, list)) else -1
    steps = [1] * max(n, 0) if steps is None else steps
    axes = list(range(max(n, 0))) if axes is None else axes
    lists = {"starts": starts, "stops": stops, "steps": steps, "axes": axes}
    if any(not isinstance(v, (tuple, list)) or len(v) != n for v in lists.values()):
        check("slice", ("SLICE1",), [Violation("", "", "`starts`, `stops`, `steps` and `axes` have lengths "
                                                      + ", ".join(str(len(v)) if isinstance(v, (tuple, list)) else quote(v)
                                                                  for v in lists.values()),
                                               "lists of one length (one entry an axis)")])
    offsets, sizes, strides = [0] * x.ndim, list(x.shape), [1] * x.ndim
    seen = set()
    for start, stop, step, ax in zip(starts, stops, steps, axes):
        a = axis_index(ax, x.ndim, "axes", problems)
        if a is None:
            continue
        if a in seen:
            problems.append(Violation("", "", f"`axes` {quote(axes)} names axis {a} twice", "distinct axes"))
            continue
        seen.add(a)
        try:
            picked = range(x.shape[a])[builtins.slice(start, stop, step)]
        except (TypeError, ValueError) as e:
            problems.append(Violation("", "", f"the slice {start}:{stop}:{step} of axis {a} is invalid ({e})",
                                      "integers, a step other than 0"))
            continue
        if len(picked) == 0:
            problems.append(Violation("", "", f"the slice {start}:{stop}:{step} of axis {a} (size {x.shape[a]}) "
                                              "is empty", "DirectML has no empty tensors"))
            continue
        offsets[a] = min(picked[0], picked[-1])
        sizes[a] = (len(picked) - 1) * abs(picked.step) + 1
        strides[a] = picked.step
    check("slice", ("SLICE1",), problems)
    if offsets == [0] * x.ndim and sizes == list(x.shape) and strides == [1] * x.ndim:
        return x
    return OPERATORS["slice1"](x, input_window_offsets=tuple(offsets), input_window_sizes=tuple(sizes),
                               input_window_strides=tuple(strides))


def concatenate(arrays: Sequence, axis: int = 0):
    """The arrays joined along ``axis`` (negatives count from the end), as ``jnp.concatenate``,
    by DML_OPERATOR_JOIN: one DataType, one rank, the same sizes except along ``axis``."""
    problems: list[Violation] = []
    if not isinstance(arrays, (tuple, list)) or not arrays:
        check("concatenate", ("JOIN",), [Violation("", "", f"`arrays` is {quote(arrays)}",
                                                   "a list of 1 to 64 arrays")])
    for i, a in enumerate(arrays):
        data_type(a, f"arrays[{i}]", problems)
    check("concatenate", ("JOIN",), problems)
    ranks = {a.ndim for a in arrays}
    if len(ranks) > 1 or 0 in ranks:
        check("concatenate", ("JOIN",), [Violation("", "", "the arrays have shapes "
                                                   + ", ".join(str(tuple(a.shape)) for a in arrays),
                                                   "one rank, 1 or more", "expand_dims or reshape them first")])
    ax = axis_index(axis, arrays[0].ndim, "axis", problems)
    check("concatenate", ("JOIN",), problems)
    return OPERATORS["join"](list(arrays), axis=ax)


def split(x, indices_or_sections, axis: int = 0) -> list:
    """``x`` cut along ``axis`` into equal sections (an int) or at the given indices, as
    ``jnp.split``, by DML_OPERATOR_SPLIT. An empty piece is refused."""
    problems: list[Violation] = []
    data_type(x, "x", problems)
    check("split", ("SPLIT",), problems)
    ax = axis_index(axis, x.ndim, "axis", problems)
    check("split", ("SPLIT",), problems)
    size = x.shape[ax]
    if isinstance(indices_or_sections, (tuple, list)):
        bounds = [0, *(int(i) % size if int(i) < 0 else int(i) for i in indices_or_sections), size]
        pieces = [b - a for a, b in zip(bounds, bounds[1:])]
        if any(p <= 0 for p in pieces):
            check("split", ("SPLIT",), [Violation("", "", f"the indices {quote(indices_or_sections)} "
                                                  f"cut axis {ax} (size {size}) into pieces {pieces}",
                                                  "increasing indices inside the axis: no empty piece")])
    else:
        n = operator.index(indices_or_sections)
        if n < 1 or size % n:
            check("split", ("SPLIT",), [Violation("", "", f"{n} sections of axis {ax} (size {size})",
                                                  "a count that divides the axis")])
        pieces = [size // n] * n
    sizes = [tuple(p if i == ax else s for i, s in enumerate(x.shape)) for p in pieces]
    return list(OPERATORS["split"](x, axis=ax, outputs_sizes=sizes))
