"""The PADDING kernel (dmljax/_src/pad_kernels.py) compiled on the GPU against XLA's formula of the
same call (the kernel switched off), bit for bit, and against np.pad.

    python benchmarks/pad_kernel_check.py

Every copying mode, FLOAT32, FLOAT16, INT8 and UINT16, 1-D to 5-D, pads longer than the axis,
a last axis longer than the kernel's column block (pad_kernels.BLOCK), rows not filling the last
program, and the gradient of a FLOAT32 call against the XLA formula's. Prints each case and a
summary; exit status 1 if any failed.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import dmljax  # noqa: E402
from benchmarks.kernel_checks import Cases, with_settings  # noqa: E402
from dmljax._src import pad_kernels  # noqa: E402

NP_MODES = {"EDGE": "edge", "REFLECTION": "reflect", "SYMMETRIC": "symmetric", "WRAP": "wrap"}
CASES = [((10,), (3,), (4,)), ((5, 7), (2, 9), (3, 1)), ((3, 4, 5), (1, 0, 2), (2, 3, 0)),
         ((2, 3, 2, 6), (0, 1, 2, 7), (1, 0, 3, 5)), ((2, 2, 3, 3, 9), (1, 0, 2, 0, 3), (0, 1, 0, 4, 4)),
         ((1000, 1024), (64, 64), (64, 64)), ((37, 6000), (3, 100), (5, 2)), ((3, 5000), (0, 5), (0, 5000))]


def main():
    cases = Cases()
    rng = np.random.default_rng(0)
    for shape, s, e in CASES:
        for mode, np_mode in NP_MODES.items():
            for dtype in (np.float32, np.float16, np.int8, np.uint16):
                with cases.case(f"{mode} {shape} {s} {e} {np.dtype(dtype).name}"):
                    x = jnp.asarray((rng.standard_normal(shape) * 40).astype(dtype))

                    def f(v, m=mode):
                        return dmljax.padding(v, padding_mode=m, start_padding=s, end_padding=e)

                    assert pad_kernels.use_kernel(x.shape, x.dtype, dmljax.PaddingMode[mode], s, e)
                    got = np.asarray(jax.jit(f)(x))
                    xla = np.asarray(with_settings(pad_kernels, lambda v: jax.jit(f)(v), x, ENABLED=False))
                    want = np.pad(np.asarray(x), list(zip(s, e)), mode=np_mode)
                    assert got.shape == want.shape, (got.shape, want.shape)
                    assert np.array_equal(got.view(np.uint8), xla.view(np.uint8)), "kernel != XLA formula"
                    assert np.array_equal(got.view(np.uint8), want.view(np.uint8)), "kernel != np.pad"
    with cases.case("gradient of a FLOAT32 REFLECTION call"):
        x = jnp.asarray(rng.standard_normal((64, 700)).astype(np.float32))
        dy = jnp.asarray(rng.standard_normal((64 + 9, 700 + 300)).astype(np.float32))

        def g(v):
            y = dmljax.padding(v, padding_mode="REFLECTION", start_padding=(4, 100), end_padding=(5, 200))
            return jnp.sum(y * dy)

        got = np.asarray(jax.jit(jax.grad(g))(x))
        want = np.asarray(with_settings(pad_kernels, lambda v: jax.jit(jax.grad(g))(v), x, ENABLED=False))
        assert np.array_equal(got, want)
    return cases.summary()


if __name__ == "__main__":
    sys.exit(main())
