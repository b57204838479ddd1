"""REDUCE (every DML_REDUCE_FUNCTION), of the reduction family: the page's record, whose support
tables depend on the Function (``support_by``), with its formula below it."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from dmljax._src.catalog import PREFIX
from dmljax._src.derivatives import backward_rule
from dmljax._src.dtypes import (
    FLOAT32_FLOAT16, FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8, FLOAT32_FLOAT16_INT32_UINT32,
    FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8, FLOAT32_FLOAT16_INT64_INT32_UINT64_UINT32,
    INT64_INT32_UINT64_UINT32, UINT32, DataType,
)
from dmljax._src.enums import ReduceFunction as F
from dmljax._src.errors import Violation
from dmljax._src.kernel_seam import choose
from dmljax._src.kernels.extreme_columns import EXTREME_COLUMNS, max_key_columns
from dmljax._src.numerics import F32_TINY, flush_denormals, is_nan, load, mark_flushed, store
from dmljax._src.op import operator
from dmljax._src.partition import along_leading_axes
from dmljax._src.ops.factories import check_axes, first_in_groups
from dmljax._src.ops.reduction.arg_extreme import arg_extreme
from dmljax._src.ops.reduction.cumulative import _padded, _power_of_two
from dmljax._src.spec import INFERRED, OpSpec, ParamSpec, SilentChoice, SupportGroup, TensorSpec, table
from dmljax._src.validate import TensorInfo

F32, F16 = DataType.FLOAT32, DataType.FLOAT16
ARG = (F.ARGMAX, F.ARGMIN)


def _reduced(tensors, attrs, problems) -> dict:
    """"Sizes must match InputTensor.Sizes, except for dimensions included in the reduced Axes,
    which must be size 1"; "the input and output tensor data types must match except when using
    the ARGMAX and ARGMIN functions, which always output an integral data type" (UINT32 unless the
    caller chooses another that the table allows)."""
    x, chosen = tensors["InputTensor"], tensors.get("OutputTensor")
    f, axes = attrs["Function"], set(attrs["Axes"])
    shape = tuple(1 if i in axes else s for i, s in enumerate(x.shape))
    if f in ARG:
        return {"OutputTensor": TensorInfo(shape, chosen.data_type if chosen else DataType.UINT32)}
    if chosen is not None and chosen.data_type != x.data_type:
        problems.append(Violation(
            "OutputTensor", "output_data_type", f"is {chosen.data_type.name}",
            f"the InputTensor's DataType ({x.data_type.name}) with Function {f.name}",
            "only ARGMAX and ARGMIN output another DataType (their indices); leave output_data_type=None"))
    return {"OutputTensor": TensorInfo(shape, x.data_type)}


def _terms(sizes, attrs) -> int:
    axes = attrs.get("Axes") or ()
    return math.prod(sizes[a] for a in axes if isinstance(a, int) and 0 <= a < len(sizes)) or 1


def _growth(sizes, attrs):
    """A reduction of N terms (the product of the reduced axes' sizes): N rounding units relative
    to the terms' magnitude (the sum of |terms|: Reference.magnitude) in FLOAT32, N / 2^13 FLOAT16
    ULP when computed in FLOAT32, N FLOAT16 ULP in FLOAT16 arithmetic; a square root halves it.
    MAX, MIN, ARGMAX and ARGMIN are exact."""
    try:
        f = F.parse(attrs.get("Function"))
    except (ValueError, TypeError):
        return {}
    if f in ARG or f in (F.MAX, F.MIN):
        return {}
    n = _terms(sizes, attrs)
    if f is F.L2:
        n = math.ceil(n / 2)
    return {F32: n, F16: math.ceil(n / 8192), "half": n}


_ARG_TABLES = (
    table("4.1", InputTensor=("1 to 8", FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8),
          OutputTensor=("1 to 8", INT64_INT32_UINT64_UINT32)),
    table("3.0", InputTensor=("1 to 8", FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8),
          OutputTensor=("1 to 8", INT64_INT32_UINT64_UINT32)),
    table("2.1", InputTensor=("4", FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8), OutputTensor=("4", UINT32)),
    table("1.0", InputTensor=("4", FLOAT32_FLOAT16), OutputTensor=("4", UINT32)),
)
_FLOAT_TABLES = (
    table("3.0", InputTensor=("1 to 8", FLOAT32_FLOAT16), OutputTensor=("1 to 8", FLOAT32_FLOAT16)),
    table("1.0", InputTensor=("4", FLOAT32_FLOAT16), OutputTensor=("4", FLOAT32_FLOAT16)),
)
_L1_TABLES = (
    table("5.0", InputTensor=("1 to 8", FLOAT32_FLOAT16_INT64_INT32_UINT64_UINT32),
          OutputTensor=("1 to 8", FLOAT32_FLOAT16_INT64_INT32_UINT64_UINT32)),
    table("3.0", InputTensor=("1 to 8", FLOAT32_FLOAT16), OutputTensor=("1 to 8", FLOAT32_FLOAT16)),
    table("1.0", InputTensor=("4", FLOAT32_FLOAT16), OutputTensor=("4", FLOAT32_FLOAT16)),
)
_MAX_TABLES = (
    table("5.0", InputTensor=("1 to 8", FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8),
          OutputTensor=("1 to 8", FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8)),
    table("3.0", InputTensor=("1 to 8", FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8),
          OutputTensor=("1 to 8", FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8)),
    table("2.1", InputTensor=("4", FLOAT32_FLOAT16_INT32_UINT32), OutputTensor=("4", FLOAT32_FLOAT16_INT32_UINT32)),
    table("1.0", InputTensor=("4", FLOAT32_FLOAT16), OutputTensor=("4", FLOAT32_FLOAT16)),
)
_SUM_TABLES = (
    table("5.0", InputTensor=("1 to 8", FLOAT32_FLOAT16_INT64_INT32_UINT64_UINT32),
          OutputTensor=("1 to 8", FLOAT32_FLOAT16_INT64_INT32_UINT64_UINT32)),
    table("3.0", InputTensor=("1 to 8", FLOAT32_FLOAT16_INT32_UINT32), OutputTensor=("1 to 8", FLOAT32_FLOAT16_INT32_UINT32)),
    table("2.1", InputTensor=("4", FLOAT32_FLOAT16_INT32_UINT32), OutputTensor=("4", FLOAT32_FLOAT16_INT32_UINT32)),
    table("1.0", InputTensor=("4", FLOAT32_FLOAT16), OutputTensor=("4", FLOAT32_FLOAT16)),
)

REDUCE = OpSpec(
    enum_name=PREFIX + "REDUCE",
    summary=("Outputs the reduction of elements (sum, product, minimum, and so on) within one or more "
             "dimensions of the input tensor."),
    formula=("[[6,  // sum({1, 3, 2})\n"
             "(the page's Example 1: Function SUM over Axes {0} of [[1, 2, 3], [3, 0, 4], [2, 4, 2]] "
             "gives [[6, 6, 9]]; the functions: ARGMAX/ARGMIN the index of the first max/min, AVERAGE "
             "(x1 + ... + xn) / n, L1 |x1| + ... + |xn|, L2 sqrt(x1^2 + ... + xn^2), LOG_SUM "
             "log(x1 + ... + xn), LOG_SUM_EXP log(exp(x1) + ... + exp(xn)), MAX max(max(x1, x2), ...), "
             "MIN, MULTIPLY x1 * ... * xn, SUM x1 + ... + xn, SUM_SQUARE x1^2 + ... + xn^2)"),
    tensors=(TensorSpec("InputTensor", "input"),
             TensorSpec("OutputTensor", "output", default_data_type=INFERRED)),
    support_by="Function",
    groups=(
        SupportGroup("ARGMIN and ARGMAX", (F.ARGMIN, F.ARGMAX), _ARG_TABLES),
        SupportGroup("AVERAGE, L2, LOG_SUM, and LOG_SUM_EXP", (F.AVERAGE, F.L2, F.LOG_SUM, F.LOG_SUM_EXP),
                     _FLOAT_TABLES),
        SupportGroup("L1 and SUM_SQUARE", (F.L1, F.SUM_SQUARE), _L1_TABLES),
        SupportGroup("MIN and MAX", (F.MIN, F.MAX), _MAX_TABLES),
        SupportGroup("MULTIPLY and SUM", (F.MULTIPLY, F.SUM), _SUM_TABLES),
    ),
    params=(
        ParamSpec("Function", "DML_REDUCE_FUNCTION", enum=F,
                  doc="The reduction function to apply to the input (required: the page gives no default)."),
        ParamSpec("Axes", "UINT[]", count="AxisCount",
                  doc=("The axes along which to reduce. Values must be in the range [0, "
                       "InputTensor.DimensionCount - 1] (a tuple; a desc's AxisCount is its length).")),
    ),
    ulp={F32: 1, F16: 1},
    ulp_half=1,
    ulp_growth=_growth,
    gradient=(
        "The derivative of the function, computed in the compute type and rounded once: SUM dY; "
        "AVERAGE dY / N; L1 dY * sign(x) (0 at x = 0); SUM_SQUARE 2x * dY; L2 dY * x / L2 (0 where "
        "L2 = 0); MULTIPLY dY * the product of the other terms (zeros included); LOG_SUM dY / sum; "
        "LOG_SUM_EXP dY * exp(x - result) (0 where the result is not finite); MAX and MIN: dY to "
        "the element the page's fold max(max(x1, x2), x3)... keeps, the first extreme in row-major "
        "order of the reduced coordinates (a later equal value does not replace it, as "
        "ELEMENT_WISE_MAX's gradient at a tie). ARGMAX, ARGMIN and integer inputs: none."),
    notes=(
        ("The reduced axes are kept with size 1; an empty Axes or an axis named twice is refused (to reduce "
         "over every axis, name them all, as the page's Example 3). The OutputTensor has the InputTensor's "
         "DataType, except for ARGMAX and ARGMIN, whose indices are UINT32 unless output_data_type= chooses "
         "another type the table allows (INT64, INT32, UINT64 from DML_FEATURE_LEVEL_3_0). Floats are read as "
         "math reads them (FLOAT32 denormals as zero) and FLOAT16 is accumulated in FLOAT32 and rounded once, "
         "unless allow_half_precision_computation; DirectML does not document the order of accumulation, so "
         "the budget grows with the N reduced terms (docs/semantics.md#accumulating-operators), counted in ULP "
         "of the sum of |terms| where terms cancel. MAX and MIN follow ELEMENT_WISE_MAX/MIN: NaN is skipped "
         "(maxNum/minNum), a group of NaN gives NaN, a tie of zeros gives +0 (MAX) or -0 (MIN), exact. ARGMAX "
         "and ARGMIN give the first index of the extreme as the ARGMAX/ARGMIN operators do with AxisDirection "
         "INCREASING (NaN never wins; -0 ties with +0). LOG_SUM_EXP subtracts the maximum first, so it neither "
         "overflows nor underflows where the result is finite; all -inf gives -inf, a +inf gives +inf, a NaN "
         "NaN. LOG_SUM of a negative sum is NaN and of a zero sum -inf (log's own rules); L2 and SUM_SQUARE "
         "use the page's formula (squares that overflow give inf). MULTIPLY keeps the exponents apart while it "
         "multiplies (frexp/ldexp), so a product is finite wherever its value is, whatever the order of the "
         "terms (its gradient is jax's product rule, whose partial products can still overflow).")),
    extra_checks=(check_axes,),
    infer_outputs=_reduced,
    silent=(
        SilentChoice(
            "REDUCE's Function",
            "required",
            "The page gives no default (a zero-filled desc would mean ARGMAX, which FL 3.0 deprecated)."),
        SilentChoice(
            "REDUCE over no axes",
            "refused (`axes=()`), with the tip to name every axis for a whole-tensor reduction",
            "The page only shows reductions over named axes; ONNX reads empty axes as \"all\", DirectML's "
            "formula as \"each element alone\": a silent guess either way."),
        SilentChoice(
            "REDUCE's tables",
            "checked per Function group, as the page's \"Tensor support according to function\" (the error "
            "says \"supported with Function SUM\")",
            "The page gives five groups of tables; one union would accept INT8 SUM, which no table allows."),
        SilentChoice(
            "REDUCE's OutputTensor type",
            "the input's; ARGMAX/ARGMIN UINT32 unless `output_data_type=` chooses another the table allows",
            "\"The input and output tensor data types must match except when using the ARGMAX and ARGMIN "
            "functions\"."),
        SilentChoice(
            "REDUCE MAX / MIN",
            "the fold max(max(x1, x2), ...) of ELEMENT_WISE_MAX/MIN: NaN skipped (all NaN: NaN), +0 above -0, "
            "FLOAT32 denormals as zero, exact; gradient to the element the fold keeps (the first extreme)",
            "The page's formula is that fold; [Minimum and maximum](semantics.md#minimum-and-maximum) and "
            "[Accumulating operators](semantics.md#accumulating-operators)."),
        SilentChoice(
            "REDUCE LOG_SUM_EXP",
            "the maximum subtracted first: no overflow or underflow where the result is finite; all -inf gives "
            "-inf, a +inf +inf",
            "The mathematical limits of log(exp(x1) + ... + exp(xn))."),
        SilentChoice(
            "REDUCE MULTIPLY of floats",
            "exponents kept apart while multiplying (frexp/ldexp): finite wherever the product's value is, in "
            "any order",
            "Partial products of a plain product overflow in an order-dependent way: on the H100 2^16 terms "
            "gave 6.7e8 and on the CPU inf."),
        SilentChoice(
            "REDUCE accumulation",
            "FLOAT16 accumulated in FLOAT32 and rounded once; budget N ULP of the sum of |terms| (FLOAT16: N / "
            "8192 + 1)",
            "DirectML does not document the order ([Accumulating "
            "operators](semantics.md#accumulating-operators)); WebNN's budgets grow with N likewise."),
        SilentChoice(
            "REDUCE / CUMULATIVE integer SUM, MULTIPLY, L1, SUM_SQUARE",
            "exact in the tensor's type, wrapping around (|INT_MIN| is INT_MIN)",
            "Two's complement, as integer hardware stores it.",
            also=("CUMULATIVE_SUMMATION", "CUMULATIVE_PRODUCT")),
    ),
)


# --------------------------------------------------------------------------------------------
def _order_keys(x):
    """The (flushed) float's bits as an integer in the value's order, -0 just below +0 (so that
    MAX gives +0 and MIN -0 at a tie of zeros), NaN given the key that never wins for MAX (the
    int minimum; MIN uses the maximum). FLOAT16 is keyed through its exact FLOAT32 value."""
    f = flush_denormals(x) if x.dtype == np.float32 else x.astype(np.float32)  # FLOAT16's are normal in FLOAT32
    bits = lax.bitcast_convert_type(f, np.int32)
    return bits ^ (lax.shift_right_arithmetic(bits, np.int32(31)) & np.int32(0x7FFFFFFF))


def _from_keys(k, dtype):
    bits = k ^ (lax.shift_right_arithmetic(k, np.int32(31)) & np.int32(0x7FFFFFFF))  # its own inverse
    return lax.bitcast_convert_type(bits, np.float32).astype(dtype)


def _extreme_mask(keys, axes, larger: bool):
    """True at the first element (row-major over the reduced coordinates) whose key is the
    extreme: the element the fold max(max(x1, x2), x3)... keeps."""
    keep = tuple(a for a in range(keys.ndim) if a not in axes)
    moved = jnp.transpose(keys, keep + axes)
    flat = moved.reshape(moved.shape[:len(keep)] + (-1,))
    index = (lax.argmax if larger else lax.argmin)(flat, flat.ndim - 1, np.int32)
    hit = lax.broadcasted_iota(np.int32, flat.shape, flat.ndim - 1) == index[..., None]
    hit = hit.reshape(moved.shape)
    return jnp.transpose(hit, np.argsort(keep + axes))


def _extreme_mask_cpu(keys, axes, larger: bool):
    """``_extreme_mask`` in two plain reductions, without moving axes (for the CPU, where reduced
    axes other than the trailing ones made the transpose and the variadic argmax take 1.5 to 4
    times the time of jax's gradient of jnp.max; over trailing axes, with nothing to move, the
    argmax measured 0.7 times this): the extreme key, then the least row-major position over the
    reduced coordinates holding it."""
    extreme = (jnp.max if larger else jnp.min)(keys, axis=axes, keepdims=True)
    return first_in_groups(keys == extreme, axes)  # each group holds its extreme


def _by_leading_slices(fn, axes):
    """``fn``, a CPU form that branches on a test of the whole tensor (``lax.cond``), run on each
    device's slice of the axes before the first reduced one: sharded along them, the test and the
    branch stay local, where a whole-tensor test would all-reduce across devices."""
    lead = min(axes)
    return along_leading_axes(fn, lead) if lead else fn


def _max_min(x, axes, larger: bool):
    """MAX/MIN: exact, NaN skipped (a group of NaN: NaN), +0 above -0; the gradient goes to the
    element the fold keeps."""
    if not jnp.issubdtype(x.dtype, jnp.floating):
        return (jnp.max if larger else jnp.min)(x, axis=axes, keepdims=True)
    never = np.int32(np.iinfo(np.int32).min if larger else np.iinfo(np.int32).max)

    def keys_of(v):
        return jnp.where(is_nan(v), never, _order_keys(v))

    def xla_keys(v):
        return (jnp.max if larger else jnp.min)(keys_of(v), axis=axes, keepdims=True)

    def column_keys(v):  # the column kernel keeps the largest key: MIN's are complemented
        k = max_key_columns(v, axes[0], keys_of if larger else (lambda u: ~keys_of(u)))
        return k if larger else ~k

    def keyed(v):
        k = choose(EXTREME_COLUMNS, facts=(v.shape, tuple(axes), v.dtype)).run(  # FLOAT16 columns on a GPU
            xla_keys, column_keys, v, lead=min(axes))
        return jnp.where(k == never, jnp.asarray(np.nan, v.dtype), _from_keys(k, v.dtype))

    def cpu(v):
        # XLA's own maximum, in the CPU's vectorized reduction, where it gives the keyed result:
        # in a group holding no NaN (XLA's maximum there drops or keeps one depending on its
        # position) whose extreme is neither a zero nor a FLOAT32 denormal (the sign of a tie of
        # zeros is the order's). FLOAT32: a group's NaN shows in its sum (IEEE addition keeps a NaN
        # in any order), a second vectorized pass. FLOAT16 (whose sum is not vectorized): NaN made
        # +inf (MIN: -inf) in the extreme's own pass, so that a group with a NaN has an infinite
        # extreme, as one with a true +inf (-inf) has, and either doubts; a test of each element
        # of its own took 2.4x jnp.max's time, this 1.2x (FLOAT32's sum here: 1.3-1.4x either way).
        # Otherwise, anywhere in the tensor, the keyed fold (a branch taken at run time).
        if v.dtype == np.float32:
            m = (jnp.max if larger else jnp.min)(v, axis=axes, keepdims=True)
            far = jnp.isnan(jnp.sum(v, axis=axes, keepdims=True))
            small = np.asarray(F32_TINY, v.dtype)
        else:
            inf = np.asarray(np.inf if larger else -np.inf, v.dtype)
            m = (jnp.max if larger else jnp.min)(jnp.where(jnp.isnan(v), inf, v), axis=axes, keepdims=True)
            far = m == inf
            small = np.asarray(np.finfo(v.dtype).smallest_subnormal, v.dtype)  # its denormals are kept
        doubt = jnp.any(far | ~(jnp.abs(m) >= small))
        return lax.cond(doubt, keyed, lambda _: m, v)

    def run(v):
        return lax.platform_dependent(v, cpu=_by_leading_slices(cpu, axes), default=keyed)

    def fwd(v):
        return run(v), v

    def bwd(v, dy):
        k = keys_of(v)
        if axes == tuple(range(v.ndim - len(axes), v.ndim)):  # trailing: nothing to move
            mask = _extreme_mask(k, axes, larger)
        else:
            mask = lax.platform_dependent(k, cpu=lambda t: _extreme_mask_cpu(t, axes, larger),
                                          default=lambda t: _extreme_mask(t, axes, larger))
        return (jnp.where(mask, jnp.broadcast_to(dy, v.shape), jnp.zeros((), dy.dtype)),)

    run = backward_rule(run, fwd, bwd)
    out = run(x)
    if x.dtype == np.float32:
        mark_flushed(out)
    return out


_EXPONENT_CAP = 1 << 20  # far beyond any float's exponent range, far inside int32's


def _product(v, axes):
    """x1 * x2 * ... * xn of FLOAT32 values without intermediate overflow or underflow: each term
    split into mantissa and exponent (frexp, exact), mantissas multiplied (one rounding each, as a
    plain product) and renormalized, exponents added, the result scaled once (ldexp). A plain
    product's partial results overflow or vanish in an order-dependent way (measured: 2^16 terms
    of magnitude 1/2 to 2 gave inf on the CPU and 6.7e8 on the H100, whose true value is 6.7e8)."""
    m, e = jnp.frexp(v)

    def combine(a, b):
        mm, ee = jnp.frexp(a[0] * b[0])
        return mm, jnp.clip(a[1] + b[1] + ee.astype(np.int32), -_EXPONENT_CAP, _EXPONENT_CAP)

    mr, er = lax.reduce((m, e.astype(np.int32)), (np.float32(1), np.int32(0)), combine, axes)
    kept = tuple(1 if a in axes else s for a, s in enumerate(v.shape))
    return jnp.ldexp(mr, er).reshape(kept)


_BLOCK = 8  # FLOAT32 terms (2^-126 to 2^128) whose product in FLOAT64 stays within 2^-1008 to 2^1024
_HALVINGS = 8  # FLOAT64 mantissas in [1, 2), multiplied in pairs 8 times over: under 2^256


def _mantissa_exponent(p):
    """p = m * 2^e for FLOAT64 ``p``: m in [1, 2) (its sign kept) where p is normal; zeros,
    infinities and NaN keep their value in m (e, clipped, scales them to themselves)."""
    field = lax.shift_right_logical(lax.bitcast_convert_type(p, np.int64), np.int64(52)) & np.int64(0x7FF)
    e = jnp.clip(field.astype(np.int32) - 1023, -1022, 1022)
    return p * _power_of_two(-e), e


def _across(w, axis: int, k: int):
    """The product of ``w``'s groups of ``k`` along ``axis`` (its length a multiple of k), the
    group of position i holding i, i + n/k, ...: a product across k slices, which XLA's CPU
    backend vectorizes along the slices, where a product along a row is a loop of its own."""
    n = w.shape[axis]
    return jnp.prod(w.reshape(w.shape[:axis] + (k, n // k) + w.shape[axis + 1:]), axis=axis)


def _halved(x, axis: int, fill, op):
    """op of ``x``'s first and second halves along ``axis`` (an odd length padded with ``fill``):
    element-wise, so that XLA's CPU backend fuses a few halvings into one loop (its product
    along a row of 128 FLOAT64 values took as long as jnp.prod over 2^20 FLOAT32 terms)."""
    x = _padded(x, axis, x.shape[axis] + x.shape[axis] % 2, fill)
    h = x.shape[axis] // 2
    return op(lax.slice_in_dim(x, 0, h, axis=axis), lax.slice_in_dim(x, h, 2 * h, axis=axis))


def _product_cpu(v, axes):
    """``_product`` on the CPU, in FLOAT64: the terms (read as the CPU's float operations read
    them, FLOAT32 denormals as zero) multiplied _BLOCK at a time (every finite nonzero block
    product within 2^-1008 to 2^1024: no overflow, no underflow), each block product split into
    a mantissa in [1, 2) and an exponent by its bits; then the mantissas multiplied in pairs
    (and the exponents added) until one is left, split again after every _HALVINGS rounds; the
    result scaled once and rounded once to FLOAT32. The FLOAT64 roundings (under n of 2^-53)
    stay far below a FLOAT32 unit, so the result is the true product's rounding (within 1 ULP)
    wherever it is finite; zeros keep their signs, an inf times a zero is NaN, NaN stays (IEEE
    products throughout). The frexp split in FLOAT32 chunks behind a plain product's range test
    took 4 to 5 times jnp.prod's time here (benchmarks/README.md, the CPU section)."""
    kept = tuple(1 if a in axes else s for a, s in enumerate(v.shape))
    if axes != tuple(range(axes[0], axes[0] + len(axes))):  # the reduced axes moved last, as one
        keep = tuple(a for a in range(v.ndim) if a not in axes)
        v = jnp.transpose(v, keep + axes)
        axis = len(keep)
    else:
        axis = axes[0]
    v = v.reshape(v.shape[:axis] + (-1,) + v.shape[axis + len(axes):])
    with jax.enable_x64(True):
        w = _padded(lax.convert_element_type(v, np.float64), axis, -(-v.shape[axis] // _BLOCK) * _BLOCK, 1.0)
        m, e = _mantissa_exponent(_across(w, axis, _BLOCK))
        rounds = 0
        while m.shape[axis] > 1:
            if rounds == _HALVINGS:
                m, c = _mantissa_exponent(m)
                e, rounds = e + c, 0
            m = _halved(m, axis, 1.0, jnp.multiply)
            e = jnp.clip(_halved(e, axis, 0, jnp.add), -_EXPONENT_CAP, _EXPONENT_CAP)
            rounds += 1
        # |m| within [1, 2^256) (or a zero, an inf, NaN): beyond 2^-500 .. 2^300 the scale's clip
        # changes no FLOAT32 result (below it rounds to zero, above to inf)
        y = m * _power_of_two(jnp.clip(e, -500, 300))
    return flush_denormals(lax.convert_element_type(y, np.float32)).reshape(kept)


def _float_core(f: F, v, axes):
    """The function on a compute-type tensor ``v`` (reduced axes kept)."""
    def total(t):
        return jnp.sum(t, axis=axes, keepdims=True)
    if f is F.SUM:
        return total(v)
    if f is F.AVERAGE:
        n = math.prod(v.shape[a] for a in axes)
        return total(v) / np.asarray(n, v.dtype)
    if f is F.L1:
        return total(jnp.abs(v))
    if f is F.SUM_SQUARE:
        return total(v * v)
    if f is F.L2:
        return jnp.sqrt(total(v * v))
    if f is F.MULTIPLY:
        if v.dtype != np.float32:
            return jnp.prod(v, axis=axes, keepdims=True)
        return lax.platform_dependent(v, cpu=lambda t: _product_cpu(t, axes), default=lambda t: _product(t, axes))
    if f is F.LOG_SUM:
        return jnp.log(total(v))
    if f is F.LOG_SUM_EXP:
        m = jnp.max(v, axis=axes, keepdims=True)
        m = jnp.where(jnp.isfinite(m), m, jnp.zeros_like(m))  # all -inf, or a +inf: exp handles them
        return m + jnp.log(total(jnp.exp(v - m)))
    raise AssertionError(f)


def _float_grad(f: F, v, y, dy, axes):
    """dX of the function at ``v`` (compute type) with result ``y`` (unrounded) and cotangent
    ``dy`` (reduced axes kept): the derivative of the page's formula, NaN-free where it is
    defined."""
    zero = jnp.zeros((), v.dtype)
    if f is F.SUM:
        return jnp.broadcast_to(dy, v.shape)
    if f is F.AVERAGE:
        return jnp.broadcast_to(dy / np.asarray(math.prod(v.shape[a] for a in axes), v.dtype), v.shape)
    if f is F.L1:
        return dy * jnp.sign(v)
    if f is F.SUM_SQUARE:
        return dy * (v + v)
    if f is F.L2:
        safe = jnp.where(y > 0, y, jnp.ones_like(y))
        return jnp.where(y > 0, dy * (v / safe), zero)
    if f is F.MULTIPLY:
        _, vjp = jax.vjp(lambda t: jnp.prod(t, axis=axes, keepdims=True), v)
        return vjp(dy)[0]
    if f is F.LOG_SUM:
        return jnp.broadcast_to(dy / jnp.sum(v, axis=axes, keepdims=True), v.shape)
    if f is F.LOG_SUM_EXP:
        finite = jnp.isfinite(y)
        return jnp.where(finite, dy * jnp.exp(v - jnp.where(finite, y, zero)), zero)
    raise AssertionError(f)


# Functions that read each term only through arithmetic (abs aside, whose result is then
# summed) and whose result is arithmetic's, so that over two or more terms the FLOAT32 flushes
# of input and output may be left to the CPU's processor (numerics.load's float_reads, store's
# float_result); MULTIPLY's CPU form reads the terms by a conversion to FLOAT64 (_product_cpu).
_ARITHMETIC = (F.SUM, F.AVERAGE, F.L1, F.SUM_SQUARE, F.L2, F.LOG_SUM, F.LOG_SUM_EXP, F.MULTIPLY)


def _float(x, f: F, axes, half: bool):
    dt = DataType.from_dtype(x.dtype)
    floats = f in _ARITHMETIC and math.prod(x.shape[a] for a in axes) >= 2

    def run(v):
        # L1 is the SUM of |x|, |x| taken before the read (exact in any float type, and a flush
        # commutes with it): the CPU fuses it into FLOAT16's widening, as jnp's formula, where
        # taken after it went into the sum's own kernel (1.3-1.5x jnp's time there)
        g, u = (F.SUM, jnp.abs(v)) if f is F.L1 else (f, v)
        return store(_float_core(g, load(u, half, float_reads=floats), axes), dt, float_result=floats)

    def fwd(v):
        return run(v), v

    def bwd(v, dy):
        c = load(v, half)
        y = _float_core(f, c, axes)
        return (store(_float_grad(f, c, y, load(dy, half).astype(c.dtype), axes), DataType.from_dtype(dy.dtype)),)

    run = backward_rule(run, fwd, bwd)
    out = run(x)
    if dt is F32:
        mark_flushed(out)
    return out


def _integer(x, f: F, axes):
    """Exact in the tensor's type, wrapping around (two's complement)."""
    if f is F.SUM:
        return jnp.sum(x, axis=axes, keepdims=True, dtype=x.dtype)
    if f is F.MULTIPLY:
        return jnp.prod(x, axis=axes, keepdims=True, dtype=x.dtype)
    if f is F.L1:
        return jnp.sum(jnp.abs(x), axis=axes, keepdims=True, dtype=x.dtype)
    if f is F.SUM_SQUARE:
        return jnp.sum(x * x, axis=axes, keepdims=True, dtype=x.dtype)
    raise AssertionError(f)  # validation admits integers for these (and MAX, MIN, ARG*) only


@operator(REDUCE)
def reduce(input, *, function, axes, output_data_type, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.array([[1, 2, 3], [3, 0, 4], [2, 4, 2]], np.float32)  # the page's examples
        >>> dmljax.reduce(x, function="SUM", axes=(0,))
        Array([[6., 6., 9.]], dtype=float32)
        >>> dmljax.reduce(x, function="SUM", axes=(1,))
        Array([[6.],
               [7.],
               [8.]], dtype=float32)
        >>> dmljax.reduce(x, function="SUM", axes=(0, 1))
        Array([[21.]], dtype=float32)
        >>> dmljax.reduce(x, function="ARGMAX", axes=(1,), output_data_type="INT32")
        Array([[2],
               [2],
               [1]], dtype=int32)
    """
    axes = tuple(sorted(axes))
    if function in ARG:
        return arg_extreme(input, axes, function is F.ARGMAX, False, output_data_type.dtype)
    if function in (F.MAX, F.MIN):
        return _max_min(input, axes, function is F.MAX)
    if not jnp.issubdtype(input.dtype, jnp.floating):
        return _integer(input, function, axes)
    return _float(input, function, axes, allow_half_precision_computation)
