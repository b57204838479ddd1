"""CONVOLUTION as a matrix product on NVIDIA GPUs, where its window is one element: the forms of
the formula that XLA runs as cuBLAS GEMMs instead of cuDNN convolutions, and the measured rule
(``RULE``) of which form each kind of call takes.

A convolution of one group whose window is 1 x 1 (x 1), without padding or OutputPadding, sums
Input[n, c, p * Strides] * Filter[o, c] over the channels c alone (BACKWARD with unit strides:
Input[n, c, p] * Filter[c, o]); Dilations and Mode change nothing. Strides other than 1 read the
input's every Strides-th element first (a strided slice). Two forms compute that sum:

- ``rows``: the positions as the rows of one product, ``dot_general`` of the {N, C, spatial...}
  input and the {O, C} filter over C, {N, spatial..., O} moved to {N, O, spatial...}. Its
  operands and result are whole matrices where the channels are the innermost dimension of
  memory (NHWC); with NCHW memory XLA transposes around it.
- ``columns``: one product an image, the {O, C} filter times the image's {C, positions} matrix,
  batched over N: {N, O, positions} with no transpose where memory is NCHW. Its filter gradient
  takes the method ``FILTER_GRADIENT`` gives (``FILTER_GRADIENTS``: a product an image summed over
  N, one product over N and the positions, or XLA's own filter gradient).

Exactness: the same products as XLA's convolution (FLOAT32 at HIGHEST precision, never TF32;
FLOAT16 operands accumulated in ``accumulate``, FLOAT32 for the operator's FLOAT16), summed in
another order (docs/semantics.md#accumulating-operators: the order is the library's).

Where each form is taken is ``RULE``: measured by benchmarks/convolution/resnet50.py, which times
every form (``force_kernels``) beside XLA's convolution for each ResNet-50 and MobileNetV2 shape,
both memory layouts and all three directions, and prints the rule its figures give.
"""

from __future__ import annotations

import math

import numpy as np
from jax import lax
import jax.numpy as jnp

from dmljax._src.derivatives import backward_rule
from dmljax._src.kernel_seam import Kernel, memory

__all__ = ["RULE", "PACKED_RULE", "FORMS", "rule_form", "CONVOLUTION_GEMM_ROWS", "CONVOLUTION_GEMM_COLUMNS",
           "pointwise_kind", "gemm_rows", "gemm_columns"]

FORMS = ("rows", "columns")

RULE: dict[tuple[str, str], str] = {
    ("pointwise", "float32"): "rows",
    ("pointwise", "float16"): "xla",
    ("pointwise strided", "float32"): "xla",
    ("pointwise strided", "float16"): "xla",
    ("pointwise backward", "float32"): "xla",
    ("pointwise backward", "float16"): "xla",
}
"""(the kind of call, ``pointwise_kind``; the operands' type) -> the form taken on CUDA where XLA
orders the program's memory (``kernel_seam.memory``: "xla"): "rows", "columns" or "xla" (XLA's
convolution). Measured on an H200 (jax 0.11.2; batch 128, ResNet-50's 1 x 1 shapes, forward and
both gradients, NCHW and NHWC memory; benchmarks/results/h200/convolution/resnet50.md and rule.md):

- FLOAT32 "pointwise": rows. Over 12 points it is never slower than XLA's convolution (0.30-0.90x
  its time; 4.20 ms in all against 7.07); columns totals about the same (4.12 ms) but reaches 0.95x.
- FLOAT16 "pointwise": XLA. With NHWC memory XLA's cuDNN convolution takes 0.81-1.02x torch's time
  over 36 points and no form beats it by more than a few percent; with NCHW memory it takes
  2.0-3.0x torch's time, where columns takes 0.7-1.3x, but columns costs up to 3.65x XLA's time with
  NHWC memory. Where XLA orders memory, it gives the arrays around its cuDNN convolutions the
  channels innermost, so XLA's convolution, which never loses against itself, stays; where the
  memory is known to be NCHW, ``PACKED_RULE`` takes over.
- FLOAT16 "pointwise strided": XLA (rows up to 3.2x its time, columns up to 19x).
- The other kinds keep XLA's convolution: not measured yet."""

