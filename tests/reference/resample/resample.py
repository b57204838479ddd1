"""Float64 references of the resample family, from the pages, written without dmljax's code.

Per dimension, output element o sits at the input coordinate x solving the pages' relation
``OutputTensorX = (InputTensorX + InputPixelOffset) * Scale + OutputPixelOffset`` (RESAMPLE and
UPSAMPLE_2D: offsets 0.5 and -0.5), in exact rational arithmetic from the float32 attributes:

- nearest neighbor: the input element nearest to x, a tie to the lower one (RESAMPLE, RESAMPLE1,
  UPSAMPLE_2D: the RESAMPLE_GRAD page's example), or floor(x) / ceil(x) (RESAMPLE2 and RESAMPLE3's
  RoundingDirection DECREASING / INCREASING), clamped to the input;
- linear: every integer i with |i - x| < 1 weighs 1 - |i - x| (RESAMPLE3 antialiased where
  1 / Scale > 2: |i - x| < 1 / Scale, weighing 1 - |i - x| * Scale, normalized by their sum); an i
  outside the input reads the nearest edge element (the output edges are clamped).

A dimension is a dense (outputs x inputs) matrix of these weights; the output is the input with
each dimension's matrix applied (an output the sum of its nonzero weights times their elements),
the *_GRAD operators the transposed matrices applied in turn.
INT8 and UINT8 interpolate exactly and round to nearest, halves to even (dmljax's choice where the
pages are silent; a value within FLOAT32's reach of a half may round either way)."""

import math
from fractions import Fraction

import numpy as np

from tests.reference.record import Attrs, Reference
from tests.reference.rules import c_float, read


def _linear(mode) -> bool:
    return str(mode).upper().endswith("LINEAR") or mode == 1


def _rounding(direction) -> str:
    """RoundingDirection: INCREASING (0, the default) rounds up, DECREASING (1) down."""
    return "floor" if str(direction).upper().endswith("DECREASING") or direction == 1 else "ceil"


def _clamp(i, n):
    return min(max(int(i), 0), n - 1)


def axis_matrix(n_in, n_out, linear, rounding, scale, input_offset, output_offset, antialiased=False):
    """The (n_out, n_in) float64 weights of one dimension."""
    s = Fraction(c_float(scale))
    a = 1 / s if antialiased and linear and 1 / s > 2 else Fraction(1)
    m = np.zeros((n_out, n_in))
    for o in range(n_out):
        x = (Fraction(o) - Fraction(c_float(output_offset))) / s - Fraction(c_float(input_offset))
        if not linear:
            if rounding == "nearest":
                i = math.floor(x)
                if x - i > Fraction(1, 2):  # nearer the next element; a tie stays with the lower
                    i += 1
            else:
                i = math.floor(x) if rounding == "floor" else math.ceil(x)
            m[o, _clamp(i, n_in)] = 1.0
            continue
        taps = [(i, 1 - abs(i - x) / a) for i in range(math.floor(x - a), math.ceil(x + a) + 1) if abs(i - x) < a]
        total = sum(w for _, w in taps)
        for i, w in taps:
            m[o, _clamp(i, n_in)] += float(w / total)
    return m


def _output_sizes(shape, scales):
    return tuple(math.floor(n * Fraction(c_float(s))) for n, s in zip(shape, scales))


def _offsets(n, input_pixel_offsets, output_pixel_offsets):
    return (input_pixel_offsets if input_pixel_offsets is not None else (0.5,) * n,
            output_pixel_offsets if output_pixel_offsets is not None else (-0.5,) * n)


def _apply(v, matrices):
    """Each dimension's matrix applied to float64 ``v``: each output the sum of its nonzero
    weights times their elements (an element of weight 0 is not read: no 0 * inf)."""
    for d, m in enumerate(matrices):
        moved = np.moveaxis(v, d, 0)
        rows = []
        for o in range(m.shape[0]):
            cols = np.nonzero(m[o])[0]
            with np.errstate(invalid="ignore", over="ignore"):
                rows.append(sum((m[o, i] * moved[i] for i in cols), np.zeros(moved.shape[1:])))
        v = np.moveaxis(np.stack(rows), 0, d)
    return v


def _matrices(in_shape, out_shape, mode, rounding, scales, ins, outs, antialiased=False):
    return [axis_matrix(n, m, _linear(mode), rounding, s, i, o, antialiased)
            for n, m, s, i, o in zip(in_shape, out_shape, scales, ins, outs)]


def _select(x, matrices):
    """Nearest neighbor: the chosen elements themselves, bits kept."""
    y = np.asarray(x)
    for d, m in enumerate(matrices):
        y = np.take(y, np.argmax(m, axis=1), axis=d)
    return y


