"""How far XLA's own FLOAT16 math lands from the float64 truth, on this backend: every one of the
65,536 FLOAT16 inputs for the unary functions, and every FLOAT16 first operand against 2,048
second ones for division (random bit patterns and specials) and pow (exponents in [-12, 12], the
integers to 16, halves and specials; float64's pow is C99's on both backends).

XLA computes a FLOAT16 sqrt, log, tanh, ... in FLOAT32 and rounds once, but on a GPU it may pick
a cheaper FLOAT32 approximation than for a FLOAT32 tensor (the result only needs FLOAT16's
precision). dmljax may use XLA's FLOAT16 function for a FLOAT16 tensor only where the result
stays within the operator's FLOAT16 budget on every backend; this script gives the evidence. The
reference is the float64 function on the same backend (x64 enabled), whose error is far below a
FLOAT16 ULP. Errors are in FLOAT16 ULPs of the reference (2^-24 below the normal range); a NaN
must meet a NaN, an infinity the same infinity.

    python tests/gpu/half_precision.py [OUT_JSON]

on a machine with a CUDA GPU (or any backend: the CPU's figures are its own), from the repository
root. Prints a table (and writes it as JSON to OUT_JSON); exit status 1 where a function dmljax
takes in XLA's FLOAT16 form on CUDA (``NATIVE``: sqrt, log, erf, tanh) is more than 1 FLOAT16 ULP
from float64 or misses a special value. Not a pytest module: pytest only imports this file.
"""

from __future__ import annotations

import json
import sys

import jax
import jax.numpy as jnp
import jax.scipy.special as jsp
import numpy as np

UNARY = {  # name: the jnp function (applied to FLOAT16, and to float64 for the reference)
    "SQRT": jnp.sqrt, "LOG": jnp.log, "EXP": jnp.exp, "TANH": jnp.tanh, "ERF": jsp.erf,
    "SIN": jnp.sin, "COS": jnp.cos, "TAN": jnp.tan, "SINH": jnp.sinh, "COSH": jnp.cosh,
    "ASIN": jnp.arcsin, "ACOS": jnp.arccos, "ATAN": jnp.arctan, "ASINH": jnp.arcsinh,
    "ACOSH": jnp.arccosh, "ATANH": jnp.arctanh, "RECIP": lambda x: 1 / x, "EXPM1": jnp.expm1,
    "LOG1P": jnp.log1p, "RSQRT": jax.lax.rsqrt,
}

NATIVE = ("SQRT", "LOG", "ERF", "TANH")
"""The functions dmljax computes in XLA's FLOAT16 form for a FLOAT16 tensor without ScaleBias on CUDA."""


def ulp_errors(y16, ref):
    """|y - ref| in FLOAT16 ULPs of ref, and the count of special-value mismatches."""
    y = y16.astype(jnp.float64)
    both_nan = jnp.isnan(y) & jnp.isnan(ref)
    ref_inf = jnp.isinf(ref)
    # where the reference rounds to a FLOAT16 infinity (|ref| >= 65520: 65504 plus half its
    # ULP, the tie going to the even infinity) that infinity is the answer. (Not by converting
    # ref to FLOAT16 and back inside this jit: XLA's excess-precision simplification removes
    # that round trip on the GPU, which made every overflowing quotient look wrong.)
    big = jnp.abs(ref) >= 65520.0
    r16 = jnp.where(big, jnp.copysign(jnp.inf, ref), ref)
    special = jnp.isnan(ref) | ref_inf | jnp.isinf(r16)
    bad_special = special & ~both_nan & ~(y == r16)
    a = jnp.abs(ref)
    e = jnp.floor(jnp.log2(jnp.where(a > 0, a, 1.0)))
    ulp = jnp.exp2(jnp.maximum(e, -14.0) - 10.0)
    err = jnp.where(special | jnp.isnan(y), 0.0, jnp.abs(y - ref) / ulp)
    err = jnp.where(jnp.isnan(y) & ~special, jnp.inf, err)
    return err, bad_special


