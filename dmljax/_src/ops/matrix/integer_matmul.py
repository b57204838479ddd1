"""MATRIX_MULTIPLY_INTEGER, MATRIX_MULTIPLY_INTEGER_TO_FLOAT and QUANTIZED_LINEAR_MATRIX_MULTIPLY,
of the matrix family: the pages' records, each with its formula below it, and the integer product
they share.

The product ``sum_k (A[m, k] - AZeroPoint[m]) * (B[k, n] - BZeroPoint[n])`` is exact in INT32.
INT8 and UINT8 operands go to one ``lax.dot_general`` as INT8 with an INT32 result (XLA maps it to
the integer tensor cores): a UINT8 operand is read as ``x - 128`` (its top bit flipped), and the
zero points and that shift are applied afterwards by the expansion

    A x B - zb * rowsum(A) - za * colsum(B) + K * za * zb,

all in INT32 (wrapping arithmetic, whose result is exact whenever the true sum fits, which the
bound checked at trace time (linear_quantization.accumulation_violations) guarantees). Widening the operands before the
product would move four times the bytes and leave the tensor cores idle. One row of A takes another
form on the CPU (kernels/integer_matmul_rows.py: a product of two rows, the second giving B's
column sums), where XLA would widen both operands for a matrix-vector product."""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
from jax import lax

from dmljax._src.catalog import PREFIX
from dmljax._src.dtypes import FLOAT32, FLOAT32_FLOAT16, INT8_UINT8, INT32, INT32_INT16_INT8_UINT32_UINT16_UINT8, DataType
from dmljax._src.errors import Violation
from dmljax._src.kernel_seam import choose
from dmljax._src.kernels.integer_matmul_rows import INTEGER_MATMUL_ROWS, rows_on_cpu, two_row_product
from dmljax._src.linear_quantization import (INT32_MAX, accumulation_violations, difference_reach, exact_difference,
                                               quantize_values, scale_violations)
from dmljax._src.numerics import flush_denormals, load, mark_flushed, store
from dmljax._src.op import operator
from dmljax._src.spec import INFERRED, OpSpec, SameDataType, SilentChoice, TensorSpec, snake_case as _arg, table
from dmljax._src.validate import TensorInfo

F32, F16, I32 = DataType.FLOAT32, DataType.FLOAT16, DataType.INT32

# The tensors a quantization parameter belongs to: A's are per row ({[1], [1], M, [1]}), B's per
# column ({[1], [1], [1], N}), the output's per row.
_ROWS = ("AScaleTensor", "AZeroPointTensor", "OutputScaleTensor", "OutputZeroPointTensor")
_COLUMNS = ("BScaleTensor", "BZeroPointTensor")
_ZERO_POINTS = {"ATensor": "AZeroPointTensor", "BTensor": "BZeroPointTensor"}


# ------------------------------------------------------------------------------------ shapes
def _matrices(tensors):
    """(batch, M, K, N, K of B) from ATensor {batch..., M, K} and BTensor {batch..., K, N}, or None
    where either is missing or has fewer than 2 dimensions."""
    a, b = tensors.get("ATensor"), tensors.get("BTensor")
    if a is None or b is None or len(a.shape) < 2 or len(b.shape) < 2:
        return None
    (m, k), (kb, n) = a.shape[-2:], b.shape[-2:]
    return a.shape[:-2], m, k, n, kb


def _product_checks(*same_rank: str):
    """The pages' "ATensor, BTensor, (BiasTensor,) and OutputTensor must have the same
    DimensionCount", A's K equal to B's, the batch dimensions (BatchCount, ChannelCount) equal
    (a broadcast is a desc's zero strides, as GEMM's), and a BiasTensor with the output's Sizes."""
    def check(tensors, attrs, level) -> list[Violation]:
        got = _matrices(tensors)
        if got is None:
            return []
        batch, m, k, n, kb = got
        present = {t: tensors[t] for t in ("ATensor", "BTensor") + same_rank if t in tensors}
        ranks = {t: len(info.shape) for t, info in present.items()}
        if len(set(ranks.values())) > 1:
            odd = next(t for t in present if ranks[t] != ranks["ATensor"])
            return [Violation(odd, _arg(odd), "has " + ", ".join(f"{t}: {r} dimensions" for t, r in ranks.items()),
                              f"{', '.join(present)} and OutputTensor with the same DimensionCount (the page)",
                              "add leading dimensions of 1")]
        a, b = tensors["ATensor"], tensors["BTensor"]
        problems = []
        if k != kb:
            problems.append(Violation("BTensor", "b", f"has Sizes {list(b.shape)}: K = {kb}",
                                      f"K = {k}, as ATensor's Sizes {list(a.shape)} give it ({{batch..., M, K}})",
                                      "transpose or fix the shapes: BTensor is {batch..., K, N}"))
        if b.shape[:-2] != batch:
            problems.append(Violation("BTensor", "b", f"has batch dimensions {list(b.shape[:-2])}",
                                      f"ATensor's, {list(batch)}",
                                      "broadcast it yourself (jnp.broadcast_to), or by a desc's zero strides"))
        bias = tensors.get("BiasTensor")
        if bias is not None and not problems and bias.shape != batch + (m, n):
            problems.append(Violation("BiasTensor", "bias", f"has Sizes {list(bias.shape)}",
                                      f"the OutputTensor's, {{batch..., M, N}} = {list(batch + (m, n))}",
                                      "broadcast it yourself (jnp.broadcast_to), or by a desc's zero strides"))
        return problems
    return check