def _forward(x, out_shape, mode, rounding, scales, ins, outs, antialiased=False):
    x = np.asarray(x)
    ms = _matrices(x.shape, out_shape, mode, rounding, scales, ins, outs, antialiased)
    if not _linear(mode):
        return [_select(x, ms)]
    if x.dtype.kind in "iu":
        v = _apply(x.astype(np.float64), ms)
        return [np.rint(v + e).astype(x.dtype) for e in (0.0, -1e-3, 1e-3)]
    return [_apply(read(x), ms)]


def _forward_magnitude(x, out_shape, mode, rounding, scales, ins, outs, antialiased=False):
    ms = _matrices(np.shape(x), out_shape, mode, rounding, scales, ins, outs, antialiased)
    return _apply(np.abs(read(np.asarray(x))) if np.asarray(x).dtype.kind == "f" else np.zeros(np.shape(x)), ms)


def _transposed(dy, in_shape, mode, rounding, scales, ins, outs, antialiased=False, absolute=False):
    """The forward matrices transposed, applied to float64 ``dy`` (the forward output's shape)."""
    ms = _matrices(in_shape, np.shape(dy), mode, rounding, scales, ins, outs, antialiased)
    v = np.asarray(dy, np.float64)
    return _apply(np.abs(v) if absolute else v, [m.T for m in ms])


# ------------------------------------------------------------------------------ the operators
def resample(x, interpolation_mode, scales, output_sizes=None, **_):
    n = np.ndim(x)
    out = output_sizes or _output_sizes(np.shape(x), scales)
    return _forward(x, out, interpolation_mode, "nearest", scales, (0.5,) * n, (-0.5,) * n)


def resample1(x, interpolation_mode, scales, input_pixel_offsets=None, output_pixel_offsets=None,
              output_sizes=None, **_):
    ins, outs = _offsets(np.ndim(x), input_pixel_offsets, output_pixel_offsets)
    out = output_sizes or _output_sizes(np.shape(x), scales)
    return _forward(x, out, interpolation_mode, "nearest", scales, ins, outs)


def resample3(x, interpolation_mode, scales, rounding_direction="INCREASING", input_pixel_offsets=None,
              output_pixel_offsets=None, antialiased=False, output_sizes=None, **_):
    ins, outs = _offsets(np.ndim(x), input_pixel_offsets, output_pixel_offsets)
    out = output_sizes or _output_sizes(np.shape(x), scales)
    return _forward(x, out, interpolation_mode, _rounding(rounding_direction), scales, ins, outs, antialiased)


def resample_grad(dy, interpolation_mode, scales, output_gradient_sizes, rounding_direction=None,
                  input_pixel_offsets=None, output_pixel_offsets=None, **_):
    """RESAMPLE_GRAD (``rounding_direction`` None: RESAMPLE1's nearest) and RESAMPLE_GRAD1."""
    ins, outs = _offsets(np.ndim(dy), input_pixel_offsets, output_pixel_offsets)
    rounding = "nearest" if rounding_direction is None else _rounding(rounding_direction)
    return [_transposed(read(np.asarray(dy)), output_gradient_sizes, interpolation_mode, rounding, scales, ins, outs)]


def _upsample_scales(n, scale_size):
    w, h = (scale_size["Width"], scale_size["Height"]) if isinstance(scale_size, dict) else tuple(scale_size)
    return (1,) * (n - 2) + (h, w)


def upsample_2d(x, scale_size, interpolation_mode, **_):
    n = np.ndim(x)
    scales = _upsample_scales(n, scale_size)
    out = tuple(int(a * s) for a, s in zip(np.shape(x), scales))
    return _forward(x, out, interpolation_mode, "nearest", scales, (0.5,) * n, (-0.5,) * n)


# ------------------------------------------------------------------------------ gradients, magnitudes
def _forward_kwargs(x, kw):
    """(output Sizes, mode, rounding, scales, input offsets, output offsets, antialiased) of a
    forward call's keywords (RESAMPLE's offsets are the pixel centers)."""
    n = np.ndim(x)
    if "scale_size" in kw:
        scales = _upsample_scales(n, kw["scale_size"])
        return (tuple(int(a * s) for a, s in zip(np.shape(x), scales)), kw["interpolation_mode"], "nearest",
                scales, (0.5,) * n, (-0.5,) * n, False)
    ins, outs = _offsets(n, kw.get("input_pixel_offsets"), kw.get("output_pixel_offsets"))
    rounding = "nearest" if "rounding_direction" not in kw and "antialiased" not in kw else _rounding(
        kw.get("rounding_direction", "INCREASING"))
    out = kw.get("output_sizes") or _output_sizes(np.shape(x), kw["scales"])
    return out, kw["interpolation_mode"], rounding, kw["scales"], ins, outs, bool(kw.get("antialiased", False))


