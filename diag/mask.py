import sys
from pathlib import Path
sys.path[:0] = [str(Path(__file__).resolve().parents[1] / "benchmarks"), str(Path(__file__).resolve().parents[1])]
import jax, jax.numpy as jnp, numpy as np
from jax import lax
import common, dmljax
from dmljax._src.ops.attention.multihead_attention import score_reach
B, H, D = 8, 16, 64
for S in (1024, 4096):
    rng = np.random.default_rng(0)
    q, k, v = (jnp.asarray(rng.standard_normal((B, S, H * D)).astype(np.float16)) for _ in range(3))
    lengths = jnp.asarray(np.full((1, B), S * 3 // 4, np.int32))
    sp = lambda x: x.reshape(B, S, H, D)
    sc = 1 / 8
    def dml(q, k, v, ln): return dmljax.multihead_attention(q, k, v, scale=sc, head_count=H, mask=ln, mask_type="KEY_SEQUENCE_LENGTH")[0]
    def nn(q, k, v, ln): return jax.nn.dot_product_attention(sp(q), sp(k), sp(v), scale=sc, key_value_seq_lengths=ln[0], implementation="cudnn").reshape(q.shape)
    def nn_reach(q, k, v, ln):
        r = score_reach(sp(q), sp(k), sc)
        return (nn(q, k, v, ln).astype(jnp.float32) * jnp.where(r < 1e9, 1.0, 0.0)).astype(jnp.float16)
    def nn_cond(q, k, v, ln):
        ok = jnp.min(ln) >= 1
        return lax.cond(ok, lambda a, b, c: nn(a, b, c, ln), lambda a, b, c: a, q, k, v)
    def nn_cond_reach(q, k, v, ln):
        ok = (jnp.min(ln) >= 1) & (score_reach(sp(q), sp(k), sc) < 1e9)
        return lax.cond(ok, lambda a, b, c: nn(a, b, c, ln), lambda a, b, c: a, q, k, v)
    fns = {"dmljax": dml, "cudnn": nn, "cudnn+reach": nn_reach, "cudnn in cond": nn_cond, "cudnn in cond+reach": nn_cond_reach}
    fns = {n: jax.jit(f) for n, f in fns.items()}
    t = common.times([(n, lambda i, f=f: f(q, k, v, lengths)) for n, f in fns.items()])
    for n, r in t.items():
        print(f"S={S} {n:22s} {r['s']*1e3:8.4f} ms kernels/call {r['kernels_per_call']}", flush=True)
    if S == 1024:
        txt = fns["dmljax"].lower(q, k, v, lengths).compile().as_text()
        open(Path(sys.argv[1]) / "mask_hlo.txt", "w").write(txt)
