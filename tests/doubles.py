"""Objects that imitate or break what the API reads (shape, dtype, hash, repr): the fuzz tests and
the robustness regressions feed them to every public surface."""

import numpy as np


class FakeArray:
    """Looks like an array (shape, dtype) but JAX cannot take it."""

    shape = (2, 2)
    dtype = np.dtype(np.float32)


class RaisingArray:
    """Its shape and dtype raise when read."""

    @property
    def shape(self):
        raise RuntimeError("no shape")

    @property
    def dtype(self):
        raise RuntimeError("no dtype")


class BadRepr:
    def __repr__(self):
        raise RuntimeError("no repr")


class BadHash:
    def __hash__(self):
        raise RuntimeError("no hash")