def _forward_grad(dy, x, **kw):
    out, mode, rounding, scales, ins, outs, aa = _forward_kwargs(x, kw)
    return [_transposed(dy, np.shape(x), mode, rounding, scales, ins, outs, aa)]


def _magnitude(x, **kw):
    out, mode, rounding, scales, ins, outs, aa = _forward_kwargs(x, kw)
    return _forward_magnitude(x, out, mode, rounding, scales, ins, outs, aa)


def _forward_grad_magnitude(dy, x, **kw):
    out, mode, rounding, scales, ins, outs, aa = _forward_kwargs(x, kw)
    return [_transposed(dy, np.shape(x), mode, rounding, scales, ins, outs, aa, absolute=True)]


def _grad_kwargs(dy, kw):
    n = np.ndim(dy)
    ins, outs = _offsets(n, kw.get("input_pixel_offsets"), kw.get("output_pixel_offsets"))
    rounding = "nearest" if kw.get("rounding_direction") is None else _rounding(kw["rounding_direction"])
    return kw["output_gradient_sizes"], kw["interpolation_mode"], rounding, kw["scales"], ins, outs


def _grad_magnitude(dy, **kw):
    sizes, mode, rounding, scales, ins, outs = _grad_kwargs(dy, kw)
    return _transposed(read(np.asarray(dy)), sizes, mode, rounding, scales, ins, outs, absolute=True)


def _grad_grad(cot, dy, **kw):
    """RESAMPLE_GRAD is linear: its gradient is the forward matrices applied to the cotangent."""
    sizes, mode, rounding, scales, ins, outs = _grad_kwargs(dy, kw)
    return [_apply(np.asarray(cot, np.float64), _matrices(sizes, np.shape(dy), mode, rounding, scales, ins, outs))]


def _grad_grad_magnitude(cot, dy, **kw):
    return [np.abs(_grad_grad(np.abs(np.asarray(cot, np.float64)), dy, **kw)[0])]


def _grad1_grad_magnitude(cot, dy, rounding_direction="INCREASING", **kw):
    return _grad_grad_magnitude(cot, dy, rounding_direction=rounding_direction, **kw)


def _grad1(dy, interpolation_mode, rounding_direction="INCREASING", **kw):
    return resample_grad(dy, interpolation_mode, rounding_direction=rounding_direction, **kw)


def _grad1_grad(cot, dy, rounding_direction="INCREASING", **kw):
    return _grad_grad(cot, dy, rounding_direction=rounding_direction, **kw)


def _grad1_magnitude(dy, rounding_direction="INCREASING", **kw):
    return _grad_magnitude(dy, rounding_direction=rounding_direction, **kw)


# ------------------------------------------------------------------------------ the generated cases
_CASE_SHAPES = {1: (5,), 2: (4, 5), 3: (3, 4, 5), 4: (2, 3, 4, 5), 5: (1, 2, 2, 3, 4)}


def _case_shape(shape):
    """Small images of up to five dimensions (a long vector, the gradient cases', as it is)."""
    if shape and shape[-1] >= 8:
        return tuple(shape)
    return _CASE_SHAPES.get(len(shape), tuple(shape))


def _cycle(pattern, n):
    """``n`` values of ``pattern``, its last ones for the last dimensions."""
    return tuple(pattern[(i - n) % len(pattern)] for i in range(n))


_UPDOWN = (0.5, 2.0, 1.5, 0.75)  # ties for nearest neighbor at 0.5 and 1.5 (pixel centers)
_ODD = (3.0, 0.4, 1.0, 2.5)
_NARROW = (0.6, 2.0, 0.25, 0.45)  # 0.25 and 0.45: 1 / Scale > 2, antialiased; 0.6 not (the page)


def _scaled(mode, pattern, **extra):
    def shaped(shape):
        return {"interpolation_mode": mode, "scales": _cycle(pattern, len(shape)),
                **{k: (v(shape) if callable(v) else v) for k, v in extra.items()}}
    return shaped


def _cropped(shape):
    """Sizes other than floor(InputSize * Scale): one more (its edge clamped), one fewer (cropped)."""
    base = _output_sizes(shape, _cycle(_ODD, len(shape)))
    return tuple(max(1, b + (1 if i % 2 else -1)) for i, b in enumerate(base))


def _offsets_of(pattern):
    return lambda shape: _cycle(pattern, len(shape))


_IN = (0.25, 0.0, 0.5, -0.3)
_OUT = (-0.75, 0.0, -0.5, 0.2)


def _grad_inputs(rng, types, shape, scales, output_gradient_sizes, **_):
    """The InputGradientTensor: the forward output's Sizes for a forward input of ``shape``."""
    from tests.catalog import random_tensor
    return [random_tensor(rng, types["InputGradientTensor"], _output_sizes(output_gradient_sizes, scales))]


