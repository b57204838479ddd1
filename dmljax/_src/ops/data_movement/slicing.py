"""SLICE, SLICE1 and SLICE_GRAD, of the data_movement family: each page's record, with one
window formula below them (the Python functions are named after the enums: ``slice`` and
``slice1``, so this module never uses the builtin ``slice``)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jax import lax

from dmljax._src.catalog import PREFIX
from dmljax._src.derivatives import backward_rule
from dmljax._src.dtypes import (
    FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8, FLOAT32_FLOAT16_INT32_INT16_UINT32_UINT16,
    FLOAT64_FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8,
)
from dmljax._src.errors import Violation
from dmljax._src.op import operator
from dmljax._src.spec import OpSpec, ParamSpec, SameDataType, SilentChoice, TensorSpec, snake_case, table
from dmljax._src.validate import TensorInfo

_ALL = FLOAT64_FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8
_THREE = FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8
_ONE = FLOAT32_FLOAT16_INT32_INT16_UINT32_UINT16


def _window_checks(names: tuple[str, str, str], source: str, windowed: bool):
    """The arrays' length is the tensors' DimensionCount; sizes at least 1; strides not 0 (SLICE:
    at least 1); every element read inside the ``source`` tensor (SLICE1: "InputWindowOffsets[i] +
    InputWindowSizes[i] <= InputTensor.Sizes[i]"; SLICE: the last element read, offset + (size -
    1) * stride, inside it: never a read out of bounds)."""
    off_name, size_name, stride_name = names

    def check(tensors, attrs, level) -> list[Violation]:
        x = tensors.get(source)
        offs, sizes, strides = attrs.get(off_name), attrs.get(size_name), attrs.get(stride_name)
        if x is None or offs is None or sizes is None or strides is None:
            return []
        n = len(x.shape)
        problems = []
        for name, arr in ((off_name, offs), (size_name, sizes), (stride_name, strides)):
            if len(arr) != n:
                problems.append(Violation(name, _arg(name), f"has {len(arr)} entries",
                                          f"DimensionCount ({n}) entries, one per dimension of the {source}"))
        if problems:
            return problems
        for i in range(n):
            if sizes[i] < 1:
                problems.append(Violation(f"{size_name}[{i}]", _arg(size_name), f"is {sizes[i]}", "at least 1"))
            if strides[i] == 0 or (not windowed and strides[i] < 0):
                problems.append(Violation(f"{stride_name}[{i}]", _arg(stride_name), f"is {strides[i]}",
                                          "not 0 (the page: strides may not be 0)" if windowed else "at least 1"))
        if problems:
            return problems
        for i in range(n):
            end = offs[i] + sizes[i] if windowed else offs[i] + (sizes[i] - 1) * strides[i] + 1
            if end > x.shape[i]:
                rule = (f"{off_name}[i] + {size_name}[i] <= {source}.Sizes[i]" if windowed else
                        f"{off_name}[i] + ({size_name}[i] - 1) * {stride_name}[i] < {source}.Sizes[i]: every "
                        "element read lies inside the tensor")
                problems.append(Violation(
                    f"{off_name}[{i}], {size_name}[{i}]" + ("" if windowed else f", {stride_name}[{i}]"), _arg(off_name),
                    f"reach element {end - 1} of dimension {i}, whose size is {x.shape[i]}", rule))
        return problems
    return check


def _arg(dml_name: str) -> str:
    return snake_case(dml_name)


def _window_shape(sizes, strides) -> tuple[int, ...]:
    """SLICE1's output Sizes: each window's elements taken every |stride|: ceil(size / |stride|)."""
    return tuple(math.ceil(s / abs(t)) for s, t in zip(sizes, strides))


def _slice_out(tensors, attrs, problems) -> dict:
    """"The values in this array [Sizes] must match the sizes specified in the output tensor"."""
    return {"OutputTensor": TensorInfo(tuple(attrs["Sizes"]), tensors["InputTensor"].data_type)}


def _slice1_out(tensors, attrs, problems) -> dict:
    return {"OutputTensor": TensorInfo(_window_shape(attrs["InputWindowSizes"], attrs["InputWindowStrides"]),
                                       tensors["InputTensor"].data_type)}


def _window(x, offsets, sizes, strides):
    """The elements SLICE1 copies: the window [offset, offset + size) of each dimension, read from
    its start every stride (a negative stride: from its end, backwards)."""
    win = lax.slice(x, tuple(offsets), tuple(o + s for o, s in zip(offsets, sizes)))
    back = tuple(i for i, t in enumerate(strides) if t < 0)
    if back:
        win = lax.rev(win, back)
    return lax.slice(win, (0,) * x.ndim, win.shape, tuple(abs(t) for t in strides))


_WINDOW_PARAMS = (
    ParamSpec("InputWindowOffsets", "UINT[]", count="DimensionCount",
              doc="The beginning (in elements) of the input window in each dimension."),
    ParamSpec("InputWindowSizes", "UINT[]", count="DimensionCount",
              doc=("The extent (in elements) of the input window in each dimension; InputWindowOffsets[i] + "
                   "InputWindowSizes[i] <= InputTensor.Sizes[i].")),
    ParamSpec("InputWindowStrides", "INT[]", count="DimensionCount",
              doc=("How many elements to advance within the window; a negative stride copies from the "
                   "window's end. Strides may not be 0.")),
)

SLICE = OpSpec(
    enum_name=PREFIX + "SLICE",
    summary="Extracts a single subregion (a \"slice\") of an input tensor.",
    formula=("Offsets = {0, 0, 1, 2}\n"
             "(the page's Example 1: Sizes {1, 1, 3, 2} and Strides {1, 1, 1, 1} of the 4 x 4 input 1..16 "
             "give [[7, 8], [11, 12], [15, 16]]; output[i] = input[Offsets + i * Strides])"),
    tensors=(TensorSpec("InputTensor", "input"), TensorSpec("OutputTensor", "output")),
    support=(
        table("4.1", InputTensor=("1 to 8", _ALL), OutputTensor=("1 to 8", _ALL)),
        table("3.0", InputTensor=("1 to 8", _THREE), OutputTensor=("1 to 8", _THREE)),
        table("2.1", InputTensor=("4 to 5", _THREE), OutputTensor=("4 to 5", _THREE)),
        table("1.0", InputTensor=("4 to 5", _ONE), OutputTensor=("4 to 5", _ONE)),
    ),
    params=(
        ParamSpec("Offsets", "UINT[]", count="DimensionCount",
                  doc="The slice's start along each dimension of the input tensor, in elements."),
        ParamSpec("Sizes", "UINT[]", count="DimensionCount",
                  doc="The slice's size along each dimension (the OutputTensor's Sizes), in elements."),
        ParamSpec("Strides", "UINT[]", count="DimensionCount",
                  doc="The slice's stride along each dimension of the input tensor, in elements."),
    ),
    constraints=(SameDataType(("InputTensor", "OutputTensor")),),
    math=False,
    gradient="dInput = dY at the positions read, 0 elsewhere (the slice's transpose); integer inputs: none.",
    notes=("The three arrays have the tensors' DimensionCount entries (a desc's DimensionCount is their "
           "length). Sizes at least 1. Bit-exact data movement."),
    extra_checks=(_window_checks(("Offsets", "Sizes", "Strides"), "InputTensor", False),),
    infer_outputs=_slice_out,
    silent=(
        SilentChoice(
            "SLICE's Strides",
            "at least 1; every element read inside the InputTensor",
            "SLICE's page is silent; SLICE1's forbids 0; dmljax never reads out of bounds."),
    ),
)


@operator(SLICE)
def slice(input, *, offsets, sizes, strides):  # noqa: A001  (DirectML's name: dmljax.slice)
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.arange(1, 17, dtype=np.float32).reshape(1, 1, 4, 4)  # the page's examples
        >>> dmljax.slice(x, offsets=(0, 0, 1, 2), sizes=(1, 1, 3, 2), strides=(1, 1, 1, 1))[0, 0]
        Array([[ 7.,  8.],
               [11., 12.],
               [15., 16.]], dtype=float32)
        >>> dmljax.slice(x, offsets=(0, 0, 1, 0), sizes=(1, 1, 2, 2), strides=(1, 1, 2, 3))[0, 0]
        Array([[ 5.,  8.],
               [13., 16.]], dtype=float32)
    """
    window = tuple((s - 1) * t + 1 for s, t in zip(sizes, strides))
    return _window(input, offsets, window, strides)


