import sys
from pathlib import Path
sys.path[:0] = [str(Path(__file__).resolve().parents[1] / "benchmarks"), str(Path(__file__).resolve().parents[1])]
import jax, jax.numpy as jnp, numpy as np
from jax import lax
import common, dmljax
from dmljax._src.ops.attention.multihead_attention import score_reach, blockwise_attention, MaskType
from dmljax._src.kernels.attention import cudnn_attention
B, H, D = 8, 16, 64
sc, fv = 0.125, -10000.0
for S in (1024, 4096):
    rng = np.random.default_rng(0)
    q, k, v = (jnp.asarray(rng.standard_normal((B, S, H * D)).astype(np.float16)) for _ in range(3))
    lengths = jnp.asarray(np.full((1, B), S * 3 // 4, np.int32))
    def variant(order, out16=True):
        def f(q, k, v, ln):
            qs, ks, vs = (x.reshape(B, S, H, D) for x in (q, k, v))
            lengths = ln[0]
            exact = (jnp.min(lengths) >= 1) & (np.float32(fv) + 2 * score_reach(qs, ks, sc) < -110.0)
            kept = jnp.minimum(lengths, np.int32(S))
            sw = lambda *xs: tuple(x.transpose(0, 2, 1, 3) for x in xs)
            cud = lambda *xs: sw(cudnn_attention(*sw(*xs), sc, kept, widen=False))[0]
            xla = lambda *xs: sw(blockwise_attention(*sw(*xs), scale=sc, filter_value=fv, mask_type=MaskType.KEY_SEQUENCE_LENGTH, length_mask=lengths[None]).astype(np.float16))[0]
            if order == "cudnn first":
                out = lax.cond(~exact, xla, cud, qs, ks, vs)
            else:
                out = lax.cond(exact, cud, xla, qs, ks, vs)
            return out.reshape(q.shape)
        return f
    def nn(q, k, v, ln): return jax.nn.dot_product_attention(*(x.reshape(B, S, H, D) for x in (q, k, v)), scale=sc, key_value_seq_lengths=ln[0], implementation="cudnn").reshape(q.shape)
    def dml(q, k, v, ln): return dmljax.multihead_attention(q, k, v, scale=sc, head_count=H, mask=ln, mask_type="KEY_SEQUENCE_LENGTH", mask_filter_value=fv)[0]
    fns = {"dmljax": dml, "cudnn": nn, "cond xla first (as dmljax)": variant("xla first"), "cond cudnn first": variant("cudnn first")}
    fns = {n: jax.jit(f) for n, f in fns.items()}
    t = common.times([(n, lambda i, f=f: f(q, k, v, lengths)) for n, f in fns.items()])
    for n, r in t.items():
        txt = fns[n].lower(q, k, v, lengths).compile().as_text()
        print(f"S={S} {n:28s} {r['s']*1e3:8.4f} ms kernels/call {r['kernels_per_call']} transposes {txt.count('transpose_fusion')}", flush=True)