def _parameter_checks(tensors, attrs, level) -> list[Violation]:
    """Each scale and zero point per tensor or per row (A's and the output's: Sizes
    {[1], [1], 1 or M, [1]}, a single dimension being the count) or per column (B's:
    {[1], ..., 1 or N}), as the pages' "expected dimensions" give them."""
    got = _matrices(tensors)
    if got is None:
        return []
    _, m, _, n, _ = got
    problems = []
    for name in _ROWS + _COLUMNS:
        info = tensors.get(name)
        if info is None or not info.shape:
            continue
        s = info.shape
        if name in _ROWS:
            count, rest = (s[0], ()) if len(s) == 1 else (s[-2], s[:-2] + s[-1:])
            want, what, size = ("{1}, {M}" if len(s) == 1 else "{..., 1, 1, 1}, {..., 1, M, 1}"), "row", m
        else:
            count, rest = s[-1], s[:-1]
            want, what, size = "{..., 1, 1}, {..., 1, N}", "column", n
        if count not in (1, size) or any(d != 1 for d in rest):
            problems.append(Violation(
                name, _arg(name), f"has Sizes {list(s)}",
                f"per tensor or per {what}: {want} with {'M' if what == 'row' else 'N'} = {size}, ones elsewhere",
                "reshape it; a per-batch parameter is not one of the page's layouts"))
    return problems


def _same_dimension_count(*names: str):
    """A page's "X, Y and Z must have the same DimensionCount" (among those present)."""
    def check(tensors, attrs, level) -> list[Violation]:
        ranks = {t: len(tensors[t].shape) for t in names if t in tensors}
        if len(set(ranks.values())) <= 1:
            return []
        first = next(iter(ranks))
        odd = next(t for t in ranks if ranks[t] != ranks[first])
        return [Violation(odd, _arg(odd), "has " + ", ".join(f"{t}: {r}" for t, r in ranks.items()) + " dimensions",
                          f"{', '.join(names)} with the same DimensionCount (the page)",
                          "reshape them to one DimensionCount (leading ones)")]
    return check


def _reaches(tensors) -> tuple[int, int] | None:
    """The largest |a - za| and |b - zb| of this call's types (``difference_reach``), or None
    where a type is unknown."""
    a, b = tensors.get("ATensor"), tensors.get("BTensor")
    if a is None or b is None or not (a.data_type.is_integer and b.data_type.is_integer):
        return None  # a type the tables refuse, reported already
    return (difference_reach(a.data_type, "AZeroPointTensor" in tensors),
            difference_reach(b.data_type, "BZeroPointTensor" in tensors))


def _accumulator_check(tensors, attrs, level) -> list[Violation]:
    """No silent overflow: K * |a - za|max * |b - zb|max within INT32's range (INT8 x INT8 without
    zero points: K up to 131071; with a zero point or a UINT8 operand: 33025)."""
    got, reach = _matrices(tensors), _reaches(tensors)
    if got is None or reach is None:
        return []
    k = got[2]
    most = INT32_MAX // (reach[0] * reach[1])
    return accumulation_violations(
        k, reach[0], reach[1], "ATensor", "a", f"K = {k}: sum_k (A[m, k] - za) * (B[k, n] - zb)",
        tip=f"split the product along K into pieces of at most {most} and add the pieces' INT32 results in a wider "
            "type (int64, or float64 with jax_enable_x64)")


def _output(data_type):
    """infer_outputs: OutputTensor {batch..., M, N} of ``data_type(tensors)``."""
    def infer(tensors, attrs, problems) -> dict:
        batch, m, _, n, _ = _matrices(tensors)
        return {"OutputTensor": TensorInfo(batch + (m, n), data_type(tensors))}
    return infer


