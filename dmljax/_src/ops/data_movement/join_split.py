"""JOIN and SPLIT (a tensor array joined along an axis, and one split into several), of the
data_movement family: each page's record, with its formula below it."""

from __future__ import annotations

import jax.numpy as jnp
from jax import lax

from dmljax._src.catalog import PREFIX
from dmljax._src.dtypes import (
    FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8, FLOAT32_FLOAT16_INT32_INT16_UINT32_UINT16,
    FLOAT64_FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8,
)
from dmljax._src.errors import Violation
from dmljax._src.op import operator
from dmljax._src.spec import OpSpec, ParamSpec, SameDataType, SilentChoice, TensorSpec, table
from dmljax._src.validate import TensorInfo

_ALL = FLOAT64_FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8
_THREE = FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8
_ONE = FLOAT32_FLOAT16_INT32_INT16_UINT32_UINT16


def _elements(tensors, name: str) -> list[tuple[str, TensorInfo]]:
    """A tensor array's validated elements, in index order."""
    items = [(k, v) for k, v in tensors.items() if k.split("[", 1)[0] == name]
    return sorted(items, key=lambda kv: int(kv[0][len(name) + 1:-1]))


def _axis_and_sizes(whole: str, parts: str, axis_rule: str, joined: bool):
    """The pages' constraints between the one tensor and the array: the Axis in range, the same
    DimensionCount, the same Sizes except along Axis (where, for SPLIT, the parts' sizes add up to
    the whole's)."""
    def check(tensors, attrs, level) -> list[Violation]:
        axis = attrs.get("Axis")
        elements = _elements(tensors, parts)
        ref = tensors.get(whole) if not joined else (elements[0][1] if elements else None)
        if axis is None or ref is None or not elements:
            return []
        n = len(ref.shape)
        problems = []
        if axis >= n:
            problems.append(Violation("Axis", "axis", f"is {axis} for {n}-dimensional tensors",
                                      f"{axis_rule}: 0 to {n - 1}"))
            return problems
        for name, info in elements:
            arg = ("inputs" if joined else "outputs_sizes") + name[len(parts):]
            if len(info.shape) != n:
                problems.append(Violation(name, arg, f"has {len(info.shape)} dimensions",
                                          f"{n}, as {'InputTensors[0]' if joined else whole} (the same DimensionCount)"))
                continue
            other = [i for i in range(n) if i != axis and info.shape[i] != ref.shape[i]]
            if other:
                problems.append(Violation(
                    name, arg, f"has Sizes {list(info.shape)}",
                    f"the Sizes of {'InputTensors[0]' if joined else whole} ({list(ref.shape)}) except along Axis {axis}",
                    f"dimension {other[0]} differs"))
        if not joined and not problems:
            total = sum(info.shape[axis] for _, info in elements)
            if total != ref.shape[axis]:
                problems.append(Violation(
                    parts, "outputs_sizes", f"add up to {total} along Axis {axis}",
                    f"the InputTensor's size there ({ref.shape[axis]})",
                    "the outputs cover the input exactly, in order"))
        return problems
    return check


def _joined(tensors, attrs, problems) -> dict:
    """"The output sizes must have the same sizes as all input tensors except for the join axis,
    which must be equal to the sum of all inputs' join axis size"."""
    elements = _elements(tensors, "InputTensors")
    axis = attrs["Axis"]
    first = elements[0][1]
    shape = list(first.shape)
    shape[axis] = sum(info.shape[axis] for _, info in elements)
    return {"OutputTensor": TensorInfo(tuple(shape), first.data_type)}


