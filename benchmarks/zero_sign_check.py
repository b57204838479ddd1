"""The signs of zero results of CUMULATIVE_PRODUCT and CUMULATIVE_SUMMATION on this machine's
default device, against float64 NumPy: products whose zero crosses a block's edge (rows of 8,192:
the GPU kernel's carried element) and a short row (one block); sums of leading -0.0 terms (whose
sign SEMANTICS.md leaves open). Prints, per case, how many zero results there are and how many
have the reference's sign.

    python benchmarks/zero_sign_check.py
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax  # noqa: E402
import numpy as np  # noqa: E402

import dmljax  # noqa: E402


def main():
    rng = np.random.default_rng(3)
    print(f"jax {jax.__version__}; {jax.devices()[0]}", flush=True)
    for dtype in (np.float32, np.float16):
        for n in (1024, 8192):
            x = rng.choice([-1.0, 1.0], (64, n)) * np.exp2(rng.uniform(-0.01, 0.01, (64, n)))
            x[:, 1000] = -0.0  # zeros from here on, their signs the product of the terms'
            x = x.astype(dtype)
            for reverse in (0, 1):
                got = np.asarray(jax.jit(lambda v, r=reverse: dmljax.cumulative_product(v, axis=1, axis_direction=r))(x))
                wide = x.astype(np.float64)
                ref = np.cumprod(wide[:, ::-1], axis=1)[:, ::-1] if reverse else np.cumprod(wide, axis=1)
                zero = (ref == 0) & (got == 0)
                same = int((np.signbit(got[zero]) == np.signbit(ref[zero])).sum())
                print(f"CUMULATIVE_PRODUCT {np.dtype(dtype).name} rows of {n} {'reverse' if reverse else 'forward'}: "
                      f"{int(zero.sum())} zeros, {same} with float64's sign", flush=True)
        s = np.full((64, 1024), -0.0, dtype)
        s[:, 512:] = 1.0
        got = np.asarray(jax.jit(lambda v: dmljax.cumulative_summation(v, axis=1))(s))
        ref = np.cumsum(s.astype(np.float64), axis=1)
        zero = (ref == 0) & (got == 0)
        print(f"CUMULATIVE_SUMMATION {np.dtype(dtype).name} of leading -0.0: {int(zero.sum())} zeros, "
              f"{int(np.signbit(got[zero]).sum())} of them -0.0 (float64's cumsum: {int(np.signbit(ref[zero]).sum())})",
              flush=True)


if __name__ == "__main__":
    main()