# ------------------------------------------------------------------------------------ the product
def _as_int8(x):
    """(x as INT8, its offset): a UINT8 tensor is read as x - 128 (its top bit flipped, exact),
    so that every product runs INT8 by INT8; INT8 as it is, offset 0. Off the CPU the flip runs on
    four bytes at a time through a UINT32 view where the size allows: XLA's GPU backend then leaves
    it out of the product (a byte-wise flip is fused into a Triton GEMM that runs at a third of
    cuBLAS's integer kernel: 3.7 ms against 1.36 at 8192^3 on an H200). On the CPU it is byte-wise:
    XLA's CPU backend packs the four bytes of a word with shifts and a reduction, which it fuses with
    whatever computes them (a requantization) into a loop it does not vectorize (the two-layer
    encoder quantized by ONNX Runtime, QOperator form: 0.91x the call's time byte-wise, paired)."""
    if x.dtype != np.uint8:
        return x, 0

    def bytewise(x):
        return lax.bitcast_convert_type(x ^ np.uint8(0x80), np.int8)

    if x.size % 4:
        return bytewise(x), 128

    def words(x):
        w = lax.bitcast_convert_type(x.reshape(-1, 4), np.uint32) ^ np.uint32(0x80808080)
        return lax.bitcast_convert_type(w, np.int8).reshape(x.shape)

    return lax.platform_dependent(x, cpu=bytewise, default=words), 128


def _row(p):
    """A per-tensor or per-row parameter ({..., 1 or M, 1}, or {1 or M}) as a (1 or M, 1) column
    that broadcasts over {..., M, N}."""
    return p.reshape(-1, 1)


def _column(p):
    """A per-tensor or per-column parameter ({..., 1 or N}) as a (1, 1 or N) row."""
    return p.reshape(1, -1)


def _effective_zero_point(zero_point, offset: int, shape):
    """The INT32 zero point of an operand read as INT8 (``zero_point - offset``), shaped by
    ``shape`` (_row or _column), or None where it is 0 (no zero point, no offset)."""
    if zero_point is None:
        return None if offset == 0 else np.int32(-offset)
    z = shape(zero_point).astype(np.int32)
    return z if offset == 0 else z - np.int32(offset)


def _whole_words(x, y, nb: int):
    """``x`` {..., M, K} and ``y`` {..., K, N} with K padded by zeros to a multiple of 4, which adds
    nothing to any sum. XLA's GPU backend gives wrong INT8 x INT8 -> INT32 products where K is not
    a multiple of 4 (jax 0.11.2 on an H200: every element of a 3 x 5 by 5 x 4 product, and of 16 x
    5 by 5 x 16, wrong; right after this padding and for K = 4, 8, 16), a plain
    ``jnp.matmul(a, b, preferred_element_type=jnp.int32)`` included; a multiple of 4 is unchanged."""
    extra = -x.shape[-1] % 4
    if not extra:
        return x, y
    x = jnp.pad(x, [(0, 0)] * (nb + 1) + [(0, extra)])
    y = jnp.pad(y, [(0, 0)] * nb + [(0, extra), (0, 0)])
    return x, y


def _written(x, y, column_sums: bool):
    """(``x`` times ``y``, INT8 into INT32; ``sum_k y[..., k, n]`` {batch..., 1, N} in INT32 or None):
    one INT8 x INT8 ``dot_general`` and a sum over B."""
    nb = x.ndim - 2
    batch = tuple(range(nb))
    # The barrier keeps the product a plain INT8 x INT8 dot for XLA's GPU backend, which runs it on
    # cuBLAS's integer tensor-core kernel (about 1000 TOPS at 8192^3 on an H200). Left to itself,
    # XLA fuses the product's consumers (the requantization, the conversion to float) into a
    # Triton GEMM: 1.36 ms instead of 1.26 for the requantized product.
    acc = lax.dot_general(*_whole_words(x, y, nb), (((nb + 1,), (nb,)), (batch, batch)), preferred_element_type=np.int32)
    acc = lax.optimization_barrier(acc)
    return acc, (jnp.sum(y, axis=-2, dtype=np.int32)[..., None, :] if column_sums else None)


def _product(x, y, column_sums: bool):
    """``_written``, or for one row of A on the CPU the two-row form of kernels/integer_matmul_rows.py
    (the same sums), where its measured rule takes the call on the platform the program is lowered
    for."""
    facts = (x.shape, y.shape, x.dtype)
    on_cuda = choose(INTEGER_MATMUL_ROWS, facts=facts).kernel is not None
    on_cpu = rows_on_cpu(*facts)
    if not (on_cuda or on_cpu):
        return _written(x, y, column_sums)

    def written(a, b):
        return _written(a, b, column_sums)

    def rows(a, b):
        return two_row_product(a, b, column_sums)

    return lax.platform_dependent(x, y, cpu=rows if on_cpu else written, cuda=rows if on_cuda else written,
                                  default=written)


