"""Exact references of SLICE, SLICE1 and SLICE_GRAD, from their pages: each output element is the
input element at offset + index * stride (SLICE1: a negative stride counts from the window's end),
by NumPy's basic indexing; SLICE_GRAD writes each incoming element back where it was read."""

import math

import numpy as np

from tests.reference.record import Attrs, Reference


def _index(offsets, sizes, strides):
    """SLICE1's window as NumPy slices: [o, o + size) read every |stride|, from its end if < 0."""
    out = []
    for o, s, t in zip(offsets, sizes, strides):
        if t > 0:
            out.append(np.s_[o:o + s:t])
        else:
            stop = o - 1 if o > 0 else None
            out.append(np.s_[o + s - 1:stop:t])
    return tuple(out)


def slice_(x, offsets, sizes, strides):
    x = np.asarray(x)
    return [x[tuple(np.s_[o:o + (s - 1) * t + 1:t] for o, s, t in zip(offsets, sizes, strides))]]


def slice1(x, input_window_offsets, input_window_sizes, input_window_strides):
    x = np.asarray(x)
    return [x[_index(input_window_offsets, input_window_sizes, input_window_strides)]]


def slice_grad(dy, input_window_offsets, input_window_sizes, input_window_strides, output_gradient_sizes):
    dy = np.asarray(dy)
    out = np.zeros(output_gradient_sizes, dy.dtype)
    out[_index(input_window_offsets, input_window_sizes, input_window_strides)] = dy
    return [out]


def _slice_attrs(shape):
    """Every other element from 1 where a dimension is long enough, the whole dimension otherwise."""
    offs = tuple(1 if s > 2 else 0 for s in shape)
    strides = tuple(2 if s > 2 else 1 for s in shape)
    sizes = tuple(max(1, math.ceil((s - o) / t)) for s, o, t in zip(shape, offs, strides))
    return {"offsets": offs, "sizes": sizes, "strides": strides}


def _window_attrs(backwards: bool):
    def attrs(shape):
        offs = tuple(1 if s > 2 else 0 for s in shape)
        sizes = tuple(s - o for s, o in zip(shape, offs))
        strides = tuple((-2 if backwards else 2) if s > 2 else (-1 if backwards else 1) for s in shape)
        return {"input_window_offsets": offs, "input_window_sizes": sizes, "input_window_strides": strides}
    return attrs


def _grad_attrs(backwards: bool):
    window = _window_attrs(backwards)

    def attrs(shape):  # the case's shape is the forward input's: dY has SLICE1's output Sizes
        w = window(shape)
        return {**w, "output_gradient_sizes": tuple(shape)}
    return attrs


def _grad_inputs(rng, types, shape, input_window_offsets, input_window_sizes, input_window_strides, **_):
    from tests.catalog import random_tensor
    out = tuple(math.ceil(s / abs(t)) for s, t in zip(input_window_sizes, input_window_strides))
    return [random_tensor(rng, types["InputGradientTensor"], out)]


def _slice_grad_grad(cot, dy, input_window_offsets, input_window_sizes, input_window_strides, output_gradient_sizes):
    """SLICE_GRAD is linear; its transpose reads the cotangent where SLICE1 reads: SLICE1 of it."""
    return [np.asarray(cot, np.float64)[_index(input_window_offsets, input_window_sizes, input_window_strides)]]


def _slice_grad_ref(dy, x, offsets, sizes, strides):
    g = np.zeros(np.shape(x))
    g[tuple(np.s_[o:o + (s - 1) * t + 1:t] for o, s, t in zip(offsets, sizes, strides))] = dy
    return [g]


def _slice1_grad_ref(dy, x, input_window_offsets, input_window_sizes, input_window_strides):
    g = np.zeros(np.shape(x))
    g[_index(input_window_offsets, input_window_sizes, input_window_strides)] = dy
    return [g]


REFERENCES = {
    "DML_OPERATOR_SLICE": Reference(slice_, attrs=(Attrs(shaped=_slice_attrs),), selection=True,
                                    grad=_slice_grad_ref, pointwise=False),
    "DML_OPERATOR_SLICE1": Reference(slice1, attrs=(Attrs(shaped=_window_attrs(False)), Attrs(shaped=_window_attrs(True))),
                                     selection=True, grad=_slice1_grad_ref, pointwise=False),
    "DML_OPERATOR_SLICE_GRAD": Reference(
        slice_grad, attrs=(Attrs(shaped=_grad_attrs(False)), Attrs(shaped=_grad_attrs(True))), selection=True,
        make_inputs=_grad_inputs, grad=_slice_grad_grad, pointwise=False),
}
