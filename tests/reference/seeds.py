"""float64 references for the seed operators, transcribed from their pages:
dml_element_wise_if, dml_activation_scaled_elu, dml_element_wise_modulus_floor,
dml_element_wise_threshold, dml_element_wise_constant_pow, dml_element_wise_logical_less_than,
dml_element_wise_multiply (all in ../shared/spec/operators/)."""

import math

import numpy as np

from tests.reference.rules import F32_TINY, c_float, int_attr, read, scale_bias_candidates


def element_wise_if(condition, a, b):
    # f(cond, a, b) = a, if cond != 0; b, otherwise. Pure selection: returned in the input type.
    return [np.where(np.asarray(condition) != 0, a, b)]


def activation_scaled_elu(x, alpha=1.6732, gamma=1.0507):
    # f(x) = Gamma * x if x > 0, Gamma * (Alpha * exp(x) - Alpha) otherwise.
    # Alpha * exp(x) - Alpha is the same real number as Alpha * expm1(x); expm1 avoids float64's
    # own cancellation for |x| < 1e-8, which would make the reference, not the operator, wrong.
    a, g = c_float(alpha), c_float(gamma)
    x = read(x)
    with np.errstate(over="ignore", invalid="ignore"):
        return [np.where(x > 0, g * x, g * (a * np.expm1(np.minimum(x, 0.0))))]


def _python_float_mod(a, b, flush=False):
    # Python's float %, from its definition: r = fmod(a, b); if r and sign(r) != sign(b): r += b;
    # a zero r takes the sign of b. Python raises for b == 0; DirectML's formula gives NaN there.
    # For FLOAT32 the remainder is a math result: a denormal one is flushed (SEMANTICS.md 2).
    if b == 0 or math.isnan(a) or math.isnan(b) or math.isinf(a):
        return math.nan
    r = math.fmod(a, b)
    if flush and abs(r) < F32_TINY:
        r = 0.0
    if r:
        if (b < 0) != (r < 0):
            r += b
    else:
        r = math.copysign(0.0, b)
    return r


def element_wise_modulus_floor(a, b):
    # f(a, b) = a - (b * floor(a / b)), "the same results as the Python modulus".
    a_np, b_np = np.asarray(a), np.asarray(b)
    if np.issubdtype(a_np.dtype, np.integer):
        # Python's int %, exact; DirectML leaves a zero divisor undefined: dmljax gives 0.
        out = [0 if int(y) == 0 else int(x) % int(y) for x, y in zip(a_np.ravel(), b_np.ravel())]
        return [np.array(out, dtype=object).reshape(a_np.shape)]
    fa, fb = read(a_np), read(b_np)
    flush = a_np.dtype == np.float32
    out = [_python_float_mod(x, y, flush) for x, y in zip(fa.ravel(), fb.ravel())]
    return [np.array(out, np.float64).reshape(fa.shape)]


def _max_num(x, m):
    # max(x, Min) under Direct3D's rule: one NaN operand gives the other; a tie gives Min.
    if math.isnan(m):
        return x
    with np.errstate(invalid="ignore"):
        return np.where(x > m, x, m)


def element_wise_threshold(x, min, scale_bias=None):
    # f(x) = max(g(x), Min), g(x) = x * Scale + Bias when a ScaleBias is given.
    x_np = np.asarray(x)
    if np.issubdtype(x_np.dtype, np.integer):
        m = int_attr(min, x_np.dtype)
        if scale_bias is None:
            return [np.maximum(x_np.astype(object), m)]
        # dmljax's choice: g(x) computed in FLOAT32, truncated toward zero and saturated.
        info = np.iinfo(x_np.dtype)
        outs = []
        x32 = x_np.astype(np.float32).astype(np.float64)  # the input read as FLOAT32
        for g in scale_bias_candidates(x32, scale_bias, np.float32):
            g = g.astype(np.float32).astype(np.float64)  # the FLOAT32 result
            g = np.where(np.isnan(g), 0.0, np.clip(np.trunc(g), float(info.min), float(info.max)))
            outs.append(np.maximum(g.astype(np.int64).astype(object), m))
        return outs
    return [_max_num(g, c_float(min)) for g in scale_bias_candidates(read(x_np), scale_bias, x_np.dtype)]


def _pow(g, e):
    # pow(x, Exponent): "Negative bases are supported for integral exponents, otherwise this
    # operator returns NaN." Elsewhere C99 (Annex F) special values, which numpy's float64 power
    # follows: pow(x, 0) = 1, pow(1, y) = 1, pow(+-0, y < 0 odd) = +-inf, pow(-1, +-inf) = 1, ...
    with np.errstate(all="ignore"):
        out = np.power(g, e)
    if math.isnan(e) or not (math.isinf(e) or e == math.floor(e)):  # non-integral: negative base -> NaN
        out = np.where(g < 0, np.nan, out)
    return out


def element_wise_constant_pow(x, exponent, scale_bias=None):
    x_np = np.asarray(x)
    e = c_float(exponent)
    return [_pow(g, e) for g in scale_bias_candidates(read(x_np), scale_bias, x_np.dtype)]


def element_wise_logical_less_than(a, b):
    # f(a, b) = (a < b): 1 for true, 0 for false.
    a_np, b_np = np.asarray(a), np.asarray(b)
    if np.issubdtype(a_np.dtype, np.integer):
        return [np.array([int(x) < int(y) for x, y in zip(a_np.ravel(), b_np.ravel())],
                         dtype=object).reshape(a_np.shape).astype(np.int64)]
    with np.errstate(invalid="ignore"):
        return [(read(a_np) < read(b_np)).astype(np.int64)]


def element_wise_multiply(a, b):
    # f(a, b) = a * b. Integer products wrap around (two's complement) in the tensor's type.
    a_np, b_np = np.asarray(a), np.asarray(b)
    if np.issubdtype(a_np.dtype, np.integer):
        bits = a_np.dtype.itemsize * 8
        prod = [int(x) * int(y) for x, y in zip(a_np.ravel(), b_np.ravel())]
        info = np.iinfo(a_np.dtype)
        wrapped = [((p - int(info.min)) % (1 << bits)) + int(info.min) for p in prod]
        return [np.array(wrapped, dtype=object).reshape(a_np.shape)]
    with np.errstate(over="ignore", invalid="ignore"):
        return [read(a_np) * read(b_np)]


REFERENCES = {
    "DML_OPERATOR_ELEMENT_WISE_IF": element_wise_if,
    "DML_OPERATOR_ACTIVATION_SCALED_ELU": activation_scaled_elu,
    "DML_OPERATOR_ELEMENT_WISE_MODULUS_FLOOR": element_wise_modulus_floor,
    "DML_OPERATOR_ELEMENT_WISE_THRESHOLD": element_wise_threshold,
    "DML_OPERATOR_ELEMENT_WISE_CONSTANT_POW": element_wise_constant_pow,
    "DML_OPERATOR_ELEMENT_WISE_LOGICAL_LESS_THAN": element_wise_logical_less_than,
    "DML_OPERATOR_ELEMENT_WISE_MULTIPLY": element_wise_multiply,
}