def integer_product(a, b, a_zero_point=None, b_zero_point=None):
    """``sum_k (a[..., m, k] - za[m]) * (b[..., k, n] - zb[n])`` in INT32 for INT8 / UINT8 ``a``
    and ``b`` (any mix) with batch dimensions {batch..., M, K} x {batch..., K, N}: one INT8 x INT8
    ``dot_general`` with an INT32 result, and the expansion's corrections (module docstring).
    Exact where K * |a - za|max * |b - zb|max fits INT32 (the records check it)."""
    k = a.shape[-1]
    x, oa = _as_int8(a)
    y, ob = _as_int8(b)
    za = _effective_zero_point(a_zero_point, oa, _row)
    zb = _effective_zero_point(b_zero_point, ob, _column)
    acc, column_sums = _product(x, y, za is not None)
    if zb is not None:  # - zb[n] * sum_k x[m, k]
        acc = acc - zb * jnp.sum(x, axis=-1, dtype=np.int32)[..., :, None]
    if za is not None:  # - za[m] * sum_k y[k, n]
        acc = acc - za * column_sums
    if za is not None and zb is not None:
        acc = acc + np.int32(k) * za * zb
    return acc


# ------------------------------------------------------------------------------------ MATRIX_MULTIPLY_INTEGER
_PRODUCT_FORMULA = "{M,K} x {K,N} = {M,N}"
_SUM = "sum over k of (A[..., m, k] - AZeroPoint[m]) * (B[..., k, n] - BZeroPoint[n])"
def _layout(a_params: str, b_params: str) -> str:
    """The notes' shape rules; ``a_params`` / ``b_params``: what A's and B's parameters are called."""
    return ("ATensor is {batch..., M, K}, BTensor {batch..., K, N} and OutputTensor {batch..., M, N}, all with the "
            "same DimensionCount (2 to 4 from DML_FEATURE_LEVEL_4_0, 4 before) and equal batch dimensions (a "
            "broadcast is a desc's zero strides, jnp.broadcast_to, as GEMM's). " + a_params + " per tensor or "
            "per row, Sizes {..., 1 or M, 1} (one dimension: {1 or M}); " + b_params + " per tensor or per "
            "column, {..., 1 or N}; the other dimensions 1, as the pages' expected dimensions give them (ONNX's "
            "per-row M-vector and per-column N-vector). The record lists the required tensors first, as the "
            "function's signature does (the struct puts each optional tensor beside its own).")


_EXPANSION = ("INT8 and UINT8 operands are multiplied as INT8 in one dot_general with an INT32 result (a UINT8 "
              "operand read as x - 128), and the zero points and that shift applied by the expansion A x B - zb * "
              "rowsum(A) - za * colsum(B) + K * za * zb in wrapping INT32 arithmetic, exact whenever the true sum "
              "fits INT32.")
_BOUND = ("No silent overflow: K is refused at trace time (ValidationError) beyond the most products an INT32 sum "
          "holds whatever the values, (2^31 - 1) // (|a - za|max * |b - zb|max) with |a - za|max = 255 with a zero "
          "point or for UINT8, 128 for INT8 without one: 131071 for INT8 x INT8 without zero points, 33025 "
          "otherwise; the message says to split the product along K and add the pieces in a wider type.")


def _int32(tensors) -> DataType:
    return I32


