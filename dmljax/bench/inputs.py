"""The benchmark's inputs: random tensors of each operator's input types, and how many input sets
a measurement cycles through.

Inputs are never all zeros or special values: floats are N(0, 1) ("normal"), 4·N(0, 1)
("numerator"), of magnitude in [0.5, 2) with a random sign ("divisor", so that a modulus never
divides by zero), in [0.25, 8) ("positive": a logarithm's or square root's domain, also above 1
for ACOSH) or in (-1, 1) ("unit": ASIN, ACOS, ATANH); integers are uniform in a small range
inside the type (divisors 1 to 9, signed where the type is; "positive" 1 to 50; "shift" counts 0
to 7, a valid shift for every type); a "condition" is a random 0/1 UINT8 tensor; a "byte" a
uniform UINT8 tensor (a quantized input); ``index@A`` INT32 indices uniform over axis A of the
first input (a gather's or scatter's indices).

Shapes come from a layout (LAYOUTS), the first that the operator's record validates
(``jax.eval_shape`` in plan.py): "flat" gives every input the element count asked for in the
fewest dimensions its newest support table allows ((1, ..., 1, n)), which suits the element-wise
operators; "square" gives every input (1, ..., s, s) with s * s <= n (GEMM's A and B); "square,
small" the first input so and the others (1, ..., 3, 3) (CONVOLUTION's filter); "square, ones" the
others all ones (a per-tensor scale). A recipe may give its own shapes instead (``Recipe.shapes``:
a softmax over rows, a convolution's channels), the layout "recipe". An operator no layout fits
is reported, not measured.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np

from dmljax._src.dtypes import DataType

__all__ = ["KINDS", "LAYOUTS", "shapes", "supported_types", "input_kinds", "kind_type", "unsupported", "RECIPE_LAYOUT", "make_inputs", "draw", "draw_all", "input_structs", "input_sets"]

KINDS = ("normal", "numerator", "divisor", "positive", "unit", "shift", "condition", "byte")
_OWN_TYPE = {"condition": "UINT8", "byte": "UINT8"}  # kinds drawn in a type of their own


def kind_type(kind: str) -> str | None:
    """The data type a ``kind`` is drawn in regardless of the benchmark's type, or None."""
    return "INT32" if kind.startswith("index@") else _OWN_TYPE.get(kind)


def supported_types(op, tensor: str) -> tuple[str, ...]:
    """The data types the operator's newest support table lists for ``tensor``."""
    row = op.spec.support[0].tensors.get(tensor)
    return tuple(dt.name for dt in row.data_types) if row else ()


def input_kinds(case, dtype: str) -> tuple[str, ...] | None:
    """How each required input of ``case`` is drawn for data type ``dtype``, or None when an input
    takes neither ``dtype`` nor a UINT8 condition."""
    tensors = [t for t in case.spec.inputs if not t.optional]
    if case.recipe.inputs is not None:
        kinds = case.recipe.inputs
        if all((kind_type(k) or dtype) in supported_types(case.op, t.dml_name) for t, k in zip(tensors, kinds)):
            return kinds
        return None
    kinds = []
    for t in tensors:
        types = supported_types(case.op, t.dml_name)
        if dtype in types:
            kinds.append("normal")
        elif "UINT8" in types:
            kinds.append("condition")
        else:
            return None
    return tuple(kinds)


def unsupported(case, dtype: str) -> str | None:
    """Why ``case`` can't be measured in ``dtype`` (from its support table), or None."""
    if input_kinds(case, dtype) is not None:
        return None
    types = {t for x in case.spec.inputs if not x.optional for t in supported_types(case.op, x.dml_name)}
    listed = [t for t in DataType.__members__ if t in types]
    return f"{case.short_name} does not take {dtype} (its inputs take {', '.join(listed)})"


LAYOUTS = ("flat", "square", "square, small", "square, ones")
"""How inputs are shaped, in the order plan.py tries them (the module's docstring)."""
RECIPE_LAYOUT = "recipe"
"""The layout of an operator whose recipe gives its shapes (the only one plan.py tries for it)."""


def _min_dims(case, tensor: str) -> int:
    row = case.spec.support[0].tensors.get(tensor)
    return max(row.dims[0] if row else 1, 1)


