"""The PADDING kernel (dmljax/_src/pad_kernels.py) compiled on the GPU against XLA's formula of the
same call (the kernel switched off), bit for bit, and against np.pad.

    python benchmarks/pad_kernel_check.py

Every copying mode, FLOAT32, FLOAT16, INT8 and UINT16, 1-D to 5-D, pads longer than the axis,
a last axis longer than the kernel's column block (pad_kernels.BLOCK), rows not filling the last
program, and the gradient of a FLOAT32 call against the XLA formula's. Every mode takes the kernel
here (pad_kernels.MODES is widened for the run; dmljax sends only EDGE to it). Prints each case and a
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
from dmljax._src.ops.padding import pad  # noqa: E402

NP_MODES = {"EDGE": "edge", "REFLECTION": "reflect", "SYMMETRIC": "symmetric", "WRAP": "wrap"}
CASES = [((10,), (3,), (4,)), ((5, 7), (2, 9), (3, 1)), ((3, 4, 5), (1, 0, 2), (2, 3, 0)),
         ((2, 3, 2, 6), (0, 1, 2, 7), (1, 0, 3, 5)), ((2, 2, 3, 3, 9), (1, 0, 2, 0, 3), (0, 1, 0, 4, 4)),
         ((1000, 1024), (64, 64), (64, 64)), ((37, 6000), (3, 100), (5, 2)), ((3, 5000), (0, 5), (0, 5000))]


def main():
    # every copying mode through the kernel here, though dmljax sends only EDGE to it on a GPU
    pad_kernels.MODES = tuple(dmljax.PaddingMode[m] for m in NP_MODES)
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
                    # the formula itself in a new function, so that jit traces it again with the
                    # kernel off (the public operator keeps one compiled callable per attribute set)
                    xla = np.asarray(with_settings(
                        pad_kernels, lambda v: jax.jit(lambda u: pad(u, dmljax.PaddingMode[mode], None, s, e))(v),
                        x, ENABLED=False))
                    want = np.pad(np.asarray(x), list(zip(s, e)), mode=np_mode)
                    assert got.shape == want.shape, (got.shape, want.shape)
                    assert np.array_equal(got.view(np.uint8), xla.view(np.uint8)), "kernel != XLA formula"
                    assert np.array_equal(got.view(np.uint8), want.view(np.uint8)), "kernel != np.pad"
    with cases.case("gradient of a FLOAT32 REFLECTION call"):
        x = jnp.asarray(rng.standard_normal((64, 700)).astype(np.float32))
        dy = jnp.asarray(rng.standard_normal((64 + 9, 700 + 300)).astype(np.float32))

        def g(v):
            return jnp.sum(pad(v, dmljax.PaddingMode.REFLECTION, None, (4, 100), (5, 200)) * dy)

        got = np.asarray(jax.jit(jax.grad(g))(x))
        want = np.asarray(with_settings(pad_kernels, lambda v: jax.jit(jax.grad(lambda u: g(u)))(v), x,
                                        ENABLED=False))
        assert np.array_equal(got, want)
    with cases.case("the XLA formula is another program (the check can fail)"):
        x = jnp.asarray(rng.standard_normal((40, 300)).astype(np.float16))

        def h(v):
            return pad(v, dmljax.PaddingMode.EDGE, None, (3, 5), (3, 5))

        on = jax.jit(h).lower(x).as_text()
        off = with_settings(pad_kernels, lambda v: jax.jit(lambda u: h(u)).lower(v).as_text(), x, ENABLED=False)
        assert ("dmljax_pad" in on) == (jax.default_backend() == "gpu") and "dmljax_pad" not in off
    return cases.summary()


if __name__ == "__main__":
    sys.exit(main())
