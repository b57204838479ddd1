"""SPACE_TO_DEPTH, SPACE_TO_DEPTH1, DEPTH_TO_SPACE and DEPTH_TO_SPACE1, of the data_movement family:
each page's record, with one rearrangement below them for both directions and both
DML_DEPTH_SPACE_ORDERs."""

from __future__ import annotations

from dmljax._src.catalog import PREFIX
from dmljax._src.dtypes import (
    FLOAT32_FLOAT16, FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8,
    FLOAT64_FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8,
)
from dmljax._src.enums import DepthSpaceOrder
from dmljax._src.errors import Violation
from dmljax._src.op import operator
from dmljax._src.spec import OpSpec, ParamSpec, SameDataType, SilentChoice, TensorSpec, table
from dmljax._src.validate import TensorInfo

_ALL = FLOAT64_FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8
_THREE = FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8


def depth_to_space_nchw(x, b: int, order: DepthSpaceOrder):
    """{N, C, H, W} -> {N, C / b^2, H b, W b}. DEPTH_COLUMN_ROW reads the channels as
    (BlockHeight, BlockWidth, Channels), COLUMN_ROW_DEPTH as (Channels, BlockHeight, BlockWidth);
    the space side is (Height, BlockHeight), (Width, BlockWidth) in both (DML_DEPTH_SPACE_ORDER)."""
    n, c, h, w = x.shape
    c2 = c // (b * b)
    if order is DepthSpaceOrder.DEPTH_COLUMN_ROW:
        y = x.reshape(n, b, b, c2, h, w).transpose(0, 3, 4, 1, 5, 2)
    else:
        y = x.reshape(n, c2, b, b, h, w).transpose(0, 1, 4, 2, 5, 3)
    return y.reshape(n, c2, h * b, w * b)