SLICE1 = OpSpec(
    enum_name=PREFIX + "SLICE1",
    summary="Extracts a single subregion (a \"slice\") of an input tensor.",
    formula=("InputWindowOffsets = {0, 0, 0, 1}\n"
             "(the page's Example 2: InputWindowSizes {1, 1, 4, 3} and InputWindowStrides {1, 1, -2, 2} give "
             "[[14, 16], [6, 8]]: a negative stride starts at the window's end; the output's size is "
             "ceil(InputWindowSizes[i] / |InputWindowStrides[i]|))"),
    tensors=(TensorSpec("InputTensor", "input"), TensorSpec("OutputTensor", "output")),
    support=(
        table("4.1", InputTensor=("1 to 8", _ALL), OutputTensor=("1 to 8", _ALL)),
        table("3.0", InputTensor=("1 to 8", _THREE), OutputTensor=("1 to 8", _THREE)),
        table("2.1", InputTensor=("4 to 5", _THREE), OutputTensor=("4 to 5", _THREE)),
    ),
    params=_WINDOW_PARAMS,
    constraints=(SameDataType(("InputTensor", "OutputTensor")),),
    math=False,
    grad_operator="DML_OPERATOR_SLICE_GRAD",
    gradient="SLICE_GRAD's: dY written back where each element was read, 0 elsewhere; integer inputs: none.",
    notes=("The OutputTensor's Sizes are ceil(InputWindowSizes[i] / |InputWindowStrides[i]|) (the page's "
           "examples: a window of 3 every 2 gives 2), which a desc's OutputTensor must match. "
           "InputWindowSizes at least 1, strides not 0, windows inside the InputTensor, as the page says. "
           "Bit-exact data movement; jax.grad uses SLICE_GRAD's rule (the same function)."),
    extra_checks=(_window_checks(("InputWindowOffsets", "InputWindowSizes", "InputWindowStrides"), "InputTensor", True),),
    infer_outputs=_slice1_out,
    silent=(
        SilentChoice(
            "SLICE1's output Sizes",
            "ceil(InputWindowSizes[i] / |InputWindowStrides[i]|)",
            "The page's examples (a window of 3 every 2 gives 2)."),
    ),
)


