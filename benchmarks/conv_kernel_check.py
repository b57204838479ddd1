"""CONVOLUTION's FLOAT32 kernel (dmljax/_src/conv_kernels.py) compiled on the GPU: each geometry
through dmljax.convolution against the float64 reference within the record's budget, against the
XLA formula on the same GPU (the path's other branch, cuDNN's convolution with the flush passes),
and its gradients against that formula's; DirectML's flushes; and that the program holds the
kernel.

    python benchmarks/conv_kernel_check.py

Prints each case and a summary; exit status 1 if any failed.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import dmljax  # noqa: E402
from benchmarks.kernel_checks import Cases  # noqa: E402
from dmljax import DataType  # noqa: E402
from dmljax._src import conv_kernels  # noqa: E402
from dmljax._src.ops import convolution as conv_op  # noqa: E402
from dmljax._src.ops.convolution import CONVOLUTION  # noqa: E402
from tests import catalog  # noqa: E402
from tests.compare import assert_matches  # noqa: E402
from tests.ops.convolution.test_convolution_kernel import (GEOMETRIES, _inputs, check_against_reference, geometry_of,  # noqa: E402
                                         xla_formula)
from tests.reference.convolution.convolution import _magnitude  # noqa: E402
from tests.reference.record import Attrs  # noqa: E402

CHECKS = GEOMETRIES + [
    ((4, 64, 56, 56), (64, 64, 3, 3), {"start_padding": (1, 1), "end_padding": (1, 1)}),
    ((2, 32, 28, 28), (64, 32, 3, 2), {"start_padding": (1, 0), "end_padding": (1, 1)}),
    ((3, 64, 17, 19), (16, 64, 3, 3), {"dilations": (2, 1), "start_padding": (1, 1), "end_padding": (3, 1)}),
    ((2, 16, 33, 8), (32, 16, 2, 3), {"mode": "CONVOLUTION", "start_padding": (1, 0), "end_padding": (0, 2)}),
    ((4, 64, 56, 56), (64, 64, 3, 3), {"strides": (2, 2), "start_padding": (1, 1), "end_padding": (1, 1)}),
    ((3, 32, 29, 30), (64, 32, 3, 3), {"strides": (2, 1), "dilations": (1, 2)}),
    ((2, 64, 20, 17), (32, 64, 3, 3), {"strides": (1, 2), "start_padding": (2, 0), "end_padding": (0, 1)}),
]


def main():
    cases = Cases()
    rng = np.random.default_rng(0)
    for x_shape, w_shape, attrs in CHECKS:
        label = f"{x_shape} * {w_shape} {attrs}"
        x, w = _inputs(x_shape, w_shape)
        geometry_ = geometry_of(attrs)
        with cases.case(f"{label}: takes the kernel"):
            assert conv_op._taps_kernel(x, w, geometry_)
            text = jax.jit(lambda a, b: dmljax.convolution(a, b, **attrs)).lower(x, w).compile().as_text()
            assert "dmljax_convolution_taps" in text, "no kernel in the program"
        y = None
        with cases.case(f"{label}: against the reference"):
            y = np.asarray(jax.jit(lambda a, b: dmljax.convolution(a, b, **attrs))(x, w))
            check_against_reference(y, x, w, attrs)
        with cases.case(f"{label}: against the XLA formula on the GPU"):
            want = np.asarray(jax.jit(lambda a, b: xla_formula(a, b, geometry_))(x, w))
            budget = catalog.budget(CONVOLUTION, Attrs(attrs), DataType.FLOAT32, sizes=x.shape, args=(x, w))
            assert_matches(y, [want.astype(np.float64)], DataType.FLOAT32, 2 * budget, "kernel vs XLA",
                           magnitude=_magnitude(x, w, **attrs))
            print(f"  equal on {int((y == want).sum())} of {y.size} elements")
        with cases.case(f"{label}: gradients against the XLA formula's"):
            dy = rng.standard_normal(y.shape).astype(np.float32)
            got = jax.jit(jax.grad(lambda a, b: jnp.vdot(conv_op._taps(a, b, geometry_), dy), argnums=(0, 1)))(x, w)
            want = jax.jit(jax.grad(lambda a, b: jnp.vdot(xla_formula(a, b, geometry_), dy), argnums=(0, 1)))(x, w)
            for g, h in zip(got, want):
                np.testing.assert_allclose(np.asarray(g), np.asarray(h), rtol=1e-5, atol=1e-5)
    with cases.case("bias and RELU after the kernel"):
        x, w = _inputs((2, 32, 12, 12), (32, 32, 3, 3))
        b = rng.standard_normal((1, 32, 1, 1)).astype(np.float32)
        relu = dmljax.FusedActivation("ACTIVATION_RELU")
        got = np.asarray(dmljax.convolution(x, w, b, start_padding=(1, 1), end_padding=(1, 1), fused_activation=relu))
        want = np.maximum(np.asarray(dmljax.convolution(x, w, start_padding=(1, 1), end_padding=(1, 1))) + b, 0)
        np.testing.assert_array_equal(got, want)
    with cases.case("batched by jax.vmap (Pallas's batching adds a grid axis)"):
        x, w = _inputs((2, 16, 7, 9), (32, 16, 3, 3))
        xs = np.stack([x, 2 * x, -x])
        pads = {"start_padding": (1, 1), "end_padding": (1, 1)}
        got = np.asarray(jax.jit(jax.vmap(lambda a: dmljax.convolution(a, w, **pads)))(xs))
        for i in range(3):
            np.testing.assert_array_equal(got[i], np.asarray(dmljax.convolution(xs[i], w, **pads)))
    with cases.case("denormals read and written as zeros"):
        x = np.full((1, 16, 9, 9), 1e-39, np.float32)
        w = np.full((16, 16, 3, 3), 2.0**100, np.float32)
        assert not np.asarray(dmljax.convolution(x, w, start_padding=(1, 1), end_padding=(1, 1))).any()
        x = np.full((1, 16, 9, 9), 1e-20, np.float32)
        w = np.zeros((16, 16, 3, 3), np.float32)
        w[:, 0] = -1e-19
        got = np.asarray(dmljax.convolution(x, w, start_padding=(1, 1), end_padding=(1, 1)))
        assert not got.any() and not np.isnan(got).any()
        print(f"  negative zeros: {int(np.signbit(got).sum())} of {got.size}")
    print(f"conv_kernels: BLOCK {conv_kernels.BLOCK}, WARPS {conv_kernels.WARPS}, STAGES {conv_kernels.STAGES}")
    return cases.summary()


if __name__ == "__main__":
    sys.exit(main())
