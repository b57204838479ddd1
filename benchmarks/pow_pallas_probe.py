"""A probe, not a candidate: POW FLOAT32's forward as a Pallas (Triton) kernel of its own, with
DirectML's rules (the inputs' and output's denormal flushes, the page's -inf rule), beside jnp's
and dmljax's (XLA's fused kernel), side by side in one run on a GPU. The flushes are written two
ways: as selects (what XLA's kernel does) and as one inline-PTX instruction each (``add.ftz.f32``
of -0: a denormal read as the zero of its sign, every other value itself). Also a chain, POW then
an add, where XLA fuses dmljax's POW with the add and the kernel cannot be fused: what taking POW
out of the caller's fusion costs. Checks first that every kernel gives dmljax's values (NaN as
NaN) on the drawn inputs and on special values.

    python benchmarks/pow_pallas_probe.py

2^28 elements (EW_TOTAL), the inputs of benchmarks/pow_variants_gpu.py, CUPTI kernel time, 20 calls
over two input sets. Prints each form's time and its time over jnp's. With PROBE_ONCE=1 each form
runs once, for Nsight Compute (as benchmarks/pow_ncu_gpu.py).
"""

from __future__ import annotations

import functools
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402
from jax.experimental import pallas as pl  # noqa: E402
from jax.experimental.pallas import triton as pl_triton  # noqa: E402

import dmljax  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pow_variants_gpu as pv  # noqa: E402
from dmljax._src.dtypes import DataType  # noqa: E402
from dmljax.bench.inputs import draw_all  # noqa: E402
from dmljax.bench.timing import jax_device_times  # noqa: E402

N = int(os.environ.get("EW_TOTAL", 2 ** 28))


def flush_select(v):
    """dmljax's flush (numerics.flush_denormals, whose custom_jvp a Pallas kernel does not take)."""
    return jnp.where(jnp.abs(v) < pv.TINY, v * np.float32(0), v)


def flush_ftz(v):
    [out] = pl_triton.elementwise_inline_asm("add.ftz.f32 $0, $1, 0f80000000;", args=[v], constraints="=f,f",
                                             pack=1, result_shape_dtypes=[jax.ShapeDtypeStruct.like(v)])
    return out


def _kernel(x_ref, e_ref, o_ref, *, flush, rules):
    x, e = x_ref[...], e_ref[...]
    if rules:
        x, e = flush(x), flush(e)
    p = lax.pow(x, e)
    if rules:
        p = flush(pv.rule(x, e, p))
    o_ref[...] = p


def pallas_pow(x, e, flush=flush_ftz, rules=True, block=1024, warps=4):
    n = x.shape[0]
    assert n % block == 0
    spec = pl.BlockSpec((block,), lambda i: (i,))
    return pl.pallas_call(functools.partial(_kernel, flush=flush, rules=rules),
                          out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype), grid=(n // block,),
                          in_specs=[spec, spec], out_specs=spec,
                          compiler_params=pl_triton.CompilerParams(num_warps=warps, num_stages=1),
                          name="probe_pow")(x, e)


def _explog(x, e):
    return jnp.exp(e * jnp.log(x))


def _exp_log_rules(x, e):
    x, e = pv.flush(x), pv.flush(e)
    return pv.flush(pv.rule(x, e, _explog(x, e)))


FORMS = {  # name -> (f(x, e, b), arguments)
    "jnp": (lambda x, e, b: jnp.power(x, e), 2),
    "dmljax (XLA's fused kernel)": (lambda x, e, b: dmljax.element_wise_pow(x, e), 2),
    "kernel, no rules (C99 pow only), 1024 a block, 4 warps": (lambda x, e, b: pallas_pow(x, e, rules=False), 2),
    "kernel, flushes as selects, 1024, 4": (lambda x, e, b: pallas_pow(x, e, flush=flush_select), 2),
    "kernel, flushes by add.ftz, 1024, 4": (lambda x, e, b: pallas_pow(x, e), 2),
    # 4 and 2 elements a thread (XLA's kernels take 4), flushes as selects (XLA's instructions)
    "kernel, flushes as selects, 512, 4": (lambda x, e, b: pallas_pow(x, e, flush=flush_select, block=512), 2),
    "kernel, flushes as selects, 256, 4": (lambda x, e, b: pallas_pow(x, e, flush=flush_select, block=256), 2),
    "kernel, flushes by add.ftz, 2048, 4": (lambda x, e, b: pallas_pow(x, e, block=2048), 2),
    "kernel, flushes by add.ftz, 2048, 8": (lambda x, e, b: pallas_pow(x, e, block=2048, warps=8), 2),
    "kernel, flushes by add.ftz, 4096, 8": (lambda x, e, b: pallas_pow(x, e, block=4096, warps=8), 2),
    # exp(e * log x) is not POW (its error grows with |e log x|), but a kernel of far fewer
    # instructions: whether XLA's own kernel then runs DirectML's rules at no cost
    "XLA exp(e * log x), no rules": (lambda x, e, b: _explog(x, e), 2),
    "XLA exp(e * log x), flushes and the rule as dmljax's": (lambda x, e, b: _exp_log_rules(x, e), 2),
    "chain: jnp pow, add": (lambda x, e, b: jnp.power(x, e) + b, 3),
    # forward+backward (b as dY): jnp's and dmljax's, and both with exp(e * log x) for each power
    # (jnp: autodiff of exp(e * log x); dmljax: its gradient written out with that power)
    "grad: jnp": (lambda x, e, b: jax.vjp(jnp.power, x, e)[1](b), 3),
    "grad: dmljax": (lambda x, e, b: jax.vjp(dmljax.element_wise_pow, x, e)[1](b), 3),
    "grad: jnp, exp(e * log x)": (lambda x, e, b: jax.vjp(_explog, x, e)[1](b), 3),
    "grad: dmljax's written out, exp(e * log x)": (lambda x, e, b: pv.float_grad(x, e, b, pw=_explog), 3),
    "chain: dmljax pow, add (one fused kernel)": (lambda x, e, b: dmljax.element_wise_add(dmljax.element_wise_pow(x, e), b), 3),
    "chain: kernel pow (add.ftz, 1024, 4), add": (lambda x, e, b: dmljax.element_wise_add(pallas_pow(x, e), b), 3),
}