FILTER_GRADIENT: dict[str, tuple[tuple[int, str], ...]] = {
    "float16": ((3136, "partials"), (0, "xla")),
}
"""(the operands' type) -> ((the fewest positions an image, the method of ``FILTER_GRADIENTS`` taken
from there, or "fewer bytes"), ...), largest first: how the columns form's filter gradient is
computed; below every entry, and for a type not listed, "fewer bytes" (``_fewer_bytes``). Measured
on an H200 (jax 0.11.2, device time; ResNet-50's unit-stride 1 x 1 shapes with NCHW memory at batch
128 and 32, each method forced in its own run, its time over lax's filter gradient in the same
run; benchmarks/results/h200/convolution/filter_gradient.md): the method whose worst ratio is least.

- FLOAT16 from 3136 positions (56 x 56): partials, 0.41-0.82x lax's time (product 0.32-1.15x).
- FLOAT16 below: XLA's, 0.99-1.00x (the same bits as lax's); at 784 positions partials took
  0.77-1.23x and product 0.65-1.05x, at 196 positions 2.42-3.75x and 1.06-1.21x, the columns form's
  time there being the product's N partial filters or its transposes of the input and cotangent.
- FLOAT32: fewer bytes (0.36-0.85x XLA's convolution's time at every size measured: packed.md)."""

PACKED_RULE: dict[tuple[str, str], tuple[tuple[int, str], ...]] = {
    ("pointwise", "float16"): ((196, "columns"), (0, "xla")),
    ("pointwise", "float32"): ((784, "columns"), (0, "rows")),
    ("pointwise strided", "float16"): ((0, "rows"),),
    ("pointwise strided", "float32"): ((784, "columns"), (0, "rows")),
}
"""(the kind of call, the operands' type) -> ((the fewest output positions an image, the form
taken from there), ...), largest first, where the program's arrays are NCHW in memory as written
(``kernel_seam.packed_memory``: an operator called outside any trace, a compiled operator whose
descs are packed, or a user's block); kinds not listed take ``RULE``. Measured on an H200 (jax
0.11.2, NCHW memory, device time, ResNet-50's 1 x 1 shapes at batch 128 and 32; each form's time
over the three directions of the shapes of one output size; benchmarks/results/h200/convolution/
packed.md):

- FLOAT16 "pointwise": columns from 196 positions (14 x 14). It reads and writes NCHW memory as it
  lies, where XLA's convolution transposes the input and the output around a channels-innermost
  cuDNN call (2.0-3.0x torch's time at 28 x 28 and 56 x 56, batch 128). Columns took 0.39x XLA's
  time at 56 x 56, 0.62x at 28 x 28 and 0.82x at 14 x 14 (forward and the input's gradient
  0.30-0.80x; the filter's gradient 0.41-1.23x); at 7 x 7 XLA's convolution is the fastest
  (columns 1.47x its time, rows 1.06x).
- FLOAT32 "pointwise": columns from 784 positions (28 x 28: 0.46x XLA's time at 56 x 56, 0.54x at
  28 x 28), rows below (0.65x at 14 x 14 and 0.69x at 7 x 7, where columns took 0.70x and 0.79x).
- FLOAT16 "pointwise strided": rows (0.83-0.85x XLA's time at 28 x 28, 14 x 14 and 7 x 7 outputs,
  one shape each, where columns took up to 3.72x).
- FLOAT32 "pointwise strided": as "pointwise", columns from 784 positions (one shape, 56 x 56 read
  at stride 2: columns 0.51x XLA's time, rows 0.56x), rows below (not measured there; rows took
  less than XLA's time at every FLOAT32 point with NCHW memory).

Out of sample, MobileNetV2's 1 x 1 shapes (packed_mobilenet_v2.md, batch 128): at each output size
the rule's form is the fastest, or its time over XLA's is at most 0.11 above the fastest form's
(FLOAT32 at 14 x 14: rows 0.62x, columns 0.51x), and below XLA's time everywhere but FLOAT16 at
7 x 7, which keeps XLA's convolution (rows took 0.97x)."""


