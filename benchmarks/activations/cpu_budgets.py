"""Why ELU, SCALED_ELU, SWISH, SCALED_TANH and REDUCE MULTIPLY in FLOAT32 cost more than their jnp
twins on the CPU: each cheaper form's largest error against float64 where DirectML's rule bites,
beside the operator's ULP budget, and its time and dmljax's against the twin (paired, host clock,
one call of each at a time, as the benchmark suite times them).

    python benchmarks/activations/cpu_budgets.py      (seconds on 2 CPUs; SMOKE=1: smaller inputs)

Errors are in FLOAT32 ULP of the float64 value (np.spacing of its FLOAT32 rounding); a result of
zero where the true value is a normal number counts as its distance from zero in ULP (a true
value among the denormals is flushed first, as DirectML flushes FLOAT32 results). The
ranges: ELU and SCALED_ELU just below zero, where exp(x) - 1 cancels; SWISH where exp(-|x|) is a
FLOAT32 denormal (which the CPU flushes) and x * exp(x) is still normal; SCALED_TANH where Beta * x
is a FLOAT32 denormal (flushed) and Alpha * Beta * x is normal; REDUCE MULTIPLY over rows whose
product is finite but whose partial products leave FLOAT32's range (1e30 * 1e30 * 1e-30) or, in
any order of 9 terms, FLOAT64's (2^126 nine times, then 2^-126 nine times), where a result of inf
or 0 for a finite normal product counts as an infinite error. Times: 2^20 random normal inputs
(rows of 1,024 for REDUCE), as the benchmark suite draws them (dmljax/bench/inputs.py).
"""

import math
import os
import sys
import time
from fractions import Fraction
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[2])]

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import dmljax  # noqa: E402
from dmljax.bench.cases import OPERATOR_RECIPES  # noqa: E402

SMOKE = bool(os.environ.get("SMOKE"))
N = 1 << (14 if SMOKE else 20)
REPS = 5 if SMOKE else 61
TINY = np.finfo(np.float32).tiny


def ulps(got, exact):
    """|got - exact| in FLOAT32 ULP of exact (float64, a denormal flushed to zero as DirectML's
    FLOAT32 results are), NaN-free inputs."""
    got, exact = np.asarray(got, np.float64), np.asarray(exact, np.float64)
    exact = np.where(np.abs(exact) < TINY, 0 * exact, exact)
    unit = np.spacing(np.maximum(np.abs(exact), TINY).astype(np.float32)).astype(np.float64)
    return float(np.max(np.abs(got - exact) / unit))


def inputs(shape):
    """Eight random normal input sets, called in turn (as the suite rotates them)."""
    return [jax.random.normal(jax.random.key(i), shape, np.float32) for i in range(8)]


def paired(f, g, xs):
    """Median over REPS of time(f) / time(g), one call of each in turn (which goes first
    alternating) on the same input set, each synchronised (host clock)."""
    f, g = jax.jit(f), jax.jit(g)
    for _ in range(3):
        jax.block_until_ready((f(xs[0]), g(xs[0])))
    ratios = []
    for i in range(REPS):
        t = {}
        for name, h in (("f", f), ("g", g)) if i % 2 == 0 else (("g", g), ("f", f)):
            start = time.perf_counter()
            jax.block_until_ready(h(xs[i % len(xs)]))
            t[name] = time.perf_counter() - start
        ratios.append(t["f"] / t["g"])
    return float(np.median(ratios))


def negative_near_zero():
    """-2^-30 to -0.35 (where exp(x) - 1 cancels), log-spaced, as FLOAT32."""
    return -np.geomspace(2.0 ** -30, 0.35, N).astype(np.float32)


def far_tail():
    """x from -92 to -87.4: exp(x) under FLOAT32's smallest normal, x * exp(x) above it."""
    return np.linspace(-92.0, -87.4, N).astype(np.float32)


def tiny_beta_x(beta):
    """x with Beta * x a FLOAT32 denormal: 2^-126 to 2^-126 / Beta."""
    return np.linspace(TINY, TINY / beta * 0.999, N).astype(np.float32)


