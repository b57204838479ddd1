"""Reference of ONE_HOT, written element by element from its page (dml_one_hot_operator_desc.md
in ../shared/spec/operators/): an index out of range gives a sequence of OffValue only; negative
indices of signed types count from the end.

Values move untouched: each result is in the tensor's own type, compared bit for bit."""

import numpy as np

from tests.reference.indexing._common import (_FIRST, _LAST, _index_dtype, _indices, _land, _values)
from tests.reference.record import Attrs, Reference


# ------------------------------------------------------------------------------------- ONE_HOT
DEPTH = 4


def _one_hot(indices, values, axis, output_sizes):
    """Each sequence along Axis: OnValue at its index (negative from the end), OffValue elsewhere;
    all OffValue when the index is out of range (the page's Example 4)."""
    indices, values = np.asarray(indices), np.asarray(values)
    off, on = values.reshape(-1)[0], values.reshape(-1)[1]
    out = np.full(output_sizes, off, values.dtype)
    for c in np.ndindex(tuple(output_sizes)):
        i = _land(indices[c[:axis] + (0,) + c[axis + 1:]], output_sizes[axis])
        if i == c[axis]:
            out[c] = on
    return out


def _one_hot_grad(dy, indices, values, axis, output_sizes):
    on = _one_hot(indices, np.array([0.0, 1.0]).reshape((1,) * (np.ndim(values) - 1) + (2,)), axis, output_sizes)
    dy = np.asarray(dy, np.float64)
    dv = np.zeros(np.shape(values))
    flat = dv.reshape(-1)
    flat[0] = dy[on == 0].sum()
    flat[1] = dy[on == 1].sum()
    return (None, flat.reshape(np.shape(values)))


def _one_hot_attrs(axis_of):
    def shaped(shape):
        axis = axis_of(len(shape))
        return {"axis": axis, "output_sizes": tuple(DEPTH if a == axis else s for a, s in enumerate(shape))}
    return shaped


def _one_hot_inputs(rng, types, shape, axis, output_sizes):
    ishape = tuple(1 if a == axis else s for a, s in enumerate(shape))
    return [_indices(rng, _index_dtype(types["IndicesTensor"]), ishape, DEPTH),
            _values(rng, types["ValuesTensor"], shape)]


REFERENCES = {
    "DML_OPERATOR_ONE_HOT": Reference(
        fn=lambda i, v, **kw: [_one_hot(i, v, **kw)],
        attrs=(Attrs(shaped=_one_hot_attrs(_FIRST)), Attrs(shaped=_one_hot_attrs(_LAST))),
        selection=True, pointwise=False, make_inputs=_one_hot_inputs, grad=_one_hot_grad),
}
