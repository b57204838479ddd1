"""Reference of NONZERO_COORDINATES, from its page (dml_nonzero_coordinates_operator_desc.md in
../shared/spec/operators/): the count of the non-zero elements and their coordinates, exact."""

import numpy as np

from tests.catalog import random_tensor
from tests.reference.record import Attrs, Reference
from tests.reference.rules import read


def _nonzero(x, output_count_sizes=None, output_coordinates_sizes=None):
    """The count of non-zero elements (-0.0, +0.0 and FLOAT32 denormals are zero, NaN is not) and
    their coordinates in the last N dimensions, in ascending element order, zero rows after."""
    x = np.asarray(x)
    r = x.ndim
    vals = read(x) if x.dtype.kind == "f" else x.astype(object)
    flat = [i for i, v in enumerate(np.ravel(vals)) if (v != 0 if x.dtype.kind != "f" else not v == 0.0)]
    m = x.size
    count_shape = tuple(output_count_sizes) if output_count_sizes else (1,) * r
    coords_shape = tuple(output_coordinates_sizes) if output_coordinates_sizes else (1,) * (max(r, 2) - 2) + (m, r)
    n = coords_shape[-1]
    dims = x.shape[r - n:] if n <= r else (1,) * (n - r) + x.shape
    rows = np.zeros((m, n), np.uint32)
    for k, i in enumerate(flat):
        rows[k] = np.unravel_index(i, dims) if dims else ()
    return (np.full(count_shape, len(flat), np.uint32), rows.reshape(coords_shape))


def _nonzero_inputs(rng, types, shape, **_):
    x = random_tensor(rng, types["InputTensor"], shape)
    return [np.where(rng.random(shape) < 0.5, np.zeros((), x.dtype), x)]  # about half zeros


def _effective_n(shape):
    lead = next((i for i, s in enumerate(shape) if s != 1), len(shape))
    n = max(len(shape) - lead, 1)
    return {"output_coordinates_sizes": (1,) * (max(len(shape), 2) - 2) + (int(np.prod(shape)), n)} if shape else {}


REFERENCES = {
    "DML_OPERATOR_NONZERO_COORDINATES": Reference(
        fn=lambda x, **kw: [_nonzero(x, **kw)],
        attrs=(Attrs(), Attrs(shaped=_effective_n)),
        selection=True, pointwise=False, make_inputs=_nonzero_inputs, no_grad="integer outputs (a count, coordinates)"),
}
