"""CUMULATIVE_SUMMATION and CUMULATIVE_PRODUCT (running tallies along one axis), of the reduction
family: each page's record, with one formula for both below them."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from dmljax._src.derivatives import backward_rule
from dmljax._src.dtypes import FLOAT32_FLOAT16_INT32_UINT32, FLOAT32_FLOAT16_INT64_INT32_UINT64_UINT32, DataType
from dmljax._src.enums import AxisDirection
from dmljax._src.errors import Violation
from dmljax._src.kernel_seam import choose
from dmljax._src.kernels.cumulative import (
    CUMULATIVE_PRODUCT_ROWS, CUMULATIVE_SUMMATION_ROWS, product_rows, scan_rows,
)
from dmljax._src.numerics import associative_scan, load, mark_flushed, store
from dmljax._src.op import operator
from dmljax._src.ops.factories import unary_op
from dmljax._src.partition import along_leading_axes
from dmljax._src.spec import ParamSpec, SilentChoice

F32, F16 = DataType.FLOAT32, DataType.FLOAT16


def _axis_in_range(tensors, attrs, level) -> list[Violation]:
    """Axis: "This value must be less than the DimensionCount of the InputTensor"."""
    axis, info = attrs.get("Axis"), tensors.get("InputTensor")
    if axis is None or info is None or axis < len(info.shape):
        return []
    n = len(info.shape)
    return [Violation("Axis", "axis", f"is {axis} for a {n}-dimensional InputTensor",
                      f"less than the DimensionCount ({n}): 0 to {n - 1}")]


def _growth(sizes, attrs):
    """A running tally of n terms has a relative error of at most about n rounding units (FLOAT32),
    n / 2^13 FLOAT16 ULP when computed in FLOAT32, n FLOAT16 ULP in FLOAT16 arithmetic."""
    axis = attrs.get("Axis")
    n = sizes[axis] if axis is not None and axis < len(sizes) else (max(sizes) if sizes else 1)
    return {F32: n, F16: math.ceil(n / 8192), "half": n}


def _params(what: str, exclusive: str):
    return (
        ParamSpec("Axis", "UINT", doc=(f"The index of the dimension to {what} elements over. This value "
                                       "must be less than the DimensionCount of the InputTensor.")),
        ParamSpec("AxisDirection", "DML_AXIS_DIRECTION", default=AxisDirection.INCREASING, enum=AxisDirection,
                  doc=("INCREASING: the tally traverses the axis by ascending index; DECREASING: by "
                       "descending index (default INCREASING, the enum's 0).")),
        ParamSpec("HasExclusive" + exclusive, "BOOL", default=False,
                  doc=("If True, the value of the current element is excluded when writing the running "
                       "tally to the output tensor (default False).")),
    )


_NOTES = (
    "Floats: read as math reads them (FLOAT32 denormals as zero; FLOAT16 in FLOAT32 unless "
    "allow_half_precision_computation), tallied in that type and rounded once per output "
    "element. DirectML does not document the order of the additions or multiplications "
    "(docs/semantics.md#accumulating-operators): the budget grows with the axis length n (n FLOAT32 ULP, n / 8192 FLOAT16 "
    "ULP){magnitude}. The exclusive tally starts from {identity} and never includes the last "
    "element (the page's example). Integers: exact, in the tensor's type, wrapping around as "
    "two's complement ({op} of INT32 values past 2^31 wraps). AxisDirection defaults to INCREASING "
    "and HasExclusive{exclusive} to False (a zero-initialized desc's values); Axis is required.")


def _exponents_apart(v, axis: int, reverse: bool):
    """The running product of FLOAT32 values with mantissas and exponents multiplied apart
    (frexp, an associative scan of (mantissa, exponent) pairs, ldexp): no partial product can
    overflow or vanish, whatever order the scan combines them in; zeros keep their signs
    (numerics.associative_scan)."""
    m, e = jnp.frexp(v)

    def combine(a, b):
        mm, ee = jnp.frexp(a[0] * b[0])
        return mm, jnp.clip(a[1] + b[1] + ee.astype(np.int32), -(1 << 20), 1 << 20)

    mr, er = associative_scan(combine, (m, e.astype(np.int32)), reverse=reverse, axis=axis)
    return jnp.ldexp(mr, er)


def _running_product(v, axis: int, reverse: bool):
    """XLA's product scan, which reassociates: a partial product of terms whose prefix is in range
    can overflow (the H100 gave inf for a prefix of 1.4e38 with a 3e38 among the terms) or vanish.
    Such a result is inf, 0 or NaN where no term is: then (only then, a lax.cond) the whole scan
    is redone with the exponents apart."""
    y = lax.cumprod(v, axis=axis, reverse=reverse)
    if v.dtype != np.float32:
        return y
    # The first wrong element of a row follows a right one, whose product with the next term is
    # then finite and non-zero where the wrong one is 0, inf or NaN: one element-wise pass finds it.
    step = _shifted(y, axis, reverse, 1) * v
    odd = (y == 0) | ~jnp.isfinite(y)
    first_wrong = odd & (step != 0) & jnp.isfinite(step)
    # and after a true overflow (or underflow) a prefix can come back into range, which a plain
    # product never does: a row without a 0, inf or NaN term but with such an output is redone
    plain_row = ~jnp.any((v == 0) | ~jnp.isfinite(v), axis=axis) & jnp.any(odd, axis=axis)
    suspect = jnp.any(first_wrong) | jnp.any(plain_row)
    return lax.cond(suspect, lambda t: _exponents_apart(t, axis, reverse), lambda t: y, v)


# The CPU's running product: FLOAT64 products of blocks of _BLOCK terms (no partial product of up
# to 8 flushed FLOAT32 terms leaves FLOAT64's normal range, 2^-1008 to 2^1024), the blocks' totals
# carried as (mantissa, exponent) pairs, whose mantissa products are renormalized every _GROUP
# blocks. One pass over the input finds the totals, a second writes every element: 0.9-1.3x
# jnp.cumprod's time at 1,024 x 1,024 (benchmarks/results/cpu/twins), where the FLOAT32 scan, its
# check and the redo with exponents apart that the check ordered for rows of normal random values
# (their prefixes leave FLOAT32's range and come back) took 5x.
_BLOCK = 8
_GROUP = 256


def _power_of_two(k):
    """2^k as FLOAT64, k an integer array within [-1022, 1023], from the bits (exact)."""
    return lax.bitcast_convert_type(lax.shift_left((k + 1023).astype(np.int64), np.int64(52)), np.float64)


def _padded(x, axis: int, size: int, value):
    """x with ``value`` appended along ``axis`` up to ``size``."""
    n = x.shape[axis]
    if n == size:
        return x
    config = [(0, 0, 0)] * x.ndim
    config[axis] = (0, size - n, 0)
    return lax.pad(x, np.asarray(value, x.dtype), config)


def _shifted(x, axis: int, reverse: bool, identity):
    """The exclusive tally from an inclusive one: x moved one step along ``axis`` in the tally's
    direction, ``identity`` first."""
    n = x.shape[axis]
    first = jnp.full_like(lax.slice_in_dim(x, 0, 1, axis=axis), identity)
    if reverse:
        return lax.concatenate([lax.slice_in_dim(x, 1, n, axis=axis), first], axis)
    return lax.concatenate([first, lax.slice_in_dim(x, 0, n - 1, axis=axis)], axis)


def _pair_prefix(m, e, axis: int, reverse: bool):
    """The inclusive running product of the values m * 2^e (FLOAT64 mantissas in [1/2, 1), or 0,
    inf or NaN with e = 0; INT32 exponents) along ``axis``, as (mantissa, exponent): a mantissa
    in [2^-_GROUP, 1) (or 0, inf, NaN), so that no product leaves FLOAT64's range. Up to _GROUP
    terms, a plain product of the mantissas; longer, groups of _GROUP whose totals are
    renormalized (frexp) and tallied the same way. Exponents saturate at +-2^20, far beyond any
    FLOAT32 result (as the exponents-apart scan's do)."""
    n = m.shape[axis]
    if n <= _GROUP:
        return lax.cumprod(m, axis=axis, reverse=reverse), lax.cumsum(e, axis=axis, reverse=reverse)
    groups = -(-n // _GROUP)
    shape = m.shape[:axis] + (groups, _GROUP) + m.shape[axis + 1:]
    gm = _padded(m, axis, groups * _GROUP, 1.0).reshape(shape)
    ge = _padded(e, axis, groups * _GROUP, 0).reshape(shape)
    im = lax.cumprod(gm, axis=axis + 1, reverse=reverse)
    ie = lax.cumsum(ge, axis=axis + 1, reverse=reverse)
    last = 0 if reverse else _GROUP - 1
    tm, tx = jnp.frexp(lax.index_in_dim(im, last, axis + 1, keepdims=False))
    te = jnp.clip(lax.index_in_dim(ie, last, axis + 1, keepdims=False) + tx, -(1 << 20), 1 << 20)
    pm, pe = _pair_prefix(tm, te, axis, reverse)
    pm, pe = _shifted(pm, axis, reverse, 1.0), _shifted(pe, axis, reverse, 0)
    rm, rx = jnp.frexp(im * jnp.expand_dims(pm, axis + 1))
    re = jnp.clip(ie + jnp.expand_dims(pe, axis + 1) + rx, -(1 << 20), 1 << 20)
    out = (rm.reshape(m.shape[:axis] + (groups * _GROUP,) + m.shape[axis + 1:]),
           re.reshape(rm.shape[:axis] + (groups * _GROUP,) + m.shape[axis + 1:]))
    return tuple(lax.slice_in_dim(o, 0, n, axis=axis) for o in out)


def _product_in_blocks(v, axis: int, reverse: bool, exclusive: bool):
    """The running product of FLOAT32 ``v`` (flushed) along ``axis`` (exclusive: of the terms
    before each), rounded once to FLOAT32 from FLOAT64: finite wherever the prefix's value is, as
    the exponents-apart scan, with every partial product in FLOAT64's range by construction.

    Each block of _BLOCK terms is multiplied out term by term in FLOAT64 (within 2^-1008 to
    2^1024: exact range); the blocks' totals, as FLOAT64 (mantissa, exponent) pairs, are tallied
    by ``_pair_prefix`` (mantissas down to 2^-256); an element is its block's partial product
    times the previous blocks' tally, s = M * 2^c1 with c1 = clip(E, -500, 500) (within 2^-756 to
    2^500), times 2^c2 for the rest of the exponent: each step moves toward the result, so a
    step leaves FLOAT64's range only where the result is beyond FLOAT32's on that side. The
    roundings (under n FLOAT64 ones) stay far below a FLOAT32 unit. Zeros keep their signs (IEEE
    products), an inf times a zero is NaN, NaN stays."""
    n = v.shape[axis]
    blocks = -(-n // _BLOCK)
    with jax.enable_x64(True):
        w = _padded(lax.convert_element_type(v, np.float64), axis, blocks * _BLOCK, 1.0)
        w = w.reshape(v.shape[:axis] + (blocks, _BLOCK) + v.shape[axis + 1:])
        terms = [lax.index_in_dim(w, k, axis + 1, keepdims=False) for k in range(_BLOCK)]
        if reverse:
            terms = terms[::-1]
        partial, run = [], None
        for t in terms:  # the block's tally, term by term
            if exclusive:
                partial.append(jnp.ones_like(t) if run is None else run)
            run = t if run is None else run * t
            if not exclusive:
                partial.append(run)
        if reverse:
            partial = partial[::-1]
        y = jnp.stack(partial, axis + 1)
        if blocks > 1:
            # the blocks' totals as a reduction, which XLA keeps in memory: the last partial
            # product, fused, was computed from the input once for the mantissas and once more
            # for the exponents
            m, e = jnp.frexp(jnp.prod(w, axis=axis + 1))
            pm, pe = _pair_prefix(m, e.astype(np.int32), axis, reverse)
            pm, pe = _shifted(pm, axis, reverse, 1.0), _shifted(pe, axis, reverse, 0)
            c1 = jnp.clip(pe, -500, 500)
            c2 = jnp.clip(pe - c1, -1000, 1000)
            scale = jnp.expand_dims(pm * _power_of_two(c1), axis + 1)
            y = y * scale * jnp.expand_dims(_power_of_two(c2), axis + 1)
        y = y.reshape(v.shape[:axis] + (blocks * _BLOCK,) + v.shape[axis + 1:])
        y = lax.slice_in_dim(y, 0, n, axis=axis)
    return lax.convert_element_type(y, np.float32)


def _partitioned_product(v, axis: int, reverse: bool):
    """``_running_product``, split over the devices along the axes before ``axis`` of a sharded
    input: each device runs its own rows' overflow test (the lax.cond), instead of an all-reduce
    of one test for the whole tensor (both give the same products)."""
    def run(u):
        return _running_product(u, axis=axis, reverse=reverse)
    return along_leading_axes(run, axis)(v) if axis else run(v)


def tally(x, axis: int, reverse: bool, exclusive: bool, product: bool, half: bool):
    """The running sum (or product) of ``x`` along ``axis`` under DirectML's rules."""
    dt = DataType.from_dtype(x.dtype)
    scan = (_partitioned_product if not dt.is_integer else lax.cumprod) if product else lax.cumsum

    def core(v, rev=reverse):
        y = scan(v, axis=axis, reverse=rev)
        return _shifted(y, axis, rev, 1 if product else 0) if exclusive else y  # reverse: of i+1 .. n-1

    if dt.is_integer:
        return core(x)
    # rows on a GPU: a kernel's scan (a sum, or a product of (mantissa, exponent) pairs)
    route = choose(CUMULATIVE_PRODUCT_ROWS if product else CUMULATIVE_SUMMATION_ROWS,
                   facts=(x.shape, axis, x.dtype, half))
    rows = product_rows if product else scan_rows

    def tallied(v, rev):
        if not product or v.dtype != np.float32:
            return core(v, rev)
        # the CPU's product in FLOAT64 blocks (_product_in_blocks); elsewhere the FLOAT32 scan
        return lax.platform_dependent(v, cpu=lambda t: _product_in_blocks(t, axis, rev, exclusive),
                                      default=lambda t: core(t, rev))

    def summed(v, rev):
        """The tally of v (the tensor's type), read, tallied and rounded as the rules say."""
        def xla(u):
            # a running sum of flushed terms: its first element is a flushed term, the others sums,
            # which the CPU's processor flushes (numerics.store's float_result)
            return store(tallied(load(u, half), rev), DataType.from_dtype(u.dtype), float_result=not product)
        return route.run(xla, lambda u: rows(u, rev, exclusive), v, lead=axis)

    def run(v):
        return summed(v, reverse)

    def run_fwd(v):
        return run(v), v

    def run_bwd(v, dy):
        # The transpose of the tally (a tally of dY the other way, shifted), from the same
        # compute type, rounded once; products by jax.vjp of the product scan (zeros included).
        if not product:
            return (summed(dy, not reverse),)
        _, vjp = jax.vjp(core, load(v, half))
        return (store(vjp(load(dy, half).astype(load(v, half).dtype))[0], DataType.from_dtype(dy.dtype)),)

    run = backward_rule(run, run_fwd, run_bwd)
    out = run(x)
    if dt is F32:
        mark_flushed(out)
    return out


# --------------------------------------------------------------------------------------------
CUMULATIVE_SUMMATION = unary_op(
    "CUMULATIVE_SUMMATION",
    summary=("Sums the elements of a tensor along an axis, writing the running tally of the "
             "summation into the output tensor."),
    formula=("[[[[2,  3,  6, 11],     // i.e. [2, 2+1, 2+1+3, 2+1+3+5]\n"
             "(the page's Example 1: the running sum along Axis 3 of [2, 1, 3, 5]; exclusive: [0, 2, 3, 6])"),
    params=_params("sum", "Sum"),
    support=(
        ("5.0", "1 to 8", FLOAT32_FLOAT16_INT64_INT32_UINT64_UINT32),
        ("4.0", "1 to 8", FLOAT32_FLOAT16_INT32_UINT32),
        ("2.1", "4", FLOAT32_FLOAT16_INT32_UINT32),
    ),
    ulp={F32: 2, F16: 1},
    ulp_half=2,
    ulp_growth=_growth,
    gradient=("dX = the tally of dY in the other direction (exclusive: shifted the same way), "
              "computed in the compute type and rounded once; integer inputs: no gradient."),
    notes=_NOTES.format(magnitude=", counted in ULP of the running sum of |x| (a running sum "
                                  "that cancels keeps the terms' absolute error)",
                        identity="0", exclusive="Sum", op="a sum"),
    extra_checks=(_axis_in_range,),
    silent=(
        SilentChoice(
            "CUMULATIVE_SUMMATION / CUMULATIVE_PRODUCT over rows on a GPU",
            "a Pallas kernel reading each row once, for power-of-two rows of 16 to 2^20 along the last axis "
            "(FLOAT32, FLOAT16 in FLOAT32), every direction and exclusivity, Triton's scan run either way "
            "along the row; rows longer than a block walked block by block with the tally carried and the next "
            "block read ahead; the product as (mantissa, exponent) pairs, long rows by sub-blocks of 64 whose "
            "mantissas are multiplied as plain floats and whose totals are pair-scanned; elsewhere XLA's scan",
            "The same rule (summed or multiplied in FLOAT32, rounded once; no partial product overflows or "
            "vanishes); only the order of the operations differs, within the budget (checked compiled on the "
            "H100, `tests/gpu/kernels.py`).",
            also=("CUMULATIVE_PRODUCT",)),
        SilentChoice(
            "CUMULATIVE_SUMMATION / CUMULATIVE_PRODUCT's AxisDirection and HasExclusive*",
            "default INCREASING and False (a zero-initialized desc's values); Axis is required",
            "The pages give no default.",
            also=("CUMULATIVE_PRODUCT",)),
        SilentChoice(
            "CUMULATIVE_* on integers",
            "exact, wrapping around in the tensor's type",
            "As ADD and MULTIPLY.",
            also=("CUMULATIVE_PRODUCT",)),
        SilentChoice(
            "CUMULATIVE_* budgets",
            "2 ULP + n ULP (FLOAT32) or 1 ULP + n / 8192 ULP (FLOAT16) for an axis of n; the sum's counted in "
            "ULP of the running sum of |x|",
            "DirectML leaves the order of the additions open ([Accumulating "
            "operators](semantics.md#accumulating-operators)); a running sum that cancels keeps its terms' "
            "absolute error.",
            also=("CUMULATIVE_PRODUCT",)),
    ),
)


@operator(CUMULATIVE_SUMMATION)
def cumulative_summation(input, *, axis, axis_direction, has_exclusive_sum, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.array([[[[2, 1, 3, 5], [3, 8, 7, 3], [9, 6, 2, 4]]]], np.float32)
        >>> dmljax.cumulative_summation(x, axis=3)[0, 0]
        Array([[ 2.,  3.,  6., 11.],
               [ 3., 11., 18., 21.],
               [ 9., 15., 17., 21.]], dtype=float32)
        >>> dmljax.cumulative_summation(x, axis=3, has_exclusive_sum=True)[0, 0, 0]
        Array([0., 2., 3., 6.], dtype=float32)
    """
    return tally(input, axis, axis_direction == AxisDirection.DECREASING, has_exclusive_sum, False,
                 allow_half_precision_computation)


CUMULATIVE_PRODUCT = unary_op(
    "CUMULATIVE_PRODUCT",
    summary=("Multiplies the elements of a tensor along an axis, writing the running tally of the "
             "product into the output tensor."),
    formula=("[[[[2,  2,   6,  30],       // i.e. [2, 2*1, 2*1*3, 2*1*3*5]\n"
             "(the page's Example 1: the running product along Axis 3 of [2, 1, 3, 5]; exclusive: [1, 2, 2, 6])"),
    params=_params("multiply", "Product"),
    support=(
        ("5.0", "1 to 8", FLOAT32_FLOAT16_INT64_INT32_UINT64_UINT32),
        ("4.0", "1 to 8", FLOAT32_FLOAT16_INT32_UINT32),
        ("3.1", "4", FLOAT32_FLOAT16_INT32_UINT32),
    ),
    ulp={F32: 2, F16: 1},
    ulp_half=2,
    ulp_growth=_growth,
    gradient=("dX[k] = sum over the outputs i whose tally holds x[k] of dY[i] times the product of "
              "that tally's other factors (no division, so exact zeros are fine); integer inputs: "
              "no gradient."),
    notes=_NOTES.format(magnitude="", identity="1", exclusive="Product", op="a product") + (
        " A running product is finite wherever its prefix's value is: XLA's scan reassociates "
        "the product, and a partial product can overflow or vanish where the prefix does not; when "
        "an element is 0, inf or NaN where the previous one times its term is not, or in a row "
        "without a 0, inf or NaN term, the scan is redone with mantissas and exponents multiplied "
        "apart (the check is one element-wise pass; a row with a 0, inf or NaN term whose prefix "
        "overflows for real and then comes back into range before that term keeps the plain "
        "product's inf). On the CPU the product is taken in FLOAT64 instead, blocks of 8 terms "
        "multiplied out and the blocks' totals carried as (mantissa, exponent) pairs: no partial "
        "product leaves the range, nothing is checked or redone, and every prefix in FLOAT32's "
        "range is its value there (one FLOAT32 rounding). On an NVIDIA GPU, FLOAT32 and FLOAT16 rows along the last axis (lengths "
        "a power of two from 16 to 2^20, at least 1,024 elements a program) take a kernel that scans (mantissa, exponent) pairs in "
        "one pass: no partial product leaves the range, and such a prefix is its value there too."),
    extra_checks=(_axis_in_range,),
    silent=(
        SilentChoice(
            "CUMULATIVE_PRODUCT's gradient with zeros",
            "the product of the other factors (no division)",
            "Exact at zeros, where x / x_k would be NaN."),
        SilentChoice(
            "CUMULATIVE_PRODUCT's zeros",
            "the sign of the product of the terms (IEEE), -0.0 included, on every path",
            "As float64's cumprod. JAX's associative scan interleaves partial results by adding zero-padded "
            "arrays (-0.0 + 0.0 = +0.0): dmljax's scans carry float operands as their bits instead."),
        SilentChoice(
            "CUMULATIVE_PRODUCT's partial products",
            "a product is finite wherever its prefix's value is: a 0, inf or NaN that the previous element "
            "times its term does not give (or in a row without such terms) makes the scan redo itself with "
            "exponents apart; on the CPU, FLOAT64 products of blocks of 8 terms whose totals are carried as "
            "(mantissa, exponent) pairs, with no check",
            "XLA's scan reassociates: on the H100 a prefix of 1.4e38 came out inf. On the CPU the check and "
            "the redo it orders for rows of normal random values took 5x jnp.cumprod's time, the FLOAT64 "
            "blocks take 0.9-1.3x (benchmarks/results/cpu/twins)."),
    ),
)


@operator(CUMULATIVE_PRODUCT)
def cumulative_product(input, *, axis, axis_direction, has_exclusive_product, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.array([2, 4, 8, 3], np.float32)
        >>> dmljax.cumulative_product(x, axis=0)
        Array([  2.,   8.,  64., 192.], dtype=float32)
        >>> dmljax.cumulative_product(x, axis=0, axis_direction="DECREASING", has_exclusive_product=True)
        Array([96., 24.,  3.,  1.], dtype=float32)
    """
    return tally(input, axis, axis_direction == AxisDirection.DECREASING, has_exclusive_product, True,
                 allow_half_precision_computation)
