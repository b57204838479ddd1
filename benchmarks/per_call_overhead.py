"""Per-call overhead of a direct eager dmljax call against an earlier dmljax and a jitted jnp call,
side by side in one process (CPU, 2^10 FLOAT32 elements: the time is all dispatch).

Usage: copy an earlier checkout's dmljax/ to OLD/dmljax_old with its imports renamed
(`sed -i 's/\\bdmljax\\._src/dmljax_old._src/g'`), then `python benchmarks/per_call_overhead.py OLD`.
Prints, per operator, the minimum and median over 100 repetitions of 200 back-to-back calls.
"""
import sys, time
sys.path.insert(0, sys.argv[1])
import numpy as np, jax, jax.numpy as jnp
import dmljax, dmljax_old
x = jnp.asarray(np.random.default_rng(0).standard_normal(1024).astype(np.float32))
y = jnp.asarray(np.random.default_rng(1).standard_normal(1024).astype(np.float32))
jn = {"ADD": (jax.jit(lambda a, b: a + b), (x, y)), "THRESHOLD": (jax.jit(lambda a: jnp.maximum(a, 0.0)), (x,)), "ELU": (jax.jit(jax.nn.elu), (x,))}
def mk(m):
    return {"ADD": lambda: m.element_wise_add(x, y), "THRESHOLD": lambda: m.element_wise_threshold(x, min=0.0), "ELU": lambda: m.activation_elu(x)}
new, old = mk(dmljax), mk(dmljax_old)
def t(f, n=200):
    t0 = time.perf_counter()
    for _ in range(n): r = f()
    r.block_until_ready()
    return (time.perf_counter() - t0) / n * 1e6
for name in new:
    j, args = jn[name]; jf = lambda: j(*args)
    for f in (new[name], old[name], jf): t(f, 50)
    ro, rn, rj = [], [], []
    for rep in range(100):
        rn.append(t(new[name])); ro.append(t(old[name])); rj.append(t(jf))
    print(f"{name}: new {min(rn):.1f} us, old {min(ro):.1f} us, jnp jit {min(rj):.1f} us; new/old {min(rn)/min(ro):.2f} (medians {np.median(rn):.1f}/{np.median(ro):.1f}/{np.median(rj):.1f})")