def pointwise_kind(x_shape, w_shape, dtype, forward: bool, groups: int, strides, dilations, start, end,
                   output_padding) -> str | None:
    """The kind of a call that a matrix product computes: "pointwise" (FORWARD, unit strides),
    "pointwise strided" (FORWARD, a stride above 1), "pointwise backward" (BACKWARD, unit
    strides); None for any other (a window of more than one element, several groups, padding,
    OutputPadding, BACKWARD with strides, a type other than FLOAT32 and FLOAT16)."""
    del dilations  # a one-element window has no spacing
    if np.dtype(dtype) not in (np.float32, np.float16) or groups != 1 or len(x_shape) < 3:
        return None
    if any(k != 1 for k in w_shape[2:]) or any(start) or any(end) or any(output_padding):
        return None
    unit = all(s == 1 for s in strides)
    if not forward:
        return "pointwise backward" if unit else None
    return "pointwise" if unit else "pointwise strided"


def rule_form(*facts) -> str:
    """The form the rules take for a call's facts (``pointwise_kind``'s) in the memory order where
    this is called (``kernel_seam.memory``): "rows", "columns" or "xla"."""
    kind = pointwise_kind(*facts)
    if kind is None:
        return "xla"
    key = (kind, np.dtype(facts[2]).name)
    if memory() == "packed" and key in PACKED_RULE:
        positions = math.prod(_out_positions(facts))
        return next(form for least, form in PACKED_RULE[key] if positions >= least)
    return RULE.get(key, "xla")