MATRIX_MULTIPLY_INTEGER = OpSpec(
    enum_name=PREFIX + "MATRIX_MULTIPLY_INTEGER",
    summary="Performs a matrix multiplication function on integer data.",
    formula=_PRODUCT_FORMULA + "\nOutput[..., m, n] = " + _SUM + ", in INT32",
    tensors=(TensorSpec("ATensor", "input"), TensorSpec("BTensor", "input"),
             TensorSpec("AZeroPointTensor", "input", optional=True),
             TensorSpec("BZeroPointTensor", "input", optional=True), TensorSpec("OutputTensor", "output")),
    support=(
        table("5.2", ATensor=("2 to 4", INT8_UINT8), BTensor=("2 to 4", INT8_UINT8),
              AZeroPointTensor=("1 to 4", INT8_UINT8), BZeroPointTensor=("1 to 4", INT8_UINT8),
              OutputTensor=("2 to 4", INT32)),
        table("4.0", ATensor=("2 to 4", INT8_UINT8), BTensor=("2 to 4", INT8_UINT8),
              AZeroPointTensor=("1 to 4", INT8_UINT8), BZeroPointTensor=("2 to 4", INT8_UINT8),
              OutputTensor=("2 to 4", INT32)),
        table("2.1", ATensor=("4", INT8_UINT8), BTensor=("4", INT8_UINT8),
              AZeroPointTensor=("4", INT8_UINT8), BZeroPointTensor=("4", INT8_UINT8),
              OutputTensor=("4", INT32)),
    ),
    # "BTensor and BZeroPointTensor must have the same DataType. ATensor and AZeroPointTensor must
    # have the same DataType." (A and B may differ: INT8 x UINT8.)
    constraints=(SameDataType(("BTensor", "BZeroPointTensor")), SameDataType(("ATensor", "AZeroPointTensor"))),
    math=False,
    gradient="none: integer inputs and an integer output (jax.grad gives the inputs float0 cotangents).",
    notes=" ".join((_layout("AZeroPointTensor is", "BZeroPointTensor"), _EXPANSION, _BOUND,
                    "A missing zero point is 0 (ONNX's MatMulInteger; the page makes both optional).")),
    extra_checks=(_product_checks(), _parameter_checks, _accumulator_check),
    infer_outputs=_output(_int32),
    silent=(
        SilentChoice(
            "Integer accumulation (MATRIX_MULTIPLY_INTEGER, CONVOLUTION_INTEGER, their QUANTIZED_LINEAR_* "
            "forms, MATRIX_MULTIPLY_INTEGER_TO_FLOAT's 8-bit product)",
            "exact in INT32; refused at trace time where the reduction's worst case could pass INT32 (K x "
            "max|a - za| x max|b - zb| > 2^31 - 1: K up to 131,071 for INT8 x INT8 without zero points, 33,025 "
            "with them), with a tip to split the reduction",
            "No silent overflow: the pages' INT32 output cannot hold every sum.",
            also=("QUANTIZED_LINEAR_MATRIX_MULTIPLY", "MATRIX_MULTIPLY_INTEGER_TO_FLOAT",
                  "CONVOLUTION_INTEGER", "QUANTIZED_LINEAR_CONVOLUTION")),
        SilentChoice(
            "UINT8 operands of the integer products",
            "read as x - 128 in INT8 (the top bit flipped), the offset folded into the zero points' INT32 "
            "corrections: exact, one INT8 x INT8 product",
            "XLA's integer tensor-core products take INT8 x INT8.",
            also=("QUANTIZED_LINEAR_MATRIX_MULTIPLY", "MATRIX_MULTIPLY_INTEGER_TO_FLOAT",
                  "CONVOLUTION_INTEGER", "QUANTIZED_LINEAR_CONVOLUTION")),
        SilentChoice(
            "XLA's GPU INT8 x INT8 -> INT32 product with K not a multiple of 4",
            "K padded with zeros inside the operators",
            "jax 0.11.2 on an H200 gives wrong products otherwise (a plain `jnp.matmul(..., "
            "preferred_element_type=jnp.int32)` too).",
            also=("QUANTIZED_LINEAR_MATRIX_MULTIPLY", "MATRIX_MULTIPLY_INTEGER_TO_FLOAT",
                  "CONVOLUTION_INTEGER", "QUANTIZED_LINEAR_CONVOLUTION")),
    ),
)


@operator(MATRIX_MULTIPLY_INTEGER)
def matrix_multiply_integer(a, b, a_zero_point=None, b_zero_point=None):
    """Example:
        >>> import numpy as np, dmljax
        >>> a = np.array([[11, 7, 3], [10, 6, 2], [9, 5, 1], [8, 4, 0]], np.uint8)   # ONNX's MatMulInteger test
        >>> b = np.array([[1, 4], [2, 5], [3, 6]], np.uint8)
        >>> dmljax.matrix_multiply_integer(a, b, np.array([12], np.uint8), np.array([0], np.uint8))
        Array([[ -38,  -83],
               [ -44,  -98],
               [ -50, -113],
               [ -56, -128]], dtype=int32)
    """
    return integer_product(a, b, a_zero_point, b_zero_point)


# ------------------------------------------------------------------------------------ MATRIX_MULTIPLY_INTEGER_TO_FLOAT
def _scale_type(tensors) -> DataType:
    return tensors["AScaleTensor"].data_type


def _float_product(a, b, a_zero_point, b_zero_point):
    """The product for types whose INT32 sum could overflow (16- and 32-bit, or 8-bit past the
    bound): each difference exact and rounded once to FLOAT32 (exact up to 16 bits), products
    and sums in FLOAT32 (never TF32)."""
    nb = a.ndim - 2
    batch = tuple(range(nb))
    da = exact_difference(a, None if a_zero_point is None else jnp.broadcast_to(_row(a_zero_point), a.shape))
    db = exact_difference(b, None if b_zero_point is None else jnp.broadcast_to(_column(b_zero_point), b.shape))
    return lax.dot_general(da, db, (((nb + 1,), (nb,)), (batch, batch)), precision=lax.Precision.HIGHEST,
                           preferred_element_type=np.float32)


def _scaled(p, scales, bias):
    """``p * scales + bias`` in FLOAT32, the product rounded (and flushed, Direct3D's rule for every
    FLOAT32 result) before the sum on every backend. XLA's CPU backend fuses a multiply-add into
    one FMA or not by how the surrounding program is compiled (the function alone, inside a
    caller's jit, in a DxDispatch model); the flush's select between the two keeps them apart."""
    prod = flush_denormals(p * scales)
    return prod if bias is None else prod + bias