def check_unary(name, fn):
    bits = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    x16 = jnp.asarray(bits.view(np.float16))
    y16 = jax.jit(fn)(x16)
    ref = jax.jit(fn)(x16.astype(jnp.float64))
    err, bad = ulp_errors(y16, ref)
    err = np.asarray(err)
    worst = int(np.argmax(err))
    return {"max_ulp": float(err.max()), "over_half": int((err > 0.5).sum()), "over_1": int((err > 1).sum()),
            "special_mismatch": int(np.asarray(bad).sum()),
            "worst_x": float(bits.view(np.float16)[worst]), "worst_y": float(np.asarray(y16)[worst]),
            "worst_ref": float(np.asarray(ref)[worst])}


def divisors(seed, n_b):
    """Random FLOAT16 bit patterns with the specials first."""
    rng = np.random.default_rng(seed)
    b = rng.integers(0, 65536, n_b, dtype=np.uint32).astype(np.uint16).view(np.float16).copy()
    b[:12] = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, 3.0, -7.0, 6.1e-5, 5.96e-8, 65504.0, 0.1]
    return b


def exponents(seed, n_b):
    """Random exponents in [-12, 12], the integers -16 to 16, halves, and the specials."""
    rng = np.random.default_rng(seed)
    e = rng.uniform(-12, 12, n_b).astype(np.float16)
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, -0.5, 1.5, 65504.0, -65504.0, 2049.0, 6e-8]
    fixed = np.array(special + list(range(-16, 17)) + [k + 0.5 for k in range(-8, 8)], np.float16)
    e[:fixed.size] = fixed
    return e


def check_binary(fn, b, seed=0):
    """fn(a, b_j) in FLOAT16 for every FLOAT16 a and each b_j, against fn in float64."""
    a = jnp.asarray(np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16))
    b = jnp.asarray(b)

    @jax.jit
    def chunk(bj):
        y = fn(a, bj)
        err, bad = ulp_errors(y, fn(a.astype(jnp.float64), bj.astype(jnp.float64)))
        return jnp.max(err), jnp.sum(err > 0.5), jnp.sum(err > 1), jnp.sum(bad)

    @jax.jit
    def worst(bj):
        y = fn(a, bj)
        err, bad = ulp_errors(y, fn(a.astype(jnp.float64), bj.astype(jnp.float64)))
        i = jnp.argmax(jnp.where(bad, jnp.inf, err))
        return a[i], y[i], err[i]

    out = {"max_ulp": 0.0, "over_half": 0, "over_1": 0, "special_mismatch": 0, "examples": []}
    for j in range(b.shape[0]):
        m, h, o, s = chunk(b[j])
        if (float(m) > 1 or int(s)) and len(out["examples"]) < 8:  # a few failing pairs
            x, y, e = worst(b[j])
            out["examples"].append({"a": float(x), "b": float(b[j]), "got": float(y), "ulp": float(e)})
        out["max_ulp"] = max(out["max_ulp"], float(m))
        out["over_half"] += int(h)
        out["over_1"] += int(o)
        out["special_mismatch"] += int(s)
    return out


def main() -> int:
    with jax.enable_x64(True):  # the float64 reference
        rows = {name: check_unary(name, fn) for name, fn in UNARY.items()}
        rows["DIVIDE"] = check_binary(jnp.divide, divisors(0, 2048))
        rows["POW"] = check_binary(jnp.power, exponents(1, 2048))
    result = {"backend": jax.default_backend(), "device": str(jax.devices()[0]), "jax": jax.__version__,
              "rows": rows}
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as fh:
            json.dump(result, fh, indent=1)
    print(f"backend {result['backend']} ({result['device']}), jax {result['jax']}")
    print(f"{'op':8s} {'max ulp':>8s} {'> 0.5':>8s} {'> 1':>6s} {'special':>7s}  worst")
    for name, r in rows.items():
        worst = f"x={r['worst_x']!r} y={r['worst_y']!r} ref={r['worst_ref']!r}" if "worst_x" in r else ""
        print(f"{name:8s} {r['max_ulp']:8.3f} {r['over_half']:8d} {r['over_1']:6d} {r['special_mismatch']:7d}  {worst}")
        for ex in r.get("examples", []):
            print(f"         {ex}")
    bad = [n for n in NATIVE if rows[n]["over_1"] or rows[n]["special_mismatch"]]
    print(f"{', '.join(bad)}: over 1 FLOAT16 ULP or a special value missed" if bad else
          f"{', '.join(NATIVE)}: within 1 FLOAT16 ULP, specials right")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