def _out_positions(facts) -> tuple[int, ...]:
    """The output's spatial sizes of a ``pointwise_kind`` call: the input's read at the strides
    (FORWARD), or the input's (BACKWARD, unit strides)."""
    x_shape, strides = facts[0], facts[5]
    return tuple(-(-n // s) for n, s in zip(x_shape[2:], strides))


def _rule(form: str):
    def applies(*facts) -> bool:
        return rule_form(*facts) == form
    applies.__name__ = applies.__qualname__ = f"applies_{form}"
    return applies


def _runs(*facts) -> bool:
    return pointwise_kind(*facts) is not None


CONVOLUTION_GEMM_ROWS = Kernel("convolution_gemm_rows", _rule("rows"), measured="benchmarks/convolution/resnet50.py",
                               runs=_runs)
CONVOLUTION_GEMM_COLUMNS = Kernel("convolution_gemm_columns", _rule("columns"),
                                  measured="benchmarks/convolution/resnet50.py", runs=_runs)


def _operands(x, w, forward: bool, strides):
    """The input read at the strides, and the filter as an {O, C} matrix."""
    if any(s != 1 for s in strides):
        x = lax.slice(x, (0,) * x.ndim, x.shape, (1, 1) + tuple(strides))
    w2 = w.reshape(w.shape[:2])
    return x, (w2 if forward else w2.T)


def gemm_rows(x, w, forward: bool, strides, precision, accumulate):
    """The convolution (a ``pointwise_kind``) as one product with the positions as rows:
    {N, O, spatial...} in ``accumulate`` (None: the operands' type)."""
    x, w2 = _operands(x, w, forward, strides)
    y = lax.dot_general(x, w2, (((1,), (1,)), ((), ())), precision=precision, preferred_element_type=accumulate)
    return jnp.moveaxis(y, -1, 1)


FILTER_GRADIENTS = ("partials", "product", "xla")
"""How the columns form computes its filter's gradient, sum over the images and positions of
dY[n, o, p] * X[n, c, p]:

- ``partials``: a product an image (the batched product's own transpose), N partial {O, C}
  filters (FLOAT32 for FLOAT16 operands) summed over N, rounded once;
- ``product``: one product contracting the images and the positions together (XLA lays the
  operands out for it: it transposes the input and the cotangent);
- ``xla``: XLA's filter gradient of the 1 x 1 convolution, as lax's derivative gives it (cuDNN's
  backward-filter convolution): FLOAT32 at ``precision``; FLOAT16 in and out, summed in FLOAT32
  by cuDNN (XLA's pseudo-half configuration) and rounded once. A FLOAT32 result of FLOAT16
  operands made XLA widen them and run a FLOAT32 convolution: 1.24-2.83x lax's time."""

FORCED_FILTER_GRADIENT: str | None = None
"""A method of ``FILTER_GRADIENTS`` that every columns form's filter gradient takes, whatever the
rule (None: the rule). Private: benchmarks/convolution/resnet50.py's ``--filter-gradient``, which
measures each method, sets it before tracing anything."""


def _fewer_bytes(o: int, c: int, p: int) -> str:
    """``partials`` where the N partial filters move fewer bytes than the transposed input and
    cotangent ((C + O) x N x P elements, against N x O x C), else ``product``."""
    return "partials" if o * c <= (o + c) * p else "product"


def filter_gradient_method(dtype, o: int, c: int, p: int) -> str:
    """The method of ``FILTER_GRADIENTS`` the columns form's filter gradient takes for operands of
    ``dtype``, an {O, C} filter and P positions an image."""
    if FORCED_FILTER_GRADIENT is not None:
        return FORCED_FILTER_GRADIENT
    for least, method in FILTER_GRADIENT.get(np.dtype(dtype).name, ()):
        if p >= least:
            return _fewer_bytes(o, c, p) if method == "fewer bytes" else method
    return _fewer_bytes(o, c, p)


def _xla_filter_gradient(a, dy, spatial, precision, accumulate):
    """XLA's filter gradient of the 1 x 1 convolution of the {N, C, P} input and the {N, O, P}
    cotangent (P the positions ``spatial`` flattened): the convolution that lax's derivative
    writes, the input's images as its features and the cotangent as its window, {O, C}."""
    nd = len(spatial)
    x = a.reshape(a.shape[:2] + spatial)
    g = dy.reshape(dy.shape[:2] + spatial)
    spec = (1, 0) + tuple(range(2, nd + 2))  # batch C (O), features N, the positions
    dw = lax.conv_general_dilated(x, g, (1,) * nd, [(0, 0)] * nd, precision=precision,
                                  dimension_numbers=lax.ConvDimensionNumbers(spec, spec, spec),
                                  preferred_element_type=accumulate)
    return dw.reshape(dw.shape[:2])


def _columns(x3, w2, spatial, precision, accumulate):
    """{O, C} times each image's {C, P}: {N, O, P}. Its gradient: the input's by the transposed
    filter, image by image; the filter's by ``filter_gradient_method``'s method, FLOAT32 sums for
    FLOAT16 operands, rounded once."""

    def product(a, b):
        wide = jnp.broadcast_to(b, (a.shape[0],) + b.shape)
        return lax.dot_general(wide, a, (((2,), (1,)), ((0,), (0,))), precision=precision,
                               preferred_element_type=accumulate)

    def fwd(a, b):
        return product(a, b), (a, b)

    def bwd(res, dy):
        a, b = res
        t = dy.dtype  # operands of another type are widened to the cotangent's: exact products
        n, (o, c), p = a.shape[0], b.shape, a.shape[2]
        wide = jnp.broadcast_to(b.astype(t), (n,) + b.shape)
        da = lax.dot_general(wide, dy, (((1,), (1,)), ((0,), (0,))), precision=precision, preferred_element_type=t)
        method = filter_gradient_method(t, o, c, p)
        sums = np.promote_types(t, np.float32)
        if method == "partials":
            partial = lax.dot_general(dy, a.astype(t), (((2,), (2,)), ((0,), (0,))), precision=precision,
                                      preferred_element_type=sums)
            db = jnp.sum(partial, axis=0)
        elif method == "product":
            db = lax.dot_general(dy, a.astype(t), (((0, 2), (0, 2)), ((), ())), precision=precision,
                                 preferred_element_type=t)
        else:  # FLOAT16 in and out: cuDNN sums in FLOAT32 (XLA's pseudo-half configuration), rounded once
            db = _xla_filter_gradient(a.astype(t), dy, spatial, precision, None if t == np.float16 else sums)
        return da.astype(a.dtype), db.astype(b.dtype)

    return backward_rule(product, fwd, bwd)(x3, w2)


def gemm_columns(x, w, forward: bool, strides, precision, accumulate):
    """The convolution (a ``pointwise_kind``) as one product an image, batched over N:
    {N, O, spatial...} in ``accumulate`` (None: the operands' type)."""
    x, w2 = _operands(x, w, forward, strides)
    n, c, spatial = x.shape[0], x.shape[1], x.shape[2:]
    y = _columns(x.reshape(n, c, -1), w2, tuple(spatial), precision, accumulate)
    return y.reshape((n, w2.shape[0]) + spatial)