def _to_float_growth(sizes, attrs) -> dict:
    """K products summed in FLOAT32 where the types' INT32 sum could overflow (docs/semantics.md#accumulating-operators):
    K rounding units of the terms' magnitude (Reference magnitude: |a_scale * b_scale| *
    sum |a - za| |b - zb| + |bias|); K / 2^13 FLOAT16 ULP. K from ATensor's Sizes (``attrs``'
    "ATensor" where the caller gives the inputs' Sizes, else ``sizes``)."""
    a = attrs.get("ATensor") or sizes
    k = a[-1] if a else 1
    return {F32: k, F16: math.ceil(k / 8192), "half": math.ceil(k / 8192)}


MATRIX_MULTIPLY_INTEGER_TO_FLOAT = OpSpec(
    enum_name=PREFIX + "MATRIX_MULTIPLY_INTEGER_TO_FLOAT",
    summary="Performs a matrix multiplication function on integer input tensor data, and produces floating point output.",
    formula=(_PRODUCT_FORMULA + "\nOutput[..., m, n] = (" + _SUM + ") * (AScale[m] * BScale[n]) + Bias[..., m, n]"),
    tensors=(TensorSpec("ATensor", "input"), TensorSpec("AScaleTensor", "input"), TensorSpec("BTensor", "input"),
             TensorSpec("BScaleTensor", "input"), TensorSpec("AZeroPointTensor", "input", optional=True),
             TensorSpec("BZeroPointTensor", "input", optional=True), TensorSpec("BiasTensor", "input", optional=True),
             TensorSpec("OutputTensor", "output")),
    support=(
        table("6.2", ATensor=("2 to 4", INT32_INT16_INT8_UINT32_UINT16_UINT8), AScaleTensor=("1 to 4", FLOAT32_FLOAT16),
              AZeroPointTensor=("1 to 4", INT32_INT16_INT8_UINT32_UINT16_UINT8),
              BTensor=("2 to 4", INT32_INT16_INT8_UINT32_UINT16_UINT8), BScaleTensor=("1 to 4", FLOAT32_FLOAT16),
              BZeroPointTensor=("1 to 4", INT32_INT16_INT8_UINT32_UINT16_UINT8),
              BiasTensor=("2 to 4", FLOAT32_FLOAT16), OutputTensor=("2 to 4", FLOAT32_FLOAT16)),
    ),
    # "ATensor, AZeroPointTensor, BTensor, and BZeroPointTensor must have the same DataType.
    # AScaleTensor, BiasTensor, BScaleTensor, and OutputTensor must have the same DataType."
    constraints=(SameDataType(("ATensor", "AZeroPointTensor", "BTensor", "BZeroPointTensor")),
                 SameDataType(("AScaleTensor", "BiasTensor", "BScaleTensor", "OutputTensor"))),
    ulp={F32: 4, F16: 1},
    ulp_half=1,
    ulp_growth=_to_float_growth,
    gradient=("The formula differentiated, in FLOAT32 and rounded once to each input's type: dAScale[m] = sum over "
              "the batch and n of dY * P * BScale[n], dBScale[n] = sum over the batch and m of dY * P * AScale[m] "
              "(P the product as the forward pass rounds it to FLOAT32), dBias = dY; the integer inputs get none "
              "(float0)."),
    notes=" ".join((
        _layout("A's scale and zero point are", "B's"),
        "The page's Members section also describes an OutputScaleTensor and an OutputZeroPointTensor (copied from "
        "QUANTIZED_LINEAR_MATRIX_MULTIPLY's page), which the struct in its Syntax block and its tables do not have: "
        "the record follows the struct and the tables (the output is the dequantized float product, as ONNX "
        "Runtime's com.microsoft MatMulIntegerToFloat computes it).",
        "For INT8 and UINT8 (A and B share one type) with K within the INT32 bound ((2^31 - 1) // (|a - za|max * "
        "|b - zb|max): 131071 or 33025), the product is exact in INT32 (as MATRIX_MULTIPLY_INTEGER's: one INT8 "
        "dot_general and the zero points' expansion) and rounded once to FLOAT32; for 16- and 32-bit types, whose INT32 sum could overflow after one or two "
        "products, and for 8-bit types past the bound, each difference a - za and b - zb is exact and rounded once "
        "to FLOAT32 (exact up to 16 bits) and the products and sums are FLOAT32 (never TF32), within a budget of "
        "K + 4 rounding units of sum |terms|: no overflow in either case.",
        "Then Output = P * (AScale * BScale) + Bias in FLOAT32 (the scales' product rounded first, as ONNX Runtime "
        "multiplies by the product of the scales; FLOAT16 scales and bias widened), the product rounded before the "
        "bias is added (never one FMA, on every backend), flushed and rounded once to the output type. The epilogue stays in "
        "FLOAT32 with allow_half_precision_computation (an INT32 sum does not fit FLOAT16's range). A missing zero "
        "point is 0 and a missing bias adds nothing. A scale of 0, NaN or infinity gives IEEE arithmetic's "
        "result (0, NaN, +-inf), as DEQUANTIZE_LINEAR's: the page leaves no scale undefined.")),
    extra_checks=(_product_checks("BiasTensor"), _parameter_checks,
                  _same_dimension_count("AScaleTensor", "AZeroPointTensor", "BScaleTensor", "BZeroPointTensor")),
    infer_outputs=_output(_scale_type),
)