def _grad_sets(*sets):
    out = []
    for mode, extra in sets:
        def shaped(shape, mode=mode, extra=extra):
            return {"interpolation_mode": mode, "scales": _cycle(_UPDOWN, len(shape)),
                    "output_gradient_sizes": tuple(shape), **{k: _cycle(v, len(shape)) if isinstance(v, tuple) else v
                                                              for k, v in extra.items()}}
        out.append(Attrs(shaped=shaped))
    return tuple(out)


_COMMON = dict(pointwise=False, shape=_case_shape, multiply_add=True)

REFERENCES = {
    "DML_OPERATOR_RESAMPLE": Reference(
        resample, attrs=(Attrs(shaped=_scaled("NEAREST_NEIGHBOR", _UPDOWN), selection=True),
                         Attrs(shaped=_scaled("LINEAR", _ODD, output_sizes=_cropped))),
        grad=_forward_grad, magnitude=_magnitude, grad_magnitude=_forward_grad_magnitude, **_COMMON),
    "DML_OPERATOR_RESAMPLE1": Reference(
        resample1, attrs=(Attrs(shaped=_scaled("NEAREST_NEIGHBOR", _ODD, input_pixel_offsets=_offsets_of(_IN),
                                               output_pixel_offsets=_offsets_of(_OUT)), selection=True),
                          Attrs(shaped=_scaled("LINEAR", _UPDOWN, input_pixel_offsets=_offsets_of(_IN),
                                               output_pixel_offsets=_offsets_of(_OUT)))),
        grad=_forward_grad, magnitude=_magnitude, grad_magnitude=_forward_grad_magnitude, **_COMMON),
    "DML_OPERATOR_RESAMPLE2": Reference(
        resample3, attrs=(Attrs(shaped=_scaled("NEAREST_NEIGHBOR", _UPDOWN, rounding_direction="INCREASING"),
                                selection=True),
                          Attrs(shaped=_scaled("NEAREST_NEIGHBOR", _ODD, rounding_direction="DECREASING",
                                               input_pixel_offsets=_offsets_of(_IN)), selection=True),
                          Attrs(shaped=_scaled("LINEAR", _ODD, rounding_direction="DECREASING",
                                               output_pixel_offsets=_offsets_of(_OUT), output_sizes=_cropped))),
        grad=_forward_grad, magnitude=_magnitude, grad_magnitude=_forward_grad_magnitude, **_COMMON),
    "DML_OPERATOR_RESAMPLE3": Reference(
        resample3, attrs=(Attrs(shaped=_scaled("LINEAR", _NARROW, antialiased=True)),
                          Attrs(shaped=_scaled("LINEAR", _NARROW, antialiased=True, input_pixel_offsets=_offsets_of(_IN),
                                               output_pixel_offsets=_offsets_of(_OUT))),
                          Attrs(shaped=_scaled("NEAREST_NEIGHBOR", _NARROW, antialiased=True,
                                               rounding_direction="DECREASING"), selection=True)),
        grad=_forward_grad, magnitude=_magnitude, grad_magnitude=_forward_grad_magnitude, **_COMMON),
    "DML_OPERATOR_RESAMPLE_GRAD": Reference(
        resample_grad, attrs=_grad_sets(("NEAREST_NEIGHBOR", {}), ("LINEAR", {"input_pixel_offsets": _IN,
                                                                             "output_pixel_offsets": _OUT})),
        grad=_grad_grad, magnitude=_grad_magnitude, grad_magnitude=_grad_grad_magnitude, make_inputs=_grad_inputs, **_COMMON),
    "DML_OPERATOR_RESAMPLE_GRAD1": Reference(
        _grad1, attrs=_grad_sets(("NEAREST_NEIGHBOR", {"rounding_direction": "DECREASING", "input_pixel_offsets": _IN}),
                                 ("LINEAR", {"rounding_direction": "INCREASING", "output_pixel_offsets": _OUT})),
        grad=_grad1_grad, magnitude=_grad1_magnitude, grad_magnitude=_grad1_grad_magnitude, make_inputs=_grad_inputs, **_COMMON),
    "DML_OPERATOR_UPSAMPLE_2D": Reference(
        upsample_2d, attrs=(Attrs({"scale_size": (3, 2), "interpolation_mode": "NEAREST_NEIGHBOR"}, selection=True),
                            Attrs({"scale_size": {"Width": 2, "Height": 3}, "interpolation_mode": "LINEAR"})),
        grad=_forward_grad, magnitude=_magnitude, grad_magnitude=_forward_grad_magnitude, **_COMMON),
}