def check():
    """Every kernel with the rules against dmljax's values, NaN as NaN: drawn and special values."""
    sp = np.array([0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, 3.0, -3.0, np.inf, -np.inf, np.nan, 1e-40, -1e-40,
                   1e-45, 3e38, -3e38, 1.5, -1.5, 1e-30, 130.0, -130.0, 7.4, -7.4, 0.3], np.float32)
    xs, es = np.meshgrid(sp, sp, indexing="ij")
    rng = np.random.default_rng(0)
    x = np.concatenate([xs.ravel(), rng.uniform(-12, 12, 8192 * 8 - xs.size)]).astype(np.float32)
    er = rng.uniform(-12, 12, 8192 * 8 - es.size)
    half = rng.integers(0, 2, er.size).astype(bool)
    er[half] = np.round(er[half])  # half the drawn exponents integral: negative bases meet both kinds
    e = np.concatenate([es.ravel(), er]).astype(np.float32)
    want = np.asarray(jax.jit(dmljax.element_wise_pow)(x, e))
    bad = {}
    for name, (f, _) in FORMS.items():
        if not name.startswith("kernel") or "no rules" in name:  # (exp-log forms are not POW)
            continue
        got = np.asarray(jax.jit(f)(x, e, None))
        diff = (got.view(np.uint32) != want.view(np.uint32)) & ~(np.isnan(got) & np.isnan(want))
        bad[name] = int(diff.sum())
        if diff.any():
            i = np.nonzero(diff)[0][:4]
            print(f"  {name}: {int(diff.sum())} differ, e.g. x={x[i]} e={e[i]} got {got[i]} want {want[i]}")
    return bad


def once():
    """Each form once, in order, for Nsight Compute (PROBE_ONCE=1): no check, no timing."""
    sets = draw_all(np.uint32(0), kinds=("positive", "shift", "normal"), shapes=((N,),) * 3, dtype=DataType.FLOAT32)
    for i, (name, (f, n)) in enumerate(FORMS.items()):
        c = jax.jit(f).lower(*sets[:n], *([None] * (3 - n))).compile()
        jax.block_until_ready(sets)
        print(f"FORM {i:2d} {name}", file=sys.stderr, flush=True)
        jax.block_until_ready(c(*sets[:n], *([None] * (3 - n))))


def main():
    if os.environ.get("PROBE_ONCE"):
        return once()
    print(f"jax {jax.__version__}; {jax.devices()[0]}; 2^{N.bit_length() - 1} elements")
    print("check against dmljax's values:", check())
    sets = [jax.block_until_ready(draw_all(np.uint32(s), kinds=("positive", "shift", "normal"), shapes=((N,),) * 3,
                                           dtype=DataType.FLOAT32)) for s in range(2)]
    groups = [(name, (lambda f, n: lambda i: f(*sets[i][:n], *([None] * (3 - n))))(jax.jit(f), n))
              for name, (f, n) in FORMS.items()]
    times = jax_device_times(groups, 2)
    base = times["jnp"]["s"]
    chain = times["chain: jnp pow, add"]["s"]
    grad = times["grad: jnp"]["s"]
    for name, _ in groups:
        t = times.get(name, {})
        ref = chain if name.startswith("chain") else grad if name.startswith("grad") else base
        print(f"{name:52s} {t.get('s', float('nan')) * 1e3:8.3f} ms  {t.get('s', float('nan')) / ref:6.3f}x jnp"
              f"  kernels {t.get('kernels_per_call', float('nan')):.0f}")


if __name__ == "__main__":
    main()