def space_to_depth_nchw(x, b: int, order: DepthSpaceOrder):
    """The inverse: {N, C, H, W} -> {N, C b^2, H / b, W / b}."""
    n, c, h, w = x.shape
    y = x.reshape(n, c, h // b, b, w // b, b)  # N, C, H', bh, W', bw
    if order is DepthSpaceOrder.DEPTH_COLUMN_ROW:
        y = y.transpose(0, 3, 5, 1, 2, 4)  # N, bh, bw, C, H', W'
    else:
        y = y.transpose(0, 1, 3, 5, 2, 4)  # N, C, bh, bw, H', W'
    return y.reshape(n, c * b * b, h // b, w // b)


def _checks(to_space: bool):
    def check(tensors, attrs, level) -> list[Violation]:
        """BlockSize at least 1; DEPTH_TO_SPACE: the channels a multiple of BlockSize^2; SPACE_TO_DEPTH:
        the height and width multiples of BlockSize (the output sizes' formulas divide by them)."""
        x, b = tensors.get("InputTensor"), attrs.get("BlockSize")
        if x is None or b is None or len(x.shape) != 4:
            return []
        if b < 1:
            return [Violation("BlockSize", "block_size", f"is {b}", "at least 1")]
        _, c, h, w = x.shape
        if to_space and c % (b * b):
            return [Violation("InputTensor", "input", f"has {c} channels (Sizes {list(x.shape)})",
                              f"a multiple of BlockSize * BlockSize ({b * b})")]
        bad = [(name, s) for name, s in (("height", h), ("width", w)) if s % b]
        return [Violation("InputTensor", "input", f"has {name} {s} (Sizes {list(x.shape)})",
                          f"a multiple of BlockSize ({b})") for name, s in bad] if not to_space else []
    return check


def _shape(to_space: bool):
    def infer(tensors, attrs, problems) -> dict:
        x, b = tensors["InputTensor"], attrs["BlockSize"]
        n, c, h, w = x.shape
        shape = (n, c // (b * b), h * b, w * b) if to_space else (n, c * b * b, h // b, w // b)
        return {"OutputTensor": TensorInfo(shape, x.data_type)}
    return infer


def _record(short: str, to_space: bool, formula: str, ordered: bool, silent: tuple = ()) -> OpSpec:
    support = [table("5.0", InputTensor=("4", _ALL), OutputTensor=("4", _ALL)),
               table("2.1", InputTensor=("4", _THREE), OutputTensor=("4", _THREE))]
    if not ordered:
        support.append(table("1.0", InputTensor=("4", FLOAT32_FLOAT16), OutputTensor=("4", FLOAT32_FLOAT16)))
    params = (ParamSpec("BlockSize", "UINT", doc="The width and height of the blocks that are moved."),)
    if ordered:
        params += (ParamSpec("Order", "DML_DEPTH_SPACE_ORDER", enum=DepthSpaceOrder,
                             doc=("DEPTH_COLUMN_ROW: the channels read as (BlockHeight, BlockWidth, Channels); "
                                  "COLUMN_ROW_DEPTH: as (Channels, BlockHeight, BlockWidth) (required: the page "
                                  "gives no default).")),)
    summary = ("Rearranges (permutes) data from depth into blocks of spatial data. The operator outputs a copy "
               "of the input tensor where values from the depth dimension are moved in spatial blocks to the "
               "height and width dimensions." if to_space else
               "Rearranges blocks of spatial data into depth. The operator outputs a copy of the input tensor "
               "where values from the height and width dimensions are moved to the depth dimension.")
    return OpSpec(
        enum_name=PREFIX + short,
        summary=summary,
        formula=formula,
        tensors=(TensorSpec("InputTensor", "input"), TensorSpec("OutputTensor", "output")),
        support=tuple(support),
        params=params,
        constraints=(SameDataType(("InputTensor", "OutputTensor")),),
        math=False,
        gradient=("dInput = dY rearranged back (the permutation's inverse, "
                  f"{'SPACE_TO_DEPTH' if to_space else 'DEPTH_TO_SPACE'} with the same order); integer inputs: none."),
        notes=(("The channels must be a multiple of BlockSize^2" if to_space else
                "The height and width must be multiples of BlockSize") + " (the output Sizes' formulas divide by "
               "them; dmljax refuses the rest rather than drop elements)." +
               ("" if ordered else " The same rearrangement as the *1 operator with Order DEPTH_COLUMN_ROW (the "
                "pages' first examples agree).") +
               (" The SPACE_TO_DEPTH pages give DEPTH_TO_SPACE's OutputTensor formula, {Batch, Channels / "
                "(BlockSize * BlockSize), Height * BlockSize, Width * BlockSize}; their examples ({1, 2, 4, 6} to "
                "{1, 8, 2, 3}) and the operator's name give the inverse, which dmljax follows." if not to_space else "")
               + " Bit-exact data movement."),
        extra_checks=(_checks(to_space),),
        infer_outputs=_shape(to_space),
        silent=silent,
    )


DEPTH_TO_SPACE = _record("DEPTH_TO_SPACE", True, (
    "OutputTensor: (Sizes:{1, 2, 4, 6}, DataType:UINT32)\n(the page's example: {1, 8, 2, 3} with BlockSize 2 "
    "gives {1, 2, 4, 6}: channel (bh * 2 + bw) * 2 + c of the input fills column w * 2 + bw of row h * 2 + bh of "
    "output channel c)"), False)
DEPTH_TO_SPACE1 = _record("DEPTH_TO_SPACE1", True, (
    "Order: DML_DEPTH_SPACE_ORDER_DEPTH_COLUMN_ROW\n(the page's Example 1; COLUMN_ROW_DEPTH reads the input "
    "channels as (c, bh, bw) instead of (bh, bw, c))"), True)
SPACE_TO_DEPTH = _record("SPACE_TO_DEPTH", False, (
    "OutputTensor: (Sizes:{1, 8, 2, 3}, DataType:UINT32)\n(the page's example: {1, 2, 4, 6} with BlockSize 2 "
    "gives {1, 8, 2, 3}, DEPTH_TO_SPACE's inverse)"), False,
    silent=(
        SilentChoice(
            "SPACE_TO_DEPTH / DEPTH_TO_SPACE sizes",
            "channels a multiple of BlockSize^2 (to space), height and width multiples of BlockSize (to "
            "depth), refused otherwise; the *1 forms' Order required",
            "The output Sizes' formulas divide by them (the rest would be dropped); the page gives no default "
            "Order. The SPACE_TO_DEPTH pages' OutputTensor formula is DEPTH_TO_SPACE's; their examples give "
            "the inverse, which dmljax follows.",
            also=("DEPTH_TO_SPACE", "SPACE_TO_DEPTH1", "DEPTH_TO_SPACE1")),
    ),
)
SPACE_TO_DEPTH1 = _record("SPACE_TO_DEPTH1", False, (
    "Order: DML_DEPTH_SPACE_ORDER_COLUMN_ROW_DEPTH\n(the page's Example 2; DEPTH_COLUMN_ROW, Example 1, writes "
    "the output channels as (bh, bw, c))"), True)


@operator(DEPTH_TO_SPACE)
def depth_to_space(input, *, block_size):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.arange(8, dtype=np.uint32).reshape(1, 4, 1, 2)
        >>> dmljax.depth_to_space(x, block_size=2)[0, 0]
        Array([[0, 2, 1, 3],
               [4, 6, 5, 7]], dtype=uint32)
    """
    return depth_to_space_nchw(input, block_size, DepthSpaceOrder.DEPTH_COLUMN_ROW)


@operator(DEPTH_TO_SPACE1)
def depth_to_space1(input, *, block_size, order):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.arange(8, dtype=np.uint32).reshape(1, 4, 1, 2)
        >>> dmljax.depth_to_space1(x, block_size=2, order="COLUMN_ROW_DEPTH")[0, 0]
        Array([[0, 2, 1, 3],
               [4, 6, 5, 7]], dtype=uint32)
    """
    return depth_to_space_nchw(input, block_size, order)


@operator(SPACE_TO_DEPTH)
def space_to_depth(input, *, block_size):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.arange(8, dtype=np.uint32).reshape(1, 1, 2, 4)
        >>> dmljax.space_to_depth(x, block_size=2)[0, :, 0]
        Array([[0, 2],
               [1, 3],
               [4, 6],
               [5, 7]], dtype=uint32)
    """
    return space_to_depth_nchw(input, block_size, DepthSpaceOrder.DEPTH_COLUMN_ROW)


@operator(SPACE_TO_DEPTH1)
def space_to_depth1(input, *, block_size, order):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.arange(16, dtype=np.uint32).reshape(1, 4, 2, 2)
        >>> y = dmljax.depth_to_space1(x, block_size=2, order="COLUMN_ROW_DEPTH")
        >>> bool((dmljax.space_to_depth1(y, block_size=2, order="COLUMN_ROW_DEPTH") == x).all())
        True
    """
    return space_to_depth_nchw(input, block_size, order)