JOIN = OpSpec(
    enum_name=PREFIX + "JOIN",
    summary=("Concatenates an array of input tensors along a specified axis."),
    formula=("[[[[ 1,  2,  3,  7,  8,  9, 10],\n"
             "(the page's Example 1: InputTensors {1,1,2,3} and {1,1,2,4} joined along Axis 3 give "
             "{1,1,2,7}, each row the first's then the second's)"),
    tensors=(TensorSpec("InputTensors", "input", count="InputCount"),
             TensorSpec("OutputTensor", "output")),
    support=(
        table("4.1", InputTensors=("1 to 8", _ALL), OutputTensor=("1 to 8", _ALL)),
        table("3.0", InputTensors=("4 to 5", _THREE), OutputTensor=("4 to 5", _THREE)),
        table("2.1", InputTensors=("4", _THREE), OutputTensor=("4", _THREE)),
        table("1.0", InputTensors=("4", _ONE), OutputTensor=("4", _ONE)),
    ),
    params=(ParamSpec("Axis", "UINT", doc=("The index of the dimension of the input tensors to join; in the "
                                           "range [0, OutputTensor.DimensionCount - 1].")),),
    constraints=(SameDataType(("InputTensors", "OutputTensor")),),
    math=False,
    gradient="dInputTensors[i] = the slice of dY that InputTensors[i] filled (integer inputs: none).",
    notes=("The inputs are a list or tuple of 1 to 64 tensors (the desc's InputCount is its length); "
           "all have the same DataType and DimensionCount and the same Sizes except along Axis, as the "
           "page says; the OutputTensor's Sizes follow. Bit-exact data movement: values are copied "
           "untouched, FLOAT32 denormals and NaN payloads included."),
    extra_checks=(_axis_and_sizes("OutputTensor", "InputTensors", "the range [0, OutputTensor.DimensionCount - 1]",
                                  True),),
    infer_outputs=_joined,
    silent=(
        SilentChoice(
            "JOIN / SPLIT tensor arrays",
            "a list (or tuple) of 1 to 64 tensors; SPLIT returns a tuple and takes `outputs_sizes=`, whose "
            "sizes along Axis must add up to the input's",
            "InputCount/OutputCount \"must be greater than 0\"; no page bounds them, 64 is a sanity limit; an "
            "uncovered remainder would leave input unread.",
            also=("SPLIT",)),
    ),
)


@operator(JOIN)
def join(inputs, *, axis):
    """Example:
        >>> import numpy as np, dmljax
        >>> a = np.array([[[[1, 2, 3], [4, 5, 6]]]], np.float32)  # the page's Example 1
        >>> b = np.array([[[[7, 8, 9, 10], [11, 12, 13, 14]]]], np.float32)
        >>> dmljax.join([a, b], axis=3)
        Array([[[[ 1.,  2.,  3.,  7.,  8.,  9., 10.],
                 [ 4.,  5.,  6., 11., 12., 13., 14.]]]], dtype=float32)
    """
    return lax.concatenate([jnp.asarray(x) for x in inputs], axis)


SPLIT = OpSpec(
    enum_name=PREFIX + "SPLIT",
    summary="Splits an input tensor along an axis into multiple output tensors.",
    formula=("OutputTensors[0]: (Sizes:{1, 1, 2, 2}, DataType:FLOAT32)\n"
             "(the page's Example 1: {1,1,6,2} split along Axis 2 into {1,1,2,2}, {1,1,1,2} and {1,1,3,2}, "
             "in order)"),
    tensors=(TensorSpec("InputTensor", "input"),
             TensorSpec("OutputTensors", "output", count="OutputCount", sizes_arg=True)),
    support=(
        table("4.1", InputTensor=("1 to 8", _ALL), OutputTensors=("1 to 8", _ALL)),
        table("3.0", InputTensor=("1 to 8", _THREE), OutputTensors=("1 to 8", _THREE)),
        table("2.1", InputTensor=("4", _THREE), OutputTensors=("4", _THREE)),
        table("1.0", InputTensor=("4", _ONE), OutputTensors=("4", _ONE)),
    ),
    params=(ParamSpec("Axis", "UINT", doc=("The index of the dimension of the input tensor to split; in the "
                                           "range [0, InputTensor.DimensionCount - 1].")),),
    constraints=(SameDataType(("InputTensor", "OutputTensors")),),
    math=False,
    gradient="dInputTensor = the outputs' dY joined along Axis (integer inputs: none).",
    notes=("The OutputTensors' Sizes are the caller's (outputs_sizes=, one tuple per output; the desc's "
           "OutputCount is their number): the same DimensionCount as the InputTensor, the same Sizes "
           "except along Axis, where they must add up to the InputTensor's (the outputs cover it exactly, "
           "in order: the page implies it, dmljax checks it). Returns a tuple of the outputs. Bit-exact "
           "data movement."),
    extra_checks=(_axis_and_sizes("InputTensor", "OutputTensors", "the range [0, InputTensor.DimensionCount - 1]",
                                  False),),
)


@operator(SPLIT)
def split(input, *, axis, outputs_sizes):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.arange(1, 13, dtype=np.float32).reshape(1, 1, 6, 2)  # the page's input
        >>> [o.shape for o in dmljax.split(x, axis=2, outputs_sizes=[(1, 1, 2, 2), (1, 1, 1, 2), (1, 1, 3, 2)])]
        [(1, 1, 2, 2), (1, 1, 1, 2), (1, 1, 3, 2)]
        >>> dmljax.split(x, axis=3, outputs_sizes=[(1, 1, 6, 1)] * 2)[1].ravel()
        Array([ 2.,  4.,  6.,  8., 10., 12.], dtype=float32)
    """
    out, start = [], 0
    for sizes in outputs_sizes:
        out.append(lax.slice_in_dim(input, start, start + sizes[axis], axis=axis))
        start += sizes[axis]
    return tuple(out)