def _slice_grad(dy, input_sizes, offsets, sizes, strides):
    """dY placed where SLICE1 read each element of an InputTensor of ``input_sizes``, 0 elsewhere:
    the transpose of the window (exact: each position is read at most once)."""
    zeros = jnp.zeros(input_sizes, dy.dtype)
    return jax.linear_transpose(lambda z: _window(z, offsets, sizes, strides), zeros)(dy)[0]


def _window_vjp(x, offsets, sizes, strides):
    def run(v):
        return _window(v, offsets, sizes, strides)

    def fwd(v):
        return run(v), None

    def bwd(_, dy):
        return (_slice_grad(dy, x.shape, offsets, sizes, strides),)

    run = backward_rule(run, fwd, bwd)
    return run(x) if jnp.issubdtype(x.dtype, jnp.floating) else _window(x, offsets, sizes, strides)


@operator(SLICE1)
def slice1(input, *, input_window_offsets, input_window_sizes, input_window_strides):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.arange(1, 17, dtype=np.float32).reshape(1, 1, 4, 4)  # the page's examples
        >>> dmljax.slice1(x, input_window_offsets=(0, 0, 0, 1), input_window_sizes=(1, 1, 4, 3),
        ...               input_window_strides=(1, 1, 2, 2))[0, 0]
        Array([[ 2.,  4.],
               [10., 12.]], dtype=float32)
        >>> dmljax.slice1(x, input_window_offsets=(0, 0, 0, 1), input_window_sizes=(1, 1, 4, 3),
        ...               input_window_strides=(1, 1, -2, 2))[0, 0]
        Array([[14., 16.],
               [ 6.,  8.]], dtype=float32)
    """
    return _window_vjp(input, input_window_offsets, input_window_sizes, input_window_strides)


def _grad_out(tensors, attrs, problems) -> dict:
    """The InputGradientTensor must have SLICE1's output Sizes for the window; the
    OutputGradientTensor's Sizes are the caller's (the forward input's)."""
    dy, out = tensors["InputGradientTensor"], tensors["OutputGradientTensor"]
    want = _window_shape(attrs["InputWindowSizes"], attrs["InputWindowStrides"])
    if tuple(dy.shape) != want:
        problems.append(Violation("InputGradientTensor", "input_gradient", f"has Sizes {list(dy.shape)}",
                                  f"SLICE1's output Sizes for this window, {list(want)}"))
    return {"OutputGradientTensor": TensorInfo(out.shape, dy.data_type)}


SLICE_GRAD = OpSpec(
    enum_name=PREFIX + "SLICE_GRAD",
    summary="Computes backpropagation gradients for Slice (DML_OPERATOR_SLICE1).",
    formula=("The sliced elements are propagated to the output, and all other elements are set to 0.\n"
             "(each element of the InputGradientTensor is written to the OutputGradientTensor where SLICE1 "
             "read the element it produced)"),
    tensors=(TensorSpec("InputGradientTensor", "input"),
             TensorSpec("OutputGradientTensor", "output", sizes_arg=True)),
    support=(
        table("4.1", InputGradientTensor=("1 to 8", _ALL), OutputGradientTensor=("1 to 8", _ALL)),
        table("3.1", InputGradientTensor=("1 to 8", _THREE), OutputGradientTensor=("1 to 8", _THREE)),
        table("3.0", InputGradientTensor=("4 to 5", _THREE), OutputGradientTensor=("4 to 5", _THREE)),
    ),
    params=_WINDOW_PARAMS,
    constraints=(SameDataType(("InputGradientTensor", "OutputGradientTensor")),),
    math=False,
    gradient="Its own transpose is SLICE1: dInputGradient = SLICE1 of dY (a linear map).",
    notes=("output_gradient_sizes= gives the OutputGradientTensor's Sizes (the forward InputTensor's); the "
           "window must lie inside it and the InputGradientTensor must have SLICE1's output Sizes for the "
           "window. Strides may not be 0 (the page says so here and, despite this page's remark, on "
           "SLICE1's too). Bit-exact: each element is copied or is 0. jax.grad of SLICE1 is this function."),
    extra_checks=(_window_checks(("InputWindowOffsets", "InputWindowSizes", "InputWindowStrides"),
                                 "OutputGradientTensor", True),),
    infer_outputs=_grad_out,
)


@operator(SLICE_GRAD)
def slice_grad(input_gradient, *, input_window_offsets, input_window_sizes, input_window_strides,
               output_gradient_sizes):
    """Example:
        >>> import numpy as np, dmljax
        >>> dy = np.array([[1, 2], [3, 4]], np.float32)
        >>> dmljax.slice_grad(dy, input_window_offsets=(0, 1), input_window_sizes=(4, 3),
        ...                   input_window_strides=(-2, 2), output_gradient_sizes=(4, 4))
        Array([[0., 0., 0., 0.],
               [0., 3., 0., 4.],
               [0., 0., 0., 0.],
               [0., 1., 0., 2.]], dtype=float32)
    """
    return _slice_grad(input_gradient, output_gradient_sizes, input_window_offsets, input_window_sizes,
                       input_window_strides)
