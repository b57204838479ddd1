"""What to measure for each operator: the attributes to call it with and the formulas to compare
it with (jax.numpy, PyTorch, ONNX Runtime), derived from the registry.

Every registered operator is a case. Its comparators come from, in this order:
- ``OPERATOR_RECIPES``: an entry for an operator whose formula is its own (IF, SCALED_ELU,
  MODULUS_FLOOR, ...), with the attribute values to use where the operator requires some;
- its family's recipe (``FAMILY_RECIPES``): the formula the family's operators share, e.g. an
  element-wise operator is ``jnp.<fn>(*inputs)``, ``torch.<fn>`` and ONNX's ``<Fn>``, with
  ``fn`` read from the family's name table or, for element-wise arithmetic and math, the
  operator's own name in lower case (``ELEMENT_WISE_EXP`` -> ``jnp.exp``).
A family recipe applies only to operators whose attributes all default to "absent" (a ScaleBias,
a fused activation), since it does not know what the others mean. An operator with neither is
measured against the copy alone; one that also requires attributes is skipped with a note.

Comparator formulas take the operator's arrays positionally and its attributes as keywords, in
the operator's Python spelling (``min``, ``exponent``), defaults included, so one formula serves
every attribute value (the chain of ``chain.py`` calls them with its own).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable, Mapping, NamedTuple, Sequence

import jax
import jax.numpy as jnp
import numpy as np

import dmljax
from dmljax._src.errors import quote
from dmljax._src.spec import REQUIRED

__all__ = ["Recipe", "OnnxNode", "Case", "OPERATOR_RECIPES", "FAMILY_RECIPES", "recipe_for", "resolve",
           "resolve_all", "UnknownNames", "select"]


class OnnxNode(NamedTuple):
    """A one-node ONNX graph: op type, node attributes, constant inputs appended after the tensors
    (in the data type), and which inputs and output are ONNX bools (DirectML's UINT8 0/1)."""

    op_type: str
    attrs: Mapping = {}
    consts: tuple = ()
    bool_inputs: tuple[int, ...] = ()
    bool_output: bool = False


@dataclasses.dataclass(frozen=True)
class Recipe:
    """How to benchmark one operator.

    jnp: ``(*arrays, **attrs) -> array``, the formula a JAX user would write.
    torch: ``(torch, *tensors, **attrs) -> tensor``.
    onnx: ``(**attrs) -> OnnxNode``.
    attrs: values for the operator's attributes (every required one), for float types;
    int_attrs: the values for integer types, where the float ones don't fit (None: ``attrs``).
    inputs: how each input tensor is drawn (inputs.KINDS, or ``index@A``: INT32 indices into
      axis A of the first input), or None for the default by type.
    onnx_note: a sentence for the report on how the ONNX graph differs (when ONNX Runtime runs).
    shapes: ``n -> shapes``, the input shapes for about ``n`` elements, where the layouts of
      inputs.py don't suit the operator (a softmax over rows, a convolution's channels); None:
      the first layout the record validates.
    shape_attrs: ``shapes -> attributes`` computed from the input shapes (a slice's sizes).
    dtype_attrs: attribute values for one data type (CAST's output type), over ``attrs``.
    variants: label -> attributes: the operator is measured once per label (REDUCE's functions),
      as ``OPERATOR[label]``.
    call: ``(op, *arrays, **attrs)``, how the operator takes the arrays where it is not
      positionally (JOIN's list); None: ``op(*arrays, **attrs)``.
    """

    jnp: Callable | None = None
    torch: Callable | None = None
    onnx: Callable | None = None
    attrs: Mapping = dataclasses.field(default_factory=dict)
    int_attrs: Mapping | None = None
    inputs: tuple[str, ...] | None = None
    onnx_note: str = ""
    shapes: Callable | None = None
    shape_attrs: Callable | None = None
    dtype_attrs: Mapping = dataclasses.field(default_factory=dict)
    variants: Mapping = dataclasses.field(default_factory=dict)
    call: Callable | None = None


def _like(value, x):
    """A scalar attribute as a formula uses it: a Python float for float tensors (weakly typed, no
    promotion), converted to the tensor's type for integers (truncation, as DirectML does)."""
    dt = np.dtype(x.dtype)
    return value if dt.kind == "f" else np.asarray(value, np.float64).astype(dt)[()]


# ------------------------------------------------------------------------------------------
# Operators whose formula is their own
def _selu(x, *, alpha, gamma, **_):
    return jnp.where(x > 0, gamma * x, gamma * (alpha * jnp.exp(x) - alpha))


def _selu_torch(t, x, *, alpha, gamma, **_):
    return t.where(x > 0, gamma * x, gamma * (alpha * t.exp(x) - alpha))


def _elu(x, *, alpha, **_):
    return jnp.where(x > 0, x, alpha * (jnp.exp(x) - 1.0))


def _is_int(x) -> bool:
    return np.dtype(x.dtype).kind in "iu"


def _divide(a, b, **_):  # DIVIDE truncates integer quotients: lax.div, not jnp's floor division
    return jax.lax.div(a, b) if _is_int(a) else a / b


def _divide_torch(t, a, b, **_):
    return t.div(a, b, rounding_mode="trunc") if not a.is_floating_point() else a / b


def _mean(a, b, **_):
    return (a + b) // 2 if _is_int(a) else (a + b) * 0.5


def _clip_grad(x, dy, *, min, max, **_):
    return jnp.where((x > _like(min, x)) & (x < _like(max, x)), dy, jnp.zeros_like(dy))


def _clip_grad_torch(t, x, dy, *, min, max, **_):
    return t.where((x > min) & (x < max), dy, t.zeros_like(dy))


def _value_scale(x, *, scale, bias, **_):
    b = jnp.asarray(bias, np.float32).reshape((1, -1, 1, 1)).astype(x.dtype)
    return x * _like(scale, x) + b


# ------------------------------------------------------------------------------------------
# Twins of the operators that aren't element-wise: the jax.numpy / lax formula a JAX user would
# write, at the shapes and attribute values the recipe gives (``shapes``: about n elements each).
def _side(n: int, parts: int = 1) -> int:
    """The side of a square of about ``n / parts`` elements (at least 2)."""
    return max(math.isqrt(max(n // parts, 1)), 2)


def _matrix(n: int):  # one (rows, columns) input
    return ((_side(n), _side(n)),)


def _two_matrices(n: int):
    return ((_side(n), _side(n)),) * 2


def _channels(n: int) -> int:
    """Channels of the NCHW inputs: 16, or 4 at tiny sizes (the tests', the plan's probe)."""
    return 16 if n >= 1 << 12 else 4


def _images(n: int):  # one NCHW input
    c = _channels(n)
    h = _side(n, c)
    return ((1, c, h, h),)


def _rows_and_indices(n: int):  # a (rows, columns) input and a row index per row
    s = _side(n)
    return ((s, s), (1, s))


_REDUCE_TWINS = {
    "SUM": lambda x, a: jnp.sum(x, a, keepdims=True),
    "AVERAGE": lambda x, a: jnp.mean(x, a, keepdims=True),
    "MAX": lambda x, a: jnp.max(x, a, keepdims=True),
    "MIN": lambda x, a: jnp.min(x, a, keepdims=True),
    "MULTIPLY": lambda x, a: jnp.prod(x, a, keepdims=True),
    "L1": lambda x, a: jnp.sum(jnp.abs(x), a, keepdims=True),
    "L2": lambda x, a: jnp.sqrt(jnp.sum(x * x, a, keepdims=True)),
    "SUM_SQUARE": lambda x, a: jnp.sum(x * x, a, keepdims=True),
    "LOG_SUM": lambda x, a: jnp.log(jnp.sum(x, a, keepdims=True)),
    "LOG_SUM_EXP": lambda x, a: jax.nn.logsumexp(x, a, keepdims=True),
    "ARGMAX": lambda x, a: jnp.argmax(x, a[0], keepdims=True).astype(jnp.uint32),
    "ARGMIN": lambda x, a: jnp.argmin(x, a[0], keepdims=True).astype(jnp.uint32),
}


def _reduce(x, *, function, axes, **_):
    return _REDUCE_TWINS[str(getattr(function, "name", function))](x, tuple(axes))


def _attention_shapes(n: int):
    """Query, key and value (batch, 256 tokens, 8 heads x 64) for about n elements each; tiny
    sizes: (1, 8, 2 x 4)."""
    t, h, d = (256, 8, 64) if n >= 1 << 17 else (8, 2, 4)
    return ((max(n // (t * h * d), 1), t, h * d),) * 3


def _attention_attrs(shapes):
    heads = 8 if shapes[0][2] == 512 else 2
    return {"head_count": heads, "scale": 1 / math.sqrt(shapes[0][2] // heads)}


def _attention(q, k, v, *, head_count, scale, **_):
    """Softmax(Q K^T scale) V per head, and the key and value per head (the operator's present
    key and value outputs). Written out: jax.nn.dot_product_attention refuses FLOAT16 on a CPU."""
    b, t, hd = q.shape
    q, k, v = (x.reshape(b, t, head_count, hd // head_count) for x in (q, k, v))
    hi = _true_float32(q)
    p = jax.nn.softmax(jnp.einsum("bqhd,bkhd->bhqk", q, k, precision=hi) * scale, axis=-1)
    out = jnp.einsum("bhqk,bkhd->bqhd", p, v, precision=hi).reshape(b, t, hd)
    return out, k.transpose(0, 2, 1, 3), v.transpose(0, 2, 1, 3)


def _hardmax(x, *, axis=-1, **_):
    return jax.nn.one_hot(jnp.argmax(x, axis), x.shape[axis], dtype=x.dtype, axis=axis)


def _mvn(x, scale=None, bias=None, *, axes, epsilon, normalize_variance=True, **_):
    mean = jnp.mean(x, axes, keepdims=True)
    y = x - mean
    if normalize_variance:
        y = y / jnp.sqrt(jnp.var(x, axes, keepdims=True) + epsilon)
    return y


def _batch_norm(x, mean, variance, scale, bias, *, epsilon, **_):
    return (x - mean) / jnp.sqrt(variance + epsilon) * scale + bias


def _batch_norm_training(x, scale, bias, *, epsilon, **_):
    mean = jnp.mean(x, (0, 2, 3), keepdims=True)
    var = jnp.var(x, (0, 2, 3), keepdims=True)
    return (x - mean) / jnp.sqrt(var + epsilon) * scale + bias, mean, var


def _lrn(x, *, local_size, alpha, beta, bias, **_):
    half = (local_size - 1) // 2
    window = jax.lax.reduce_window(x * x, 0.0, jax.lax.add, (1, local_size, 1, 1), (1, 1, 1, 1),
                                   ((0, 0), (half, local_size - 1 - half), (0, 0), (0, 0)))
    return x / (bias + alpha / local_size * window) ** beta


def _true_float32(x):
    """The precision that gives FLOAT32 products, as DirectML's (a GPU's default would take TF32)."""
    return jax.lax.Precision.HIGHEST if x.dtype == jnp.float32 else None


def _conv(x, w, *, strides, start_padding, end_padding, **_):
    return jax.lax.conv_general_dilated(x, w, tuple(strides), tuple(zip(start_padding, end_padding)),
                                        precision=_true_float32(x))


def _pool(kind):
    def f(x, *, window_size, strides, start_padding, end_padding, p=2, **_):
        win, step = (1, 1) + tuple(window_size), (1, 1) + tuple(strides)
        pads = ((0, 0), (0, 0)) + tuple(zip(start_padding, end_padding))
        if kind == "max":
            return jax.lax.reduce_window(x, -jnp.inf, jax.lax.max, win, step, pads)
        if kind == "average":
            return jax.lax.reduce_window(x, 0.0, jax.lax.add, win, step, pads) / math.prod(window_size)
        return jnp.sqrt(jax.lax.reduce_window(x * x, 0.0, jax.lax.add, win, step, pads))
    return f


def _pool_attrs(**more):
    return {"window_size": (2, 2), "strides": (2, 2), "start_padding": (0, 0), "end_padding": (0, 0), **more}


def _top_k(x, *, k, **_):
    v, i = jax.lax.top_k(x, k)
    return v, i.astype(jnp.uint32)


def _space_to_depth(x, *, block_size, **_):
    n, c, h, w = x.shape
    b = block_size
    return x.reshape(n, c, h // b, b, w // b, b).transpose(0, 3, 5, 1, 2, 4).reshape(n, c * b * b, h // b, w // b)


def _depth_to_space(x, *, block_size, **_):
    n, c, h, w = x.shape
    b = block_size
    return x.reshape(n, b, b, c // (b * b), h, w).transpose(0, 3, 4, 1, 5, 2).reshape(n, c // (b * b), h * b, w * b)


def _resize(x, *, interpolation_mode, scales=None, scale_size=None, **_):
    factors = tuple(scales) if scales is not None else (1, 1, 2, 2)
    shape = tuple(int(d * f) for d, f in zip(x.shape, factors))
    mode = "nearest" if "NEAREST" in str(getattr(interpolation_mode, "name", interpolation_mode)) else "linear"
    return jax.image.resize(x, shape, mode)


_PAD_MODES = {"CONSTANT": "constant", "EDGE": "edge", "REFLECTION": "reflect", "SYMMETRIC": "symmetric"}


def _pad(x, *, padding_mode, start_padding, end_padding, padding_value=0, **_):
    mode = _PAD_MODES[str(getattr(padding_mode, "name", padding_mode))]
    widths = tuple(zip(start_padding, end_padding))
    return jnp.pad(x, widths, mode, constant_values=padding_value) if mode == "constant" else jnp.pad(x, widths, mode)


def _quantize(x, scale, *, output_data_type=None, **_):
    return jnp.clip(jnp.round(x / scale), -128, 127).astype(jnp.int8)


def _dequantize(x, scale, **_):
    return x.astype(scale.dtype) * scale


OPERATOR_RECIPES: dict[str, Recipe] = {
    "ELEMENT_WISE_IF": Recipe(
        jnp=lambda c, a, b, **_: jnp.where(c != 0, a, b),
        torch=lambda t, c, a, b, **_: t.where(c != 0, a, b),
        onnx=lambda **_: OnnxNode("Where", bool_inputs=(0,)),
        onnx_note="ONNX Runtime's Where takes a bool condition: it is fed the UINT8 condition cast to bool."),
    "ACTIVATION_SCALED_ELU": Recipe(
        jnp=_selu, torch=_selu_torch,
        onnx=lambda alpha, gamma, **_: OnnxNode("Selu", {"alpha": alpha, "gamma": gamma})),
    "ACTIVATION_ELU": Recipe(
        jnp=_elu, torch=lambda t, x, *, alpha, **_: t.nn.functional.elu(x, alpha),
        onnx=lambda alpha, **_: OnnxNode("Elu", {"alpha": alpha})),
    "ELEMENT_WISE_MODULUS_FLOOR": Recipe(
        jnp=lambda a, b, **_: jnp.mod(a, b),
        torch=lambda t, a, b, **_: t.remainder(a, b),
        onnx=lambda **_: OnnxNode("Mod", {"fmod": 0}),
        inputs=("numerator", "divisor")),
    "ELEMENT_WISE_THRESHOLD": Recipe(
        attrs={"min": 0.0},
        jnp=lambda x, *, min, **_: jnp.maximum(x, _like(min, x)),
        torch=lambda t, x, *, min, **_: t.clamp_min(x, min),
        onnx=lambda min, **_: OnnxNode("Max", consts=(min,))),
    "ELEMENT_WISE_CONSTANT_POW": Recipe(
        attrs={"exponent": 3.0},
        jnp=lambda x, *, exponent, **_: x ** exponent,
        torch=lambda t, x, *, exponent, **_: t.pow(x, exponent),
        onnx=lambda exponent, **_: OnnxNode("Pow", consts=(exponent,))),
    "ELEMENT_WISE_CLIP": Recipe(
        attrs={"min": -0.5, "max": 0.5}, int_attrs={"min": 10.0, "max": 50.0},
        jnp=lambda x, *, min, max, **_: jnp.clip(x, _like(min, x), _like(max, x)),
        torch=lambda t, x, *, min, max, **_: t.clamp(x, min, max),
        onnx=lambda min, max, **_: OnnxNode("Clip", consts=(min, max))),
    "ELEMENT_WISE_CLIP1": Recipe(
        attrs={"min": -0.5, "max": 0.5}, int_attrs={"min": 10, "max": 50},
        jnp=lambda x, *, min, max, **_: jnp.clip(x, _like(min, x), _like(max, x)),
        torch=lambda t, x, *, min, max, **_: t.clamp(x, min, max),
        onnx=lambda min, max, **_: OnnxNode("Clip", consts=(min, max))),
    "ELEMENT_WISE_DIVIDE": Recipe(
        jnp=_divide, torch=_divide_torch, onnx=lambda **_: OnnxNode("Div"), inputs=("numerator", "divisor")),
    "ELEMENT_WISE_MODULUS_TRUNCATE": Recipe(
        jnp=lambda a, b, **_: jnp.fmod(a, b),
        torch=lambda t, a, b, **_: t.fmod(a, b),
        onnx=lambda **_: OnnxNode("Mod", {"fmod": 1}),
        inputs=("numerator", "divisor")),
    "ELEMENT_WISE_RECIP": Recipe(
        jnp=lambda x, **_: jnp.reciprocal(x), torch=lambda t, x, **_: t.reciprocal(x),
        onnx=lambda **_: OnnxNode("Reciprocal"), inputs=("divisor",)),
    "ELEMENT_WISE_SQRT": Recipe(
        jnp=lambda x, **_: jnp.sqrt(x), torch=lambda t, x, **_: t.sqrt(x),
        onnx=lambda **_: OnnxNode("Sqrt"), inputs=("positive",)),
    "ELEMENT_WISE_LOG": Recipe(
        jnp=lambda x, **_: jnp.log(x), torch=lambda t, x, **_: t.log(x),
        onnx=lambda **_: OnnxNode("Log"), inputs=("positive",)),
    "ELEMENT_WISE_ACOSH": Recipe(
        jnp=lambda x, **_: jnp.arccosh(x), torch=lambda t, x, **_: t.acosh(x),
        onnx=lambda **_: OnnxNode("Acosh"), inputs=("positive",)),
    "ELEMENT_WISE_ASIN": Recipe(
        jnp=lambda x, **_: jnp.arcsin(x), torch=lambda t, x, **_: t.asin(x),
        onnx=lambda **_: OnnxNode("Asin"), inputs=("unit",)),
    "ELEMENT_WISE_ACOS": Recipe(
        jnp=lambda x, **_: jnp.arccos(x), torch=lambda t, x, **_: t.acos(x),
        onnx=lambda **_: OnnxNode("Acos"), inputs=("unit",)),
    "ELEMENT_WISE_ATANH": Recipe(
        jnp=lambda x, **_: jnp.arctanh(x), torch=lambda t, x, **_: t.atanh(x),
        onnx=lambda **_: OnnxNode("Atanh"), inputs=("unit",)),
    "ELEMENT_WISE_ERF": Recipe(
        jnp=lambda x, **_: jax.scipy.special.erf(x), torch=lambda t, x, **_: t.erf(x),
        onnx=lambda **_: OnnxNode("Erf")),
    "ELEMENT_WISE_POW": Recipe(
        jnp=lambda a, e, **_: jnp.power(a, e), torch=lambda t, a, e, **_: t.pow(a, e),
        onnx=lambda **_: OnnxNode("Pow"), inputs=("positive", "shift")),
    "ELEMENT_WISE_MEAN": Recipe(jnp=_mean, torch=lambda t, a, b, **_: _mean(a, b)),
    "ELEMENT_WISE_DIFFERENCE_SQUARE": Recipe(
        jnp=lambda a, b, **_: jnp.square(a - b), torch=lambda t, a, b, **_: t.square(a - b)),
    "ELEMENT_WISE_IS_INFINITY": Recipe(
        jnp=lambda x, **_: jnp.isinf(x).astype(jnp.uint8), torch=lambda t, x, **_: t.isinf(x).to(t.uint8),
        onnx=lambda **_: OnnxNode("IsInf", bool_output=True)),
    "ELEMENT_WISE_ROUND": Recipe(
        jnp=lambda x, **_: jnp.round(x), torch=lambda t, x, **_: t.round(x),
        onnx=lambda **_: OnnxNode("Round")),
    "ELEMENT_WISE_BIT_COUNT": Recipe(
        jnp=lambda x, **_: jax.lax.population_count(x).astype(jnp.uint8)),
    "ELEMENT_WISE_BIT_SHIFT_LEFT": Recipe(
        jnp=lambda a, b, **_: jnp.left_shift(a, b), torch=lambda t, a, b, **_: t.bitwise_left_shift(a, b),
        inputs=("normal", "shift")),
    "ELEMENT_WISE_BIT_SHIFT_RIGHT": Recipe(
        jnp=lambda a, b, **_: jnp.right_shift(a, b), torch=lambda t, a, b, **_: t.bitwise_right_shift(a, b),
        inputs=("normal", "shift")),
    "ELEMENT_WISE_CLIP_GRAD": Recipe(
        attrs={"min": -0.5, "max": 0.5}, int_attrs={"min": 10.0, "max": 50.0},
        jnp=_clip_grad, torch=_clip_grad_torch),
    "ELEMENT_WISE_CLIP_GRAD1": Recipe(
        attrs={"min": -0.5, "max": 0.5}, int_attrs={"min": 10, "max": 50},
        jnp=_clip_grad, torch=_clip_grad_torch),
    # Activations with attributes: the formula a JAX user writes (jax.nn where it has one with
    # the same meaning), with the pages' typical values.
    "ACTIVATION_LEAKY_RELU": Recipe(
        attrs={"alpha": 0.01}, jnp=lambda x, *, alpha, **_: jax.nn.leaky_relu(x, alpha),
        torch=lambda t, x, *, alpha, **_: t.nn.functional.leaky_relu(x, alpha),
        onnx=lambda alpha, **_: OnnxNode("LeakyRelu", {"alpha": alpha})),
    "ACTIVATION_LINEAR": Recipe(
        attrs={"alpha": 2.0, "beta": 0.5}, jnp=lambda x, *, alpha, beta, **_: alpha * x + beta),
    "ACTIVATION_THRESHOLDED_RELU": Recipe(
        attrs={"alpha": 1.0}, jnp=lambda x, *, alpha, **_: jnp.where(x > alpha, x, jnp.zeros_like(x)),
        onnx=lambda alpha, **_: OnnxNode("ThresholdedRelu", {"alpha": alpha})),
    "ACTIVATION_HARD_SIGMOID": Recipe(
        attrs={"alpha": 0.2, "beta": 0.5}, jnp=lambda x, *, alpha, beta, **_: jnp.clip(alpha * x + beta, 0.0, 1.0),
        onnx=lambda alpha, beta, **_: OnnxNode("HardSigmoid", {"alpha": alpha, "beta": beta})),
    "ACTIVATION_SHRINK": Recipe(
        attrs={"bias": 0.5, "threshold": 0.5}, int_attrs={"bias": 1.0, "threshold": 5.0},
        jnp=lambda x, *, bias, threshold, **_: jnp.where(
            x > _like(threshold, x), x - _like(bias, x),
            jnp.where(x < -_like(threshold, x), x + _like(bias, x), jnp.zeros_like(x)))),
    "ACTIVATION_CELU": Recipe(
        attrs={"alpha": 1.0}, jnp=lambda x, *, alpha, **_: jax.nn.celu(x, alpha),
        onnx=lambda alpha, **_: OnnxNode("Celu", {"alpha": alpha})),
    "ACTIVATION_SCALED_TANH": Recipe(
        attrs={"alpha": 1.7159, "beta": 0.6667}, jnp=lambda x, *, alpha, beta, **_: alpha * jnp.tanh(beta * x)),
    "ACTIVATION_SOFTPLUS": Recipe(
        attrs={"steepness": 1.0}, jnp=lambda x, *, steepness, **_: jax.nn.softplus(steepness * x) / steepness,
        onnx=lambda **_: OnnxNode("Softplus")),
    "ACTIVATION_PARAMETRIC_SOFTPLUS": Recipe(
        attrs={"alpha": 2.0, "beta": 0.5}, jnp=lambda x, *, alpha, beta, **_: alpha * jax.nn.softplus(beta * x)),
    "ACTIVATION_GELU": Recipe(
        jnp=lambda x, **_: jax.nn.gelu(x, approximate=False),
        torch=lambda t, x, **_: t.nn.functional.gelu(x), onnx=lambda **_: OnnxNode("Gelu")),
    "ACTIVATION_SWISH": Recipe(
        attrs={"sigmoid_input_scale": 1.0},
        jnp=lambda x, *, sigmoid_input_scale, **_: x * jax.nn.sigmoid(sigmoid_input_scale * x)),
    "ACTIVATION_HARD_SWISH": Recipe(
        attrs={"alpha": 1 / 6, "beta": 0.5},
        jnp=lambda x, *, alpha, beta, **_: x * jnp.clip(alpha * x + beta, 0.0, 1.0),
        onnx=lambda **_: OnnxNode("HardSwish")),
    "ACTIVATION_PARAMETERIZED_RELU": Recipe(
        jnp=lambda x, slope, **_: jnp.where(x >= 0, x, slope * x),
        onnx=lambda **_: OnnxNode("PRelu")),
    "ACTIVATION_RELU_GRAD": Recipe(
        jnp=lambda x, dy, **_: jnp.where(x > 0, dy, jnp.zeros_like(dy))),
    "VALUE_SCALE_2D": Recipe(
        attrs={"scale": 0.5, "channel_count": 1, "bias": (0.25,)},
        jnp=_value_scale),
    # Softmax and the normalizations over rows: a (rows, columns) input, the last axis.
    "ACTIVATION_SOFTMAX": Recipe(shapes=_matrix, jnp=lambda x, **_: jax.nn.softmax(x, axis=-1)),
    "ACTIVATION_SOFTMAX1": Recipe(shapes=_matrix, attrs={"axes": (1,)},
                                  jnp=lambda x, *, axes, **_: jax.nn.softmax(x, axis=tuple(axes))),
    "ACTIVATION_LOG_SOFTMAX": Recipe(shapes=_matrix, jnp=lambda x, **_: jax.nn.log_softmax(x, axis=-1)),
    "ACTIVATION_LOG_SOFTMAX1": Recipe(shapes=_matrix, attrs={"axes": (1,)},
                                      jnp=lambda x, *, axes, **_: jax.nn.log_softmax(x, axis=tuple(axes))),
    "ACTIVATION_HARDMAX": Recipe(shapes=_matrix, jnp=lambda x, **_: _hardmax(x)),
    "ACTIVATION_HARDMAX1": Recipe(shapes=_matrix, attrs={"axes": (1,)},
                                  jnp=lambda x, *, axes, **_: _hardmax(x, axis=axes[0])),
    # Reductions over the rows of a (rows, columns) input, one measurement per function.
    "REDUCE": Recipe(shapes=_matrix, attrs={"axes": (1,)}, jnp=_reduce,
                     variants={f: {"function": f} for f in _REDUCE_TWINS}),
    "ARGMAX": Recipe(shapes=_matrix, attrs={"axes": (1,)},
                     jnp=lambda x, *, axes, **_: _REDUCE_TWINS["ARGMAX"](x, tuple(axes))),
    "ARGMIN": Recipe(shapes=_matrix, attrs={"axes": (1,)},
                     jnp=lambda x, *, axes, **_: _REDUCE_TWINS["ARGMIN"](x, tuple(axes))),
    "CUMULATIVE_SUMMATION": Recipe(shapes=_matrix, attrs={"axis": 1},
                                   jnp=lambda x, *, axis, **_: jnp.cumsum(x, axis)),
    "CUMULATIVE_PRODUCT": Recipe(shapes=_matrix, attrs={"axis": 1},
                                 jnp=lambda x, *, axis, **_: jnp.cumprod(x, axis)),
    "TOP_K": Recipe(shapes=_matrix, attrs={"axis": 1, "k": 8}, jnp=_top_k),
    "TOP_K1": Recipe(shapes=_matrix, attrs={"axis": 1, "k": 8, "axis_direction": "DECREASING"}, jnp=_top_k),
    # Normalizations: NCHW images of 16 channels (4 at tiny sizes; LP_NORMALIZATION: rows).
    "MEAN_VARIANCE_NORMALIZATION": Recipe(shapes=_images, jnp=lambda x, **a: _mvn(x, axes=(2, 3), **a)),
    "MEAN_VARIANCE_NORMALIZATION1": Recipe(shapes=_images, attrs={"axes": (2, 3)}, jnp=_mvn),
    "MEAN_VARIANCE_NORMALIZATION2": Recipe(shapes=_images, attrs={"axes": (2, 3)}, jnp=_mvn),
    "BATCH_NORMALIZATION": Recipe(
        shapes=lambda n: _images(n) + ((1, _channels(n), 1, 1),) * 4, inputs=("normal", "normal", "positive", "normal", "normal"),
        jnp=_batch_norm),
    "BATCH_NORMALIZATION_TRAINING": Recipe(
        shapes=lambda n: _images(n) + ((1, _channels(n), 1, 1),) * 2, jnp=_batch_norm_training),
    "LP_NORMALIZATION": Recipe(
        shapes=_matrix, attrs={"axis": 1},
        jnp=lambda x, *, axis, epsilon, **_: x / jnp.sqrt(jnp.sum(x * x, axis, keepdims=True) + epsilon)),
    "LOCAL_RESPONSE_NORMALIZATION": Recipe(shapes=_images, attrs={"local_size": 5}, jnp=_lrn),
    # GEMM and convolution: square matrices; 16 -> 16 channels through a 3 x 3 filter, padded.
    "GEMM": Recipe(shapes=_two_matrices,
                   jnp=lambda a, b, *, alpha, **_: alpha * jnp.matmul(a, b, precision=_true_float32(a))),
    "CONVOLUTION": Recipe(
        shapes=lambda n: _images(n) + ((_channels(n), _channels(n), 3, 3),),
        attrs={"strides": (1, 1), "dilations": (1, 1), "start_padding": (1, 1), "end_padding": (1, 1),
               "output_padding": (0, 0)},
        jnp=_conv),
    # Pooling: 2 x 2 windows, stride 2, over NCHW images.
    "AVERAGE_POOLING": Recipe(shapes=_images, attrs=_pool_attrs(), jnp=_pool("average")),
    "AVERAGE_POOLING1": Recipe(shapes=_images, attrs=_pool_attrs(dilations=(1, 1)), jnp=_pool("average")),
    "MAX_POOLING": Recipe(shapes=_images, attrs=_pool_attrs(), jnp=_pool("max")),
    "LP_POOLING": Recipe(shapes=_images, attrs=_pool_attrs(), jnp=_pool("lp")),
    "LP_POOLING1": Recipe(shapes=_images, attrs=_pool_attrs(dilations=(1, 1)), jnp=_pool("lp")),
    # Gathers and scatters: rows of a (rows, columns) input picked by random indices.
    "GATHER": Recipe(shapes=_rows_and_indices, inputs=("normal", "index@0"), attrs={"axis": 0, "index_dimensions": 1},
                     jnp=lambda x, i, *, axis, **_: jnp.take(x, i[0], axis)),
    "GATHER_ELEMENTS": Recipe(shapes=_two_matrices, inputs=("normal", "index@0"), attrs={"axis": 0},
                              jnp=lambda x, i, *, axis, **_: jnp.take_along_axis(x, i, axis)),
    "GATHER_ND": Recipe(shapes=lambda n: ((_side(n), _side(n)), (_side(n), 1)), inputs=("normal", "index@0"),
                        attrs={"input_dimension_count": 2, "indices_dimension_count": 2},
                        jnp=lambda x, i, **_: x[i[:, 0]]),
    "GATHER_ND1": Recipe(shapes=lambda n: ((_side(n), _side(n)), (_side(n), 1)), inputs=("normal", "index@0"),
                         attrs={"input_dimension_count": 2, "indices_dimension_count": 2, "batch_dimension_count": 0},
                         jnp=lambda x, i, **_: x[i[:, 0]]),
    "SCATTER_ELEMENTS": Recipe(
        shapes=lambda n: ((_side(n), _side(n)),) * 3, inputs=("normal", "index@0", "normal"), attrs={"axis": 0},
        jnp=lambda x, i, u, *, axis, **_: jnp.put_along_axis(x, i, u, axis, inplace=False)),
    "SCATTER_ND": Recipe(
        shapes=lambda n: ((_side(n), _side(n)), (_side(n), 1), (_side(n), _side(n))),
        inputs=("normal", "index@0", "normal"), attrs={"input_dimension_count": 2, "indices_dimension_count": 2},
        jnp=lambda x, i, u, **_: x.at[i[:, 0]].set(u)),
    "ONE_HOT": Recipe(
        shapes=lambda n: ((_side(n), 1), (1, 2)), inputs=("index@0", "normal"),
        attrs={"axis": 1}, shape_attrs=lambda s: {"output_sizes": (s[0][0], s[0][0])},
        jnp=lambda i, v, **_: jnp.where(i == jnp.arange(i.shape[0]), v[0, 1], v[0, 0])),
    # Data movement
    "CAST": Recipe(attrs={"output_data_type": "FLOAT32"}, dtype_attrs={"FLOAT32": {"output_data_type": "FLOAT16"}},
                   jnp=lambda x, *, output_data_type, **_: x.astype(dmljax.DataType.parse(str(
                       getattr(output_data_type, "name", output_data_type))).dtype)),
    "SLICE": Recipe(
        shapes=_matrix, shape_attrs=lambda s: {"offsets": (0, 0), "sizes": (s[0][0], s[0][1] // 2), "strides": (1, 2)},
        jnp=lambda x, **_: x[:, ::2]),
    "SLICE1": Recipe(
        shapes=_matrix, shape_attrs=lambda s: {"input_window_offsets": (0, 0),
                                               "input_window_sizes": (s[0][0], s[0][1]),
                                               "input_window_strides": (1, 2)},
        jnp=lambda x, **_: x[:, ::2]),
    "JOIN": Recipe(shapes=_two_matrices, attrs={"axis": 0}, call=lambda op, *xs, **a: op(list(xs), **a),
                   jnp=lambda *xs, axis, **_: jnp.concatenate(xs, axis)),
    "SPLIT": Recipe(shapes=_matrix, attrs={"axis": 0},
                    shape_attrs=lambda s: {"outputs_sizes": ((s[0][0] // 2, s[0][1]), (s[0][0] - s[0][0] // 2, s[0][1]))},
                    jnp=lambda x, *, axis, outputs_sizes, **_: tuple(jnp.split(x, [outputs_sizes[0][axis]], axis))),
    "PADDING": Recipe(shapes=_matrix, attrs={"start_padding": (2, 2), "end_padding": (2, 2)}, jnp=_pad,
                      variants={m: {"padding_mode": m} for m in _PAD_MODES}),
    "PADDING1": Recipe(shapes=_matrix, attrs={"start_padding": (2, 2), "end_padding": (2, 2)}, jnp=_pad,
                       variants={m: {"padding_mode": m} for m in _PAD_MODES}),
    "TILE": Recipe(shapes=_matrix, attrs={"repeats": (2, 1)}, jnp=lambda x, *, repeats, **_: jnp.tile(x, repeats)),
    "SPACE_TO_DEPTH": Recipe(shapes=_images, attrs={"block_size": 2}, jnp=_space_to_depth),
    "SPACE_TO_DEPTH1": Recipe(shapes=_images, attrs={"block_size": 2, "order": "DEPTH_COLUMN_ROW"}, jnp=_space_to_depth),
    "DEPTH_TO_SPACE": Recipe(shapes=_images, attrs={"block_size": 2}, jnp=_depth_to_space),
    "DEPTH_TO_SPACE1": Recipe(shapes=_images, attrs={"block_size": 2, "order": "DEPTH_COLUMN_ROW"}, jnp=_depth_to_space),
    # Resampling: 2x up in height and width, jax.image.resize (half-pixel centers, as DirectML).
    # RESAMPLE2 and RESAMPLE3 round a nearest neighbor's position in their RoundingDirection, which
    # jax.image.resize has no mode for: measured LINEAR only.
    "RESAMPLE": Recipe(shapes=_images, attrs={"scales": (1.0, 1.0, 2.0, 2.0)}, jnp=_resize,
                       variants={m: {"interpolation_mode": m} for m in ("NEAREST_NEIGHBOR", "LINEAR")}),
    "RESAMPLE1": Recipe(shapes=_images, attrs={"scales": (1.0, 1.0, 2.0, 2.0)}, jnp=_resize,
                        variants={m: {"interpolation_mode": m} for m in ("NEAREST_NEIGHBOR", "LINEAR")}),
    "RESAMPLE2": Recipe(shapes=_images, attrs={"scales": (1.0, 1.0, 2.0, 2.0), "interpolation_mode": "LINEAR"},
                        jnp=_resize),
    "RESAMPLE3": Recipe(shapes=_images, attrs={"scales": (1.0, 1.0, 2.0, 2.0), "interpolation_mode": "LINEAR"},
                        jnp=_resize),
    "UPSAMPLE_2D": Recipe(shapes=_images, attrs={"scale_size": (2, 2)}, jnp=_resize,
                          variants={m: {"interpolation_mode": m} for m in ("NEAREST_NEIGHBOR", "LINEAR")}),
    # Attention: separate query, key and value, no mask.
    "MULTIHEAD_ATTENTION": Recipe(
        shapes=_attention_shapes, inputs=("normal",) * 3, shape_attrs=_attention_attrs, jnp=_attention,
        call=lambda op, q, k, v, **a: op(query=q, key=k, value=v, **a)),
    # Quantization: a scale per element (DirectML takes no broadcast; a user broadcasts first).
    "ELEMENT_WISE_QUANTIZE_LINEAR": Recipe(
        shapes=_two_matrices, inputs=("numerator", "positive"), attrs={"output_data_type": "INT8"}, jnp=_quantize),
    "ELEMENT_WISE_DEQUANTIZE_LINEAR": Recipe(shapes=_two_matrices, inputs=("byte", "positive"), jnp=_dequantize),
}


# ------------------------------------------------------------------------------------------
# Family recipes: one formula per family, the function named by a table
@dataclasses.dataclass(frozen=True)
class _Names:
    jnp: str
    torch: str
    onnx: str


def _camel(suffix: str) -> str:
    return "".join(part.title() for part in suffix.split("_"))


# DirectML name (without the family prefix) -> jax.numpy / torch / ONNX names, where they are not
# the lower-case name (and, for ONNX, its CamelCase).
ELEMENT_WISE_NAMES = {
    "IDENTITY": _Names("copy", "clone", "Identity"),
    "ADD1": _Names("add", "add", "Add"),
    "MULTIPLY": _Names("multiply", "mul", "Mul"),
    "SUBTRACT": _Names("subtract", "sub", "Sub"),
    "DIVIDE": _Names("divide", "div", "Div"),
    "NEGATE": _Names("negative", "neg", "Neg"),
    "MAX": _Names("maximum", "maximum", "Max"),
    "MIN": _Names("minimum", "minimum", "Min"),
    "ATAN_YX": _Names("arctan2", "atan2", ""),
    "ATAN": _Names("arctan", "atan", "Atan"),
    "ASINH": _Names("arcsinh", "asinh", "Asinh"),
}
LOGICAL_NAMES = {
    "LOGICAL_LESS_THAN": _Names("less", "lt", "Less"),
    "LOGICAL_LESS_THAN_OR_EQUAL": _Names("less_equal", "le", "LessOrEqual"),
    "LOGICAL_GREATER_THAN": _Names("greater", "gt", "Greater"),
    "LOGICAL_GREATER_THAN_OR_EQUAL": _Names("greater_equal", "ge", "GreaterOrEqual"),
    "LOGICAL_EQUALS": _Names("equal", "eq", "Equal"),
    "LOGICAL_AND": _Names("logical_and", "logical_and", "And"),
    "LOGICAL_OR": _Names("logical_or", "logical_or", "Or"),
    "LOGICAL_XOR": _Names("logical_xor", "logical_xor", "Xor"),
    "LOGICAL_NOT": _Names("logical_not", "logical_not", "Not"),
    "IS_NAN": _Names("isnan", "isnan", "IsNaN"),
}
BITWISE_NAMES = {
    "BIT_AND": _Names("bitwise_and", "bitwise_and", "BitwiseAnd"),
    "BIT_OR": _Names("bitwise_or", "bitwise_or", "BitwiseOr"),
    "BIT_XOR": _Names("bitwise_xor", "bitwise_xor", "BitwiseXor"),
    "BIT_NOT": _Names("bitwise_not", "bitwise_not", "BitwiseNot"),
    "BIT_SHIFT_LEFT": _Names("left_shift", "bitwise_left_shift", ""),
    "BIT_SHIFT_RIGHT": _Names("right_shift", "bitwise_right_shift", ""),
}
ACTIVATION_NAMES = {  # jax.nn first, then jax.numpy
    "IDENTITY": _Names("copy", "clone", "Identity"),
    "RELU": _Names("relu", "relu", "Relu"),
    "SIGMOID": _Names("sigmoid", "sigmoid", "Sigmoid"),
    "TANH": _Names("tanh", "tanh", "Tanh"),
    "SOFTSIGN": _Names("soft_sign", "nn.functional.softsign", "Softsign"),
}
_LOGICAL_ONNX = {"And", "Or", "Xor", "Not"}


def _function(module, dotted: str):
    for part in dotted.split("."):
        module = getattr(module, part, None) if module is not None else None
    return module


def _named_recipe(names: _Names, n_inputs: int, output_type=None, jnp_modules=("jnp",)) -> Recipe | None:
    """The family formula ``jnp.<fn>(*inputs)`` (``jax.nn`` first where ``jnp_modules`` says so),
    its torch and ONNX twins, the result cast to ``output_type`` where the output type is chosen
    (comparisons); None when JAX has no such function."""
    mods = {"jnp": jnp, "nn": jax.nn}
    fn = next((f for f in (_function(mods[m], names.jnp) for m in jnp_modules) if f is not None), None) \
        if names.jnp else None
    if fn is None:
        return None

    def j(*xs, **_):
        y = fn(*xs)
        return y.astype(output_type) if output_type is not None else y

    def t(torch, *xs, **_):
        y = _function(torch, names.torch)(*xs)
        return y.to(getattr(torch, str(output_type))) if output_type is not None else y

    onnx = None
    if names.onnx:
        logical = names.onnx in _LOGICAL_ONNX
        node = OnnxNode(names.onnx, bool_inputs=tuple(range(n_inputs)) if logical else (),
                        bool_output=output_type is not None)
        onnx = lambda **_: node  # noqa: E731
    return Recipe(jnp=j, torch=t if names.torch else None, onnx=onnx)


def _suffix(spec) -> str:
    short = spec.short_name
    for prefix in ("ELEMENT_WISE_", "ACTIVATION_"):
        if short.startswith(prefix):
            return short[len(prefix):]
    return short


def _output_type(spec):
    out = spec.outputs[0].default_data_type if spec.outputs else None
    return out.dtype if isinstance(out, dmljax.DataType) else None  # not REQUIRED or INFERRED


def _element_wise(spec) -> Recipe | None:
    s = _suffix(spec)
    names = ELEMENT_WISE_NAMES.get(s) or _Names(s.lower(), s.lower(), _camel(s))
    return _named_recipe(names, len(spec.inputs), _output_type(spec))


def _from_table(table: Mapping[str, _Names], modules=("jnp",)):
    def recipe(spec) -> Recipe | None:
        names = table.get(_suffix(spec))
        return None if names is None else _named_recipe(names, len(spec.inputs), _output_type(spec), modules)
    return recipe


FAMILY_RECIPES: dict[str, Callable] = {
    "element_wise_arithmetic": _element_wise,
    "element_wise_math": _element_wise,
    "element_wise_logical": _from_table(LOGICAL_NAMES),
    "element_wise_bitwise": _from_table(BITWISE_NAMES),
    "activation": _from_table(ACTIVATION_NAMES, ("nn", "jnp")),
}


def recipe_for(spec) -> tuple[Recipe | None, str]:
    """The operator's recipe and, where it has none that compares, why."""
    own = OPERATOR_RECIPES.get(spec.short_name)
    if own is not None:
        return own, ""
    family = FAMILY_RECIPES.get(spec.family)
    if family is None:
        return None, f"no comparator formula for the {spec.family} family"
    meaningful = [p.dml_name for p in spec.params if p.default is not None]
    if meaningful:
        return None, f"its attributes {', '.join(meaningful)} need an entry in OPERATOR_RECIPES"
    found = family(spec)
    return (found, "") if found is not None else (None, f"no {spec.family} formula is named like it")


# ------------------------------------------------------------------------------------------
# Cases
@dataclasses.dataclass(frozen=True)
class Case:
    """One operator to measure, with its recipe (comparators may be None) and, for a recipe with
    variants, the variant's label."""

    op: Callable
    recipe: Recipe
    variant: str = ""

    @property
    def spec(self):
        return self.op.spec

    @property
    def enum_name(self) -> str:
        return self.op.spec.enum_name + (f"[{self.variant}]" if self.variant else "")

    @property
    def short_name(self) -> str:
        return self.op.spec.short_name + (f"[{self.variant}]" if self.variant else "")

    def attrs(self, dtype: str, extra: Mapping | None = None, arrays=None) -> dict:
        """The attributes the operator is called with for ``dtype`` (and, where the recipe
        computes some from the input shapes, for ``arrays``)."""
        r = self.recipe
        ints = r.int_attrs is not None and not dmljax.DataType.parse(dtype).is_float
        shaped = r.shape_attrs(tuple(tuple(a.shape) for a in arrays)) if r.shape_attrs and arrays is not None else {}
        return {**(r.int_attrs if ints else r.attrs), **r.dtype_attrs.get(dtype, {}),
                **r.variants.get(self.variant, {}), **shaped, **(extra or {})}

    def all_attrs(self, dtype: str, extra: Mapping | None = None, arrays=None) -> dict:
        """Those attributes with the operator's defaults filled in: what comparators receive."""
        defaults = {p.arg: p.default for p in self.spec.params if p.default is not REQUIRED}
        return {**defaults, **self.attrs(dtype, extra, arrays)}

    def dmljax(self, dtype: str, extra: Mapping | None = None) -> Callable:
        op, call = self.op, self.recipe.call
        if self.recipe.shape_attrs is None:
            attrs = self.attrs(dtype, extra)
            if call is None:
                return lambda *xs: op(*xs, **attrs)
            return lambda *xs: call(op, *xs, **attrs)
        if call is None:
            return lambda *xs: op(*xs, **self.attrs(dtype, extra, xs))
        return lambda *xs: call(op, *xs, **self.attrs(dtype, extra, xs))

    def jnp(self, dtype: str, extra: Mapping | None = None) -> Callable | None:
        fn = self.recipe.jnp
        if fn is None:
            return None
        if self.recipe.shape_attrs is None:
            attrs = self.all_attrs(dtype, extra)
            return lambda *xs: fn(*xs, **attrs)
        return lambda *xs: fn(*xs, **self.all_attrs(dtype, extra, xs))

    def torch(self, torch, dtype: str, extra: Mapping | None = None) -> Callable | None:
        fn = self.recipe.torch
        if fn is None:
            return None
        if self.recipe.shape_attrs is None:
            attrs = self.all_attrs(dtype, extra)
            return lambda *xs: fn(torch, *xs, **attrs)
        return lambda *xs: fn(torch, *xs, **self.all_attrs(dtype, extra, xs))

    def onnx(self, dtype: str) -> OnnxNode | None:
        fn = self.recipe.onnx
        return None if fn is None else fn(**self.all_attrs(dtype))


class UnknownNames(ValueError):
    """Operator names that don't denote one registered operator; the message lists them all."""


def resolve(name: str) -> Callable:
    """The registered operator ``name`` denotes: any spelling ``dmljax.canonical_name`` takes,
    its enum value written in digits, or an unambiguous end of an enum name (``SCALED_ELU``),
    matched against ``dmljax.catalog()``. Raises a ValueError with a one-line message.

    >>> resolve("SCALED_ELU").spec.short_name
    'ACTIVATION_SCALED_ELU'
    """
    text = name.strip() if isinstance(name, str) else name
    if isinstance(text, str) and text.isdigit() and len(text) <= 4:
        text = int(text)
    try:
        return dmljax.get_operator(text)
    except dmljax.OperatorNotImplementedError:
        raise ValueError(_not_implemented(dmljax.canonical_name(text))) from None
    except dmljax.UnknownOperatorError as e:
        unknown = e
    tail = "_" + text.upper() if isinstance(text, str) and text else ""
    hits = [c for c in dmljax.catalog() if len(tail) > 1 and c.enum_name.endswith(tail)]
    if len(hits) == 1:
        if not hits[0].implemented:
            raise ValueError(_not_implemented(hits[0].enum_name)) from None
        return dmljax.get_operator(hits[0].enum_name)
    if len(hits) > 1:
        names = ", ".join(h.short_name for h in hits[:6]) + (", ..." if len(hits) > 6 else "")
        raise ValueError(f"{quote(name)} is ambiguous: {names}") from None
    v = unknown.violations[0]
    raise ValueError(v.found + (f"; {v.allowed}" if v.allowed else "")) from None


def _not_implemented(enum_name: str) -> str:
    return f"{enum_name} is a DirectML operator that dmljax does not implement yet (`dmljax ops` lists those it does)"


def resolve_all(names: Sequence[str]) -> list[Callable]:
    """``resolve`` for each name, duplicates dropped; one UnknownNames naming every bad one."""
    ops, problems = {}, []
    for name in names:
        try:
            op = resolve(name)
        except ValueError as e:
            problems.append(str(e))
        else:
            ops.setdefault(op.spec.enum_name, op)
    if problems:
        raise UnknownNames("; ".join(dict.fromkeys(problems)))
    return list(ops.values())


def select(names: Sequence[str] | None = None) -> tuple[list[Case], list[str]]:
    """The cases for ``names`` (default: every registered operator), and notes on the operators
    skipped or measured without comparators."""
    ops = resolve_all(names) if names else list(dmljax.registry().values())
    out, notes = [], []
    for op in ops:
        recipe, why = recipe_for(op.spec)
        if recipe is None:
            required = [p.dml_name for p in op.spec.params if p.default is REQUIRED]
            if required:
                notes.append(f"{op.spec.short_name}: skipped: it requires {', '.join(required)} and has "
                             f"no benchmark recipe ({why}).")
                continue
            notes.append(f"{op.spec.short_name}: measured against the copy only ({why}).")
            recipe = Recipe()
        out += [Case(op, recipe, v) for v in recipe.variants] or [Case(op, recipe)]
    return out, notes