@operator(MATRIX_MULTIPLY_INTEGER_TO_FLOAT)
def matrix_multiply_integer_to_float(a, a_scale, b, b_scale, a_zero_point=None, b_zero_point=None, bias=None, *,
                                     allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> a = np.array([[1, 2], [3, 4]], np.int8)
        >>> b = np.array([[5, 6], [7, 8]], np.int8)
        >>> dmljax.matrix_multiply_integer_to_float(a, np.array([0.5], np.float32), b, np.array([0.25], np.float32),
        ...                                         bias=np.full((2, 2), 1, np.float32))
        Array([[3.375, 3.75 ],
               [6.375, 7.25 ]], dtype=float32)
    """
    dt = DataType.from_dtype(a_scale.dtype)
    reach = (difference_reach(DataType.from_dtype(a.dtype), a_zero_point is not None)
             * difference_reach(DataType.from_dtype(b.dtype), b_zero_point is not None))
    if a.dtype.itemsize == 1 and a.shape[-1] * reach <= INT32_MAX:
        p = integer_product(a, b, a_zero_point, b_zero_point).astype(np.float32)
    else:
        p = _float_product(a, b, a_zero_point, b_zero_point)
    scales = flush_denormals(_row(load(a_scale)) * _column(load(b_scale)))
    out = store(_scaled(p, scales, None if bias is None else load(bias)), dt)
    if dt is F32:
        mark_flushed(out)
    return out


# ------------------------------------------------------------------------------------ QUANTIZED_LINEAR_MATRIX_MULTIPLY
def _output_type(tensors) -> DataType:
    """The OutputZeroPointTensor's DataType, or the caller's output_data_type, or else ATensor's
    (ONNX's reference evaluator: a's type where y_zero_point is missing)."""
    chosen = tensors.get("OutputTensor")
    return chosen.data_type if chosen is not None and chosen.data_type is not None else tensors["ATensor"].data_type


_SCALES = {n: _arg(n) for n in ("AScaleTensor", "BScaleTensor", "OutputScaleTensor")}


def _scale_values(values, attrs, level) -> list[Violation]:
    """"A scale value of 0 results in undefined behavior" (each scale's field): a scale known at
    the call that holds 0, NaN or an infinity is refused (linear_quantization.scale_violations)."""
    return [v for name, arg in _SCALES.items() for v in scale_violations(values.get(name), name, arg)]


QUANTIZED_LINEAR_MATRIX_MULTIPLY = OpSpec(
    enum_name=PREFIX + "QUANTIZED_LINEAR_MATRIX_MULTIPLY",
    summary=("Performs a matrix multiplication function on quantized data. This operator is mathematically "
             "equivalent to dequantizing the inputs, then performing matrix multiply, and then quantizing the "
             "output."),
    formula=("f(Input, Scale, ZeroPoint) = clamp(round(Input / Scale) + ZeroPoint, Min, Max)\n"
             "with Input = FLOAT32(" + _SUM + ") * (AScale[m] * BScale[n]), Scale = OutputScale[m], "
             "ZeroPoint = OutputZeroPoint[m]"),
    tensors=(TensorSpec("ATensor", "input"), TensorSpec("AScaleTensor", "input"), TensorSpec("BTensor", "input"),
             TensorSpec("BScaleTensor", "input"), TensorSpec("OutputScaleTensor", "input"),
             TensorSpec("AZeroPointTensor", "input", optional=True),
             TensorSpec("BZeroPointTensor", "input", optional=True),
             TensorSpec("OutputZeroPointTensor", "input", optional=True),
             TensorSpec("OutputTensor", "output", default_data_type=INFERRED)),
    support=(
        table("4.0", ATensor=("2 to 4", INT8_UINT8), AScaleTensor=("1 to 4", FLOAT32),
              AZeroPointTensor=("1 to 4", INT8_UINT8), BTensor=("2 to 4", INT8_UINT8),
              BScaleTensor=("1 to 4", FLOAT32), BZeroPointTensor=("1 to 4", INT8_UINT8),
              OutputScaleTensor=("1 to 4", FLOAT32), OutputZeroPointTensor=("1 to 4", INT8_UINT8),
              OutputTensor=("2 to 4", INT8_UINT8)),
        table("2.1", ATensor=("4", INT8_UINT8), AScaleTensor=("4", FLOAT32), AZeroPointTensor=("4", INT8_UINT8),
              BTensor=("4", INT8_UINT8), BScaleTensor=("4", FLOAT32), BZeroPointTensor=("4", INT8_UINT8),
              OutputScaleTensor=("4", FLOAT32), OutputZeroPointTensor=("4", INT8_UINT8),
              OutputTensor=("4", INT8_UINT8)),
    ),
    # "BTensor and BZeroPointTensor must have the same DataType. OutputTensor and
    # OutputZeroPointTensor must have the same DataType. ... ATensor and AZeroPointTensor must have
    # the same DataType."
    constraints=(SameDataType(("BTensor", "BZeroPointTensor")), SameDataType(("OutputTensor", "OutputZeroPointTensor")),
                 SameDataType(("ATensor", "AZeroPointTensor"))),
    math=False,
    gradient=("none: an integer output (its float scales get zero gradients, its integer inputs float0), as for "
              "any rounding to integers."),
    notes=" ".join((
        _layout("A's and the output's scales and zero points are", "B's"),
        "The product P = " + _SUM + " is exact in INT32.", _EXPANSION, _BOUND,
        "The requantization follows the page's quantize function, round(Input / Scale), with Input the dequantized "
        "product as ONNX's QLinearMatMul text writes it (y = saturate(x / y_scale + y_zero_point)): P is converted "
        "to FLOAT32 (rounded once: exact up to 2^24), multiplied by AScale * BScale (rounded once, then the "
        "product rounded once, denormals flushed), then quantize_values of linear_quantization.py divides by "
        "OutputScale in FLOAT32 (correctly rounded on every backend: linear_quantization.divide), rounds halves "
        "to even, adds the zero point and saturates to the "
        "output type (NaN to Min by minNum/maxNum). ONNX Runtime's CPU kernel instead multiplies P by one FLOAT32 "
        "multiplier AScale * BScale / OutputScale: the two can differ by one where a value lands within a "
        "rounding of a half.",
        "A missing zero point is 0. The OutputTensor's DataType is the OutputZeroPointTensor's; without one, "
        "output_data_type= (INT8 or UINT8), by default ATensor's (ONNX's reference evaluator).",
        "A scale of 0 results in undefined behavior (the page): a scale known at the call (a NumPy or JAX array "
        "outside a trace) that holds 0 (or a FLOAT32 denormal, which reads as 0), NaN or an infinity is a "
        "ValidationError; a traced one gets the arithmetic's result: AScale or BScale 0 gives the output zero "
        "point, OutputScale 0 gives Max, Min or (0 / 0) Min, an infinite scale Max or Min (Min where P is 0), NaN "
        "Min.")),
    extra_checks=(_product_checks(), _parameter_checks, _accumulator_check,
                  _same_dimension_count("AScaleTensor", "AZeroPointTensor", "BScaleTensor", "BZeroPointTensor",
                                        "OutputScaleTensor", "OutputZeroPointTensor")),
    infer_outputs=_output(_output_type),
    value_checks=(_scale_values,),
)


@operator(QUANTIZED_LINEAR_MATRIX_MULTIPLY)
def quantized_linear_matrix_multiply(a, a_scale, b, b_scale, output_scale, a_zero_point=None, b_zero_point=None,
                                     output_zero_point=None, *, output_data_type):
    """Example:
        >>> import numpy as np, dmljax
        >>> a = np.array([[208, 236, 0, 238], [3, 214, 255, 29]], np.uint8)   # ONNX's QLinearMatMul test
        >>> b = np.array([[152, 51, 244], [60, 26, 255], [0, 127, 246], [127, 254, 247]], np.uint8)
        >>> f = lambda v: np.array([v], np.float32)
        >>> dmljax.quantized_linear_matrix_multiply(a, f(0.0066), b, f(0.00705), f(0.0107), np.array([113], np.uint8),
        ...                                         np.array([114], np.uint8), np.array([118], np.uint8))
        Array([[168, 115, 255],
               [  1,  66, 151]], dtype=uint8)
    """
    acc = integer_product(a, b, a_zero_point, b_zero_point)
    scales = flush_denormals(_row(load(a_scale)) * _column(load(b_scale)))
    value = acc.astype(np.float32) * scales
    zero_point = None if output_zero_point is None else _row(output_zero_point)
    return quantize_values(value, _row(output_scale), zero_point, output_data_type)
