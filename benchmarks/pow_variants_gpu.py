"""What POW's rules cost on a GPU: dmljax's POW forward (FLOAT32) and forward+backward (FLOAT16)
beside jnp's and beside forms with one rule taken out or done another way, side by side in one
run. A form here is a probe, not a candidate: most drop a rule DirectML needs (each says which);
their times show where dmljax's time over jnp's goes.

    python benchmarks/pow_variants_gpu.py

2^28 elements (EW_TOTAL), bases in [0.25, 8) and exponents from the benchmark's "shift" draw (as
benchmarks/elementwise_variants_gpu.py's POW), two input sets, device time from CUPTI, 20 calls.
Prints each form's time and its time over jnp's.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

import dmljax  # noqa: E402
from dmljax._src.dtypes import DataType  # noqa: E402
from dmljax._src.numerics import flush_denormals as flush  # noqa: E402
from dmljax.bench.inputs import draw_all  # noqa: E402
from dmljax.bench.timing import jax_device_times  # noqa: E402

N = int(os.environ.get("EW_TOTAL", 2 ** 28))
TINY = np.float32(np.finfo(np.float32).tiny)


def rule(g, e, p):
    """The page's rule: -inf with a non-integral exponent gives NaN."""
    return jnp.where((g == -np.inf) & (jnp.floor(e) != e), np.float32(np.nan), p)


FORWARD = {  # FLOAT32 forward: name -> f(x, e)
    "jnp": lambda x, e: jnp.power(x, e),
    "dmljax": lambda x, e: dmljax.element_wise_pow(x, e),
    # dmljax's formula until session 11 written out (flushes of both inputs and the output, the rule;
    # "rule by -FLT_MAX" below is dmljax's since)
    "written": lambda x, e: flush(rule(flush(x), flush(e), lax.pow(flush(x), flush(e)))),
    "no output flush": lambda x, e: rule(flush(x), flush(e), lax.pow(flush(x), flush(e))),
    "no input flushes": lambda x, e: flush(rule(x, e, lax.pow(x, e))),
    "no rule": lambda x, e: flush(lax.pow(flush(x), flush(e))),
    "flushes only of the output": lambda x, e: flush(lax.pow(x, e)),
    # the exponent's flush as a last select (a zero or denormal exponent gives 1): same values
    "exponent as a select": lambda x, e: flush(jnp.where(jnp.abs(e) < TINY, np.float32(1),
                                                         rule(flush(x), e, lax.pow(flush(x), e)))),
    # the rule by a stand-in: -inf as -FLT_MAX (whose powers overflow, underflow or are NaN as -inf's
    # are under the rule, the output's flush taking -1 / FLT_MAX to -0), e = 1 by a select: same values
    "rule by -FLT_MAX": lambda x, e: stand_in(flush(x), flush(e)),
    # the same with the exponent's flush unsigned (pow(x, +-0) = 1: a zero exponent's sign never
    # shows): a compare and a select, no multiply
    "rule by -FLT_MAX, exponent's flush unsigned": lambda x, e: stand_in(flush(x), jnp.where(jnp.abs(e) < TINY, np.float32(0), e)),
}


def stand_in(g, e):
    p = lax.pow(jnp.maximum(g, -np.finfo(np.float32).max), e)
    return flush(jnp.where(e == 1, g, p))


def half_grad(x, e, dy, stand_in=False, log="float32"):
    """The FLOAT16 gradient (a FLOAT16 base and exponent) written out as dmljax computes it, or
    with -inf's stand-in (-2^126) in both powers instead of the rule's exponent test (not
    DirectML's rule at a zero cotangent: -2^127 * 0 = 0 where -inf * 0 is NaN; the exponent's
    gradient differs at -inf too), or with ln|g| from XLA's FLOAT16 log (``log="float16"``: about
    one more FLOAT16 rounding) or without it (``log=None``: the exponent's gradient wrong, a floor)."""
    g, f, t = x.astype(np.float32), e.astype(np.float32), dy.astype(np.float32)
    if stand_in:
        gs = jnp.where(g == -np.inf, np.float32(-(2.0 ** 126)), g)
        y, e1 = lax.pow(gs, f), lax.pow(gs, f - 1)
    else:
        y, e1 = rule(g, f, lax.pow(g, f)), rule(g, f, lax.pow(g, f - 1))
    slope = jnp.where(f == 0, np.float32(0), f * e1)
    a = jnp.abs(g)
    if log == "float32":
        log_g = jnp.log(jnp.where(a == 0, np.float32(1), a))
    elif log == "float16":
        a16 = jnp.abs(x)
        log_g = jnp.log(jnp.where(a16 == 0, np.float16(1), a16)).astype(np.float32)
    else:
        log_g = np.float32(1)
    de = jnp.where((a == 0) | (jnp.abs(y) < TINY), np.float32(0), y * log_g)
    return (slope * t).astype(x.dtype), (de * t).astype(x.dtype)


