"""CAST, of the data_movement family: the page's record, with its formula below it."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from dmljax._src.catalog import PREFIX
from dmljax._src.derivatives import backward_rule
from dmljax._src.dtypes import (
    FLOAT32_FLOAT16_INT16_INT8_UINT16_UINT8, FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8,
    FLOAT64_FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8, DataType,
)
from dmljax._src.numerics import flush_denormals, float_to_int
from dmljax._src.op import operator
from dmljax._src.spec import OpSpec, REQUIRED, SameSizes, SilentChoice, TensorSpec, table

_ALL = FLOAT64_FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8
_NO_F64 = FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8

CAST = OpSpec(
    enum_name=PREFIX + "CAST",
    summary=("Casts each element in the input to the data type of the output tensor, and stores the result in "
             "the corresponding element of the output."),
    formula=("Casts each element in the input to the data type of the output tensor\n"
             "(output[i] = (OutputTensor.DataType) input[i]: floats to integers truncated toward zero and "
             "saturated, NaN to 0; values rounded to nearest even where the output type cannot hold them; "
             "integers to narrower integers wrap around)"),
    tensors=(TensorSpec("InputTensor", "input"),
             TensorSpec("OutputTensor", "output", default_data_type=REQUIRED)),
    support=(
        table("4.1", InputTensor=("1 to 8", _ALL), OutputTensor=("1 to 8", _ALL)),
        table("3.1", InputTensor=("1 to 8", _NO_F64), OutputTensor=("1 to 8", _NO_F64)),
        table("3.0", InputTensor=("4", _NO_F64), OutputTensor=("4", _NO_F64)),
        table("1.0", InputTensor=("4", FLOAT32_FLOAT16_INT16_INT8_UINT16_UINT8),
              OutputTensor=("4", FLOAT32_FLOAT16_INT16_INT8_UINT16_UINT8)),
    ),
    constraints=(SameSizes(("InputTensor", "OutputTensor")),),
    math=False,
    gradient=("Float to float: dX = dY converted back to the InputTensor's DataType (the cast's transpose, "
              "FLOAT32 denormals flushed). A float input cast to an integer type gets 0; integer inputs: "
              "none (float0)."),
    notes=(
        ("The page says no more than 'casts', so dmljax applies Direct3D's conversion rules "
         "(docs/semantics.md#conversions), the same on every backend: float to integer truncates toward zero "
         "and saturates to the type's range, NaN gives 0, +-inf the extremes; float to float and integer to "
         "float round to nearest even, once (FLOAT64 to FLOAT16 too: XLA's CPU backend rounds it twice, "
         "through FLOAT32, which dmljax avoids), overflowing to +-inf; FLOAT32 denormals read and are written "
         "as sign-preserving zero (FLOAT16 and FLOAT64 denormals are kept); integer to integer keeps the low "
         "bits (two's complement wraparound, as C, NumPy and ONNX do: INT32 300 to UINT8 gives 44, -1 to "
         "UINT32 gives 4294967295). A cast to the input's own type is a copy (bits kept, except FLOAT32 "
         "denormals). INT64, UINT64 and FLOAT64 need JAX's 64-bit mode.")),
    silent=(
        SilentChoice(
            "CAST float to integer",
            "truncation toward zero, saturated to the type's range, NaN to 0",
            "Direct3D's float-to-integer conversion rules ([Conversions](semantics.md#conversions)); the page "
            "says only \"casts\"."),
        SilentChoice(
            "CAST integer to narrower integer",
            "the low bits (wraparound: INT32 300 to UINT8 is 44)",
            "C, NumPy and ONNX do so; the page is silent."),
        SilentChoice(
            "CAST to a float type",
            "rounded once to nearest even, FLOAT64 to FLOAT16 included (XLA's CPU backend rounds it twice, "
            "through FLOAT32); FLOAT32 denormals read and written as zero",
            "One rounding is what a conversion means; the denormal rule is "
            "[Denormals](semantics.md#denormals)'s rule, applied on every backend (the CPU flushed them, a GPU "
            "would not)."),
        SilentChoice(
            "CAST's output type",
            "required (`output_data_type=`)",
            "The page gives no default."),
    ),
)


def _to_float16_once(x):
    """FLOAT64 to FLOAT16 rounded once: through FLOAT32 rounded to odd (truncated, its last bit
    set when inexact), which makes the second rounding exact."""
    t = x.astype(np.float32)
    away = jnp.abs(t.astype(np.float64)) > jnp.abs(x)
    t = jnp.where(away, jnp.nextafter(t, jnp.zeros_like(t)), t)
    inexact = (t.astype(np.float64) != x) & ~jnp.isnan(x)
    bits = lax.bitcast_convert_type(t, np.uint32)
    t = lax.bitcast_convert_type(jnp.where(inexact, bits | np.uint32(1), bits), np.float32)
    return t.astype(np.float16)


def convert(x, out: DataType):
    """``x`` as ``out`` under the rules the record's notes state."""
    src = DataType.from_dtype(x.dtype)
    if src.is_float:
        x = flush_denormals(x)
        if out.is_integer:
            return float_to_int(x, out)
        if src is DataType.FLOAT64 and out is DataType.FLOAT16:
            return _to_float16_once(x)
    return flush_denormals(x.astype(out.dtype))


def _cast(x, out: DataType):
    src = DataType.from_dtype(x.dtype)
    if not (src.is_float and out.is_float):
        return jax.lax.stop_gradient(convert(x, out)) if src.is_float else convert(x, out)

    def run(v):
        return convert(v, out)

    def fwd(v):
        return run(v), None

    def bwd(_, dy):
        return (convert(dy, src),)

    run = backward_rule(run, fwd, bwd)
    return run(x)


@operator(CAST)
def cast(input, *, output_data_type):
    """Example:
        >>> import numpy as np, dmljax
        >>> dmljax.cast(np.array([2.7, -2.7, np.nan, 1e10], np.float32), output_data_type="INT32")
        Array([         2,         -2,          0, 2147483647], dtype=int32)
        >>> dmljax.cast(np.array([300, -1], np.int32), output_data_type="UINT8")
        Array([ 44, 255], dtype=uint8)
    """
    return _cast(input, output_data_type)