def shapes(case, n: int, layout: str = "flat") -> tuple[tuple[int, ...], ...]:
    """The shapes of ``case``'s required inputs for about ``n`` elements each, in ``layout``."""
    if case.recipe.shapes is not None:
        return tuple(tuple(s) for s in case.recipe.shapes(n))
    tensors = [t for t in case.spec.inputs if not t.optional]
    side = max(math.isqrt(n), 1)
    out = []
    for i, t in enumerate(tensors):
        lo = _min_dims(case, t.dml_name)
        if layout == "flat":
            out.append((1,) * (lo - 1) + (n,))
            continue
        rank = max(lo, 2)
        if i == 0 or layout == "square":
            out.append((1,) * (rank - 2) + (side, side))
        elif layout == "square, small":
            out.append((1,) * (rank - 2) + (3, 3))
        else:
            out.append((1,) * lo)
    return tuple(out)


def draw(kind: str, key, shape, dtype: DataType):
    """One random array of ``kind`` (KINDS) and ``dtype``."""
    if kind == "condition":
        return jax.random.bernoulli(key, 0.5, shape).astype(jnp.uint8)
    if kind == "byte":
        return jax.random.randint(key, shape, 0, 256, np.int32).astype(jnp.uint8)
    dt = dtype.dtype
    if dtype.is_float:
        if kind == "divisor":
            km, ks = jax.random.split(key)
            mag = jax.random.uniform(km, shape, np.float32, 0.5, 2.0)
            return jnp.where(jax.random.bernoulli(ks, 0.5, shape), mag, -mag).astype(dt)
        if kind == "positive":
            return jax.random.uniform(key, shape, np.float32, 0.25, 8.0).astype(dt)
        if kind == "unit":
            return jax.random.uniform(key, shape, np.float32, -0.999, 0.999).astype(dt)
        scale = 4.0 if kind == "numerator" else 1.0
        return (scale * jax.random.normal(key, shape, np.float32)).astype(dt)
    info = np.iinfo(dt)
    if kind in ("positive", "shift"):
        lo, hi = (1, 51) if kind == "positive" else (0, 8)
        return jax.random.randint(key, shape, lo, hi, np.int32).astype(dt)
    if kind == "divisor":
        km, ks = jax.random.split(key)
        mag = jax.random.randint(km, shape, 1, 10, np.int32)
        if info.min < 0:
            mag = jnp.where(jax.random.bernoulli(ks, 0.5, shape), mag, -mag)
        return mag.astype(dt)
    span = 100 if kind == "numerator" else 50
    lo = max(int(info.min), -span)
    return jax.random.randint(key, shape, lo, min(int(info.max), span) + 1, np.int32).astype(dt)


@functools.partial(jax.jit, static_argnames=("kinds", "shapes", "dtype"))
def draw_all(seed, *, kinds: tuple[str, ...], shapes: tuple[tuple[int, ...], ...], dtype: DataType):
    """Arrays of ``kinds`` and ``shapes`` from one seed, in one compiled program (drawing them op by
    op would compile every random primitive for every shape)."""
    key = jax.random.PRNGKey(seed)
    out = []
    for i, (kind, shape) in enumerate(zip(kinds, shapes)):
        k = jax.random.fold_in(key, i)
        if kind.startswith("index@"):
            out.append(jax.random.randint(k, shape, 0, shapes[0][int(kind[6:])], np.int32))
        else:
            out.append(draw(kind, k, shape, dtype))
    return out


def input_structs(case, n: int, dtype: str, kinds: tuple[str, ...], layout: str = "flat") -> list:
    """``jax.ShapeDtypeStruct``s of the inputs ``make_inputs`` would draw (for ``jax.eval_shape``)."""
    dt = DataType.parse(dtype).dtype
    return [jax.ShapeDtypeStruct(shape, DataType.parse(kind_type(kind)).dtype if kind_type(kind) else dt)
            for kind, shape in zip(kinds, shapes(case, n, layout))]


def make_inputs(case, n: int, dtype: str, seed: int, kinds: tuple[str, ...] | None = None, layout: str = "flat"):
    """Random inputs for ``case`` with about ``n`` elements each (``layout``), ready on the device
    (None if the type is unsupported)."""
    kinds = kinds or input_kinds(case, dtype)
    if kinds is None:
        return None
    return jax.block_until_ready(draw_all(np.uint32(seed), kinds=tuple(kinds), shapes=shapes(case, n, layout),
                                          dtype=DataType.parse(dtype)))


def input_sets(bytes_per_set: int, cache_bytes: int) -> int:
    """How many input sets a measurement cycles through: together at least 3x the last-level
    cache (so that large sizes don't measure the cache), 2 to 8."""
    return int(min(8, max(2, math.ceil(3 * cache_bytes / max(bytes_per_set, 1)))))