def float_grad(x, e, dy, inputs=True, terms=True, rule_on=True, correction=True, nan_rule=False, pw=lax.pow):
    """The FLOAT32 gradient written out as dmljax computes it, or without one part (each a rule
    DirectML's semantics need, but for ``correction``, which is accuracy): the inputs' flushes,
    the flushes of the slope and of the exponent's term, the page's -inf rule, the correction of
    e - 1's rounding (TwoSum and ln|g|). The rule is the test of the exponent in both powers, in
    the second (of e - 1 rounded) for every negative base (session 11); ``nan_rule`` (tried in
    session 11, 1.29x jnp against this form's 1.15x): pow(g, e) with -inf read as -FLT_MAX and the
    slope NaN wherever that power is NaN and g is not. ``pw``: the power (a probe may pass another
    function of the same shape, benchmarks/pow_pallas_probe.py's exp(e * log x))."""
    fl = flush if inputs else (lambda v: v)
    g, f = fl(x), fl(e)
    em1 = f - 1
    if nan_rule and rule_on:
        y = pw(jnp.maximum(g, -np.finfo(np.float32).max), f)
        p = pw(g, em1)
    else:
        r = rule if rule_on else (lambda g, f, p: p)
        y = r(g, f, pw(g, f))
        p = pw(g, em1)
        if rule_on:
            p = jnp.where((g < 0) & (jnp.floor(f) != f), np.float32(np.nan), p)
    a = jnp.abs(g)
    log_g = jnp.log(jnp.where(a == 0, np.float32(1), a))
    if correction:
        back = em1 - f
        lo = (f - (em1 - back)) + (np.float32(-1) - back)
        corr = lo * log_g
        p = p * (1 + jnp.where(jnp.abs(corr) <= 0.5, corr, np.float32(0)))
        p = jnp.where((jnp.abs(lo) == 1) & jnp.signbit(g), -p, p)
    out = flush if terms else (lambda v: v)
    slope = jnp.where(f == 0, np.float32(0), f * p)
    if nan_rule and rule_on:
        slope = jnp.where(jnp.isnan(y) & ~jnp.isnan(g), np.float32(np.nan), slope)
    slope = out(slope)
    de = out(jnp.where((a == 0) | (jnp.abs(y) < TINY), np.float32(0), y * log_g))
    return slope * dy, de * dy


FLOAT_GRAD = {"written": float_grad, "the rule by -FLT_MAX and a NaN slope": lambda *a: float_grad(*a, nan_rule=True),
              "no input flushes": lambda *a: float_grad(*a, inputs=False),
              "no flushes of the terms": lambda *a: float_grad(*a, terms=False),
              "no rule": lambda *a: float_grad(*a, rule_on=False),
              "no correction": lambda *a: float_grad(*a, correction=False)}


GRAD = {  # forward+backward: name -> f(x, e, dy), FLOAT32 and FLOAT16
    "jnp": lambda x, e, dy: jax.vjp(jnp.power, x, e)[1](dy),
    "dmljax": lambda x, e, dy: jax.vjp(dmljax.element_wise_pow, x, e)[1](dy),
}
HALF_GRAD = {"written": half_grad, "stand-in": lambda *a: half_grad(*a, stand_in=True),
             "log in FLOAT16": lambda *a: half_grad(*a, log="float16"), "no log": lambda *a: half_grad(*a, log=None)}


def main():
    kinds = ("positive", "shift", "normal")
    rows = []
    for dtype in ("FLOAT32", "FLOAT16"):
        sets = [jax.block_until_ready(draw_all(np.uint32(s), kinds=kinds, shapes=((N,),) * 3,
                                               dtype=DataType.parse(dtype))) for s in range(2)]
        progs = [(f"grad {dtype} {k}", f, 3) for k, f in GRAD.items()]
        if dtype == "FLOAT32":
            progs = [(f"forward {dtype} {k}", f, 2) for k, f in FORWARD.items()] + progs
            progs += [(f"grad {dtype} {k}", f, 3) for k, f in FLOAT_GRAD.items()]
        else:
            progs += [(f"grad {dtype} {k}", f, 3) for k, f in HALF_GRAD.items()]
        groups = [(name, (lambda f, n: lambda i: f(*sets[i][:n]))(jax.jit(f), n)) for name, f, n in progs]
        times = jax_device_times(groups, 2)
        rows += [(name, times.get(name, {}).get("s", float("nan")) * 1e3) for name, _, _ in progs]
    base = {}
    print(f"jax {jax.__version__}; {jax.devices()[0]}; 2^{N.bit_length() - 1} elements")
    for name, ms in rows:
        kind = name.rsplit(" ", 1)[0] if name.endswith(" jnp") else None
        if kind:
            base[kind] = ms
    for name, ms in rows:
        key = next((k for k in base if name.startswith(k + " ")), None)
        ratio = ms / base[key] if key else float("nan")
        print(f"{name:44s} {ms:8.3f} ms  {ratio:6.3f}x jnp")


if __name__ == "__main__":
    main()