def main():
    timed = inputs((N,))
    a, g = 1.0, 1.0507009873554805  # ELU's Alpha; SCALED_ELU's Alpha and Gamma as jax.nn.selu's
    sa = 1.6732632423543772
    alpha, beta = 1.7159, 0.6667  # SCALED_TANH as the suite's twin calls it
    rows = []

    def elu_exact(v):
        return np.where(v >= 0, v, a * np.expm1(v.astype(np.float64)))

    xs = negative_near_zero()
    forms = {
        "ACTIVATION_ELU": (8, lambda v: dmljax.activation_elu(v, alpha=a), xs, elu_exact, {
            "jnp: where(x > 0, x, alpha * (exp(x) - 1))": lambda v: jnp.where(v > 0, v, a * (jnp.exp(v) - 1)),
            "jnp: where(x > 0, x, alpha * expm1(x))": lambda v: jnp.where(v > 0, v, a * jnp.expm1(v)),
        }),
        "ACTIVATION_SCALED_ELU": (
            8, lambda v: dmljax.activation_scaled_elu(v, alpha=sa, gamma=g), xs,
            lambda v: g * np.where(v > 0, v, sa * np.expm1(v.astype(np.float64))), {
                "jnp: where(x > 0, gamma * x, gamma * (alpha * exp(x) - alpha))": lambda v: jnp.where(
                    v > 0, g * v, g * (sa * jnp.exp(v) - sa)),
                "jax.nn.selu (expm1)": jax.nn.selu,
                "gamma * where(x > 0, x, alpha * expm1(x))": lambda v: g * jnp.where(v > 0, v, sa * jnp.expm1(v)),
            }),
        "ACTIVATION_SWISH": (
            8, lambda v: dmljax.activation_swish(v, sigmoid_input_scale=1.0), far_tail(),
            lambda v: v.astype(np.float64) / (1 + np.exp(-v.astype(np.float64))), {
                "jnp: x * sigmoid(x)": lambda v: v * jax.nn.sigmoid(v),
                "jnp: x * exp(x) / (1 + exp(x)) for x < 0": lambda v: jnp.where(
                    v < 0, v * jnp.exp(v) / (1 + jnp.exp(v)), v / (1 + jnp.exp(-v))),
            }),
        "ACTIVATION_SCALED_TANH": (
            7, lambda v: dmljax.activation_scaled_tanh(v, alpha=alpha, beta=beta), tiny_beta_x(beta),
            lambda v: alpha * np.tanh(beta * v.astype(np.float64)), {
                "jnp: alpha * tanh(beta * x)": lambda v: alpha * jnp.tanh(beta * v),
                "jnp: (alpha * beta) * x below 2^-12, else alpha * tanh(beta * x)": lambda v: jnp.where(
                    jnp.abs(v) < 2.0 ** -12, (alpha * beta) * v, alpha * jnp.tanh(beta * v)),
            }),
    }
    twins = {  # the suite's (dmljax/bench/cases.py)
        "ACTIVATION_ELU": lambda v: OPERATOR_RECIPES["ACTIVATION_ELU"].jnp(v, alpha=a),
        "ACTIVATION_SCALED_ELU": lambda v: OPERATOR_RECIPES["ACTIVATION_SCALED_ELU"].jnp(v, alpha=sa, gamma=g),
        "ACTIVATION_SWISH": lambda v: OPERATOR_RECIPES["ACTIVATION_SWISH"].jnp(v, sigmoid_input_scale=1.0),
        "ACTIVATION_SCALED_TANH": lambda v: OPERATOR_RECIPES["ACTIVATION_SCALED_TANH"].jnp(v, alpha=alpha, beta=beta),
    }
    for op, (budget, ours, xs_, exact, cheaper) in forms.items():
        want = exact(xs_)
        twin = twins[op]
        rows.append((op, "dmljax", budget, ulps(jax.jit(ours)(xs_), want), paired(ours, twin, timed)))
        for name, f in cheaper.items():
            rows.append((op, name, budget, ulps(jax.jit(f)(xs_), want), paired(f, twin, timed)))
    rows += multiply_rows()
    print("| operator | form | budget (ULP) | max error (ULP) | time / twin's |")
    print("|---|---|---|---|---|")
    for op, name, budget, err, ratio in rows:
        print(f"| {op} | {name} | {budget} | {err:.3g} | {ratio:.2f} |")


def multiply_rows():
    """REDUCE MULTIPLY (budget: N ULP of N terms, finite wherever the product is)."""
    big, small = 2.0 ** 126, 2.0 ** -126
    rows = np.array([[1e30, 1e30, 1e-30] + [1.0] * 15, [big] * 9 + [small] * 9], np.float32)
    exact = np.array([float(math.prod(Fraction(float(t)) for t in r)) for r in rows])  # exact, then rounded
    x = inputs((1024, 1024) if not SMOKE else (128, 128))

    def ours(v):
        return dmljax.reduce(v, function="MULTIPLY", axes=(1,))

    def twin(v):
        return jnp.prod(v, 1, keepdims=True)

    def wide(v):  # the plain product in FLOAT64, rounded once
        with jax.enable_x64(True):
            return jax.lax.convert_element_type(jnp.prod(jax.lax.convert_element_type(v, np.float64), 1,
                                                         keepdims=True), np.float32)

    def err(f):
        got = np.asarray(jax.jit(f)(rows), np.float64).ravel()
        return np.inf if not np.isfinite(got).all() or (got == 0).any() else ulps(got, exact)
    budget = rows.shape[1]
    return [("REDUCE[MULTIPLY]", "dmljax", budget, err(ours), paired(ours, twin, x)),
            ("REDUCE[MULTIPLY]", "jnp.prod", budget, err(twin), 1.0),
            ("REDUCE[MULTIPLY]", "jnp.prod in FLOAT64, rounded once", budget, err(wide), paired(wide, twin, x))]


if __name__ == "__main__":
    main()
