"""MULTIHEAD_ATTENTION against jax.nn.dot_product_attention (cuDNN where a GPU has it), torch's
scaled_dot_product_attention (where torch sees a GPU) and the jnp twin, side by side in one run.

    python benchmarks/attention/attention.py [--out DIR] [GROUP ...]   (SMOKE=1: small shapes, any machine)

SEQUENCES=1024,4096 and HEAD_SIZES=64 (comma-separated) measure those alone; MODES=plain,mask picks
among plain, mask and past.

Groups (default: all):
- ``forward``: FLOAT16, batch 8, 16 heads of 64 and 128, sequences 512 to 16,384 (a CPU: batch 1,
  2 heads of 64, sequences 256 and 512), plain, with a KEY_SEQUENCE_LENGTH mask, and with a past
  key/value cache of half the sequence; against ``jax.nn.dot_product_attention`` (cuDNN on a GPU,
  XLA elsewhere), torch's ``scaled_dot_product_attention`` and the jnp twin (softmax(q k^T s) v with
  the [S, S] scores; left out where they would not fit). Every variant's timed call concatenates the
  cache to the new keys and values and builds its mask, torch's too; torch's forward call is timed
  eager (CUDA events, the host's launch gaps included) and replayed as a CUDA graph (without them,
  as the JAX figures' device time). Goal: within 1.3x cuDNN's time plain.
- ``backward``: the same calls under jax.grad of the output's sum (forward + backward).
- ``memory``: each program's memory (XLA's compiled memory analysis: temporaries, and arguments +
  outputs + temporaries) for one forward and one forward + backward call at the longest sequence.

Per-call time (device time where the backend records it: benchmarks/common.py), two input sets.
Writes <group>.json and <group>.md for each group run to DIR (default:
benchmarks/results/<device>/attention).
"""

import os
import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parents[2])]

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import common  # noqa: E402
import dmljax  # noqa: E402

GPU = jax.devices()[0].platform == "gpu"
BATCH, HEADS = (1, 2) if common.SMOKE or not GPU else (8, 16)
HEAD_SIZES = (64,) if common.SMOKE or not GPU else (64, 128)
SEQUENCES = (64,) if common.SMOKE else ((512, 1024, 2048, 4096, 8192, 16384) if GPU else (256, 512))


def _chosen(name: str, default: tuple, kind=int) -> tuple:
    return tuple(kind(x) for x in os.environ[name].split(",")) if os.environ.get(name) else default


SEQUENCES, HEAD_SIZES = _chosen("SEQUENCES", SEQUENCES), _chosen("HEAD_SIZES", HEAD_SIZES)
MODES = _chosen("MODES", ("plain", "mask", "past"), str)
TWIN_LIMIT = 1 << 31  # bytes of FLOAT32 scores the jnp twin may hold


def main():
    _, groups = common.arguments()
    groups = groups or ["forward", "backward", "memory"]
    report = common.Report("attention", "per-call time (benchmarks/common.py), two input sets")
    rng = np.random.default_rng(0)
    for g in groups:
        report.group = g
        {"forward": lambda r, rep: timed(r, rep, False), "backward": lambda r, rep: timed(r, rep, True),
         "memory": memory}[g](rng, report)
    report.write()


def _inputs(rng, s, d, past):
    shape = (BATCH, s, HEADS * d)
    q, k, v = (jnp.asarray(rng.standard_normal(shape).astype(np.float16)) for _ in range(3))
    p = s // 2 if past else 0
    pk = jnp.asarray(rng.standard_normal((BATCH, HEADS, p, d)).astype(np.float16)) if past else None
    lengths = jnp.asarray(np.full((1, BATCH), (s + p) * 3 // 4, np.int32))
    return q, k, v, pk, lengths


def _variants(s, d, mode, grad):
    scale = float(1 / np.sqrt(d))

    def dml(q, k, v, pk, lengths):
        kw = {"past_key": pk, "past_value": pk} if mode == "past" else {}
        if mode == "mask":
            kw.update(mask=lengths, mask_type="KEY_SEQUENCE_LENGTH")
        return dmljax.multihead_attention(q, k, v, scale=scale, head_count=HEADS, **kw)[0]

    def split(x):
        return x.reshape(BATCH, -1, HEADS, d)

    def nn(q, k, v, pk, lengths):
        kq, vq = split(k), split(v)
        if mode == "past":
            kq = jnp.concatenate([pk.transpose(0, 2, 1, 3), kq], axis=1)
            vq = jnp.concatenate([pk.transpose(0, 2, 1, 3), vq], axis=1)
        seq = lengths[0] if mode == "mask" else None
        if not GPU:  # XLA's CPU dot_general takes no FLOAT16 x FLOAT16 -> FLOAT32 product: FLOAT32 operands
            return jax.nn.dot_product_attention(*(x.astype(jnp.float32) for x in (split(q), kq, vq)), scale=scale,
                                                key_value_seq_lengths=seq).reshape(q.shape).astype(q.dtype)
        return jax.nn.dot_product_attention(split(q), kq, vq, scale=scale, key_value_seq_lengths=seq,
                                            implementation="cudnn").reshape(q.shape)

    def twin(q, k, v, pk, lengths):
        qh, kh, vh = (split(x).transpose(0, 2, 1, 3).astype(jnp.float32) for x in (q, k, v))
        if mode == "past":
            kh = jnp.concatenate([pk.astype(jnp.float32), kh], axis=2)
            vh = jnp.concatenate([pk.astype(jnp.float32), vh], axis=2)
        sc = jnp.einsum("bhsd,bhtd->bhst", qh, kh) * scale
        if mode == "mask":
            sc = sc + jnp.where(jnp.arange(sc.shape[-1]) >= lengths[0][:, None, None, None], -10000.0, 0.0)
        out = jnp.einsum("bhst,bhtd->bhsd", jax.nn.softmax(sc, axis=-1), vh)
        return out.transpose(0, 2, 1, 3).reshape(q.shape).astype(q.dtype)

    fns = {"dmljax.multihead_attention": dml, "jax.nn.dot_product_attention" + (" cudnn" if GPU else " (FLOAT32 on a CPU)"): nn}
    if BATCH * HEADS * s * (s + (s // 2 if mode == "past" else 0)) * 4 <= TWIN_LIMIT:
        fns["jnp twin"] = twin
    if grad:
        fns = {n: jax.grad(lambda q, k, v, pk, ln, f=f: jnp.sum(f(q, k, v, pk, ln).astype(jnp.float32)),
                           argnums=(0, 1, 2)) for n, f in fns.items()}
    return {n: jax.jit(f) for n, f in fns.items()}


def timed(rng, report, grad):
    for d in HEAD_SIZES:
        for s in SEQUENCES:
            for mode in MODES:
                sets = [_inputs(rng, s, d, mode == "past") for _ in range(2)]
                fns = _variants(s, d, mode, grad)
                try:
                    t = common.times([(n, lambda i, f=f: f(*sets[i % 2])) for n, f in fns.items()])
                except Exception as e:  # noqa: BLE001  (cuDNN refuses a shape: say so, go on)
                    report.line(f"{mode} S={s} D={d}: {type(e).__name__}: {str(e)[:120]}")
                    continue
                base = next(v for n, v in t.items() if n.startswith("jax.nn"))
                group = f"{'fwd+bwd' if grad else 'fwd'} {mode} S={s} D={d}"
                for name, v in t.items():
                    report.point(f"{group:34s} {name:40s} {v['s'] * 1e3:10.4f} ms  {v['s'] / base['s']:.3f}x",
                                 group=group, variant=name, ms=v["s"] * 1e3, kernels=v["kernels_per_call"],
                                 method=v["method"])
                line = _torch(sets[0], d, mode, grad)
                report.line(f"{group}: {line}")


def _torch(inputs, d, mode, grad) -> str:
    try:
        import torch
    except ImportError:
        return "torch: skipped (torch is not installed)"
    if not torch.cuda.is_available():
        return "torch: skipped (torch sees no GPU)"
    q, k, v, pk, lengths = (None if x is None else torch.from_numpy(np.asarray(x)).cuda() for x in inputs)

    def heads(x):
        return x.reshape(BATCH, -1, HEADS, d).transpose(1, 2)

    qh, kh, vh = heads(q), heads(k), heads(v)
    if grad:
        qh.requires_grad_(True)

    def call():  # the cache's concatenation and the mask are the call's work, as in dmljax's and jax's
        keys, values = (torch.cat([pk, kh], 2), torch.cat([pk, vh], 2)) if mode == "past" else (kh, vh)
        mask = None
        if mode == "mask":
            mask = (torch.arange(keys.shape[2], device="cuda")[None, :] < lengths[0][:, None])[:, None, None, :]
        out = torch.nn.functional.scaled_dot_product_attention(qh, keys, values, attn_mask=mask)
        if grad:
            out.float().sum().backward()
    graph = "" if grad else f", {common.torch_graph_ms(call):.4f} ms as a CUDA graph"
    return f"torch scaled_dot_product_attention {common.torch_ms(call):.4f} ms{graph} (CUDA events, torch {torch.__version__})"


def memory(rng, report):
    """Each program's own memory at the longest sequence, from XLA's compiled memory analysis (its
    temporaries, and arguments + outputs + temporaries): a process's peak_bytes_in_use only grows, so
    it cannot tell one program's peak from an earlier one's."""
    s, d = SEQUENCES[-1], HEAD_SIZES[0]
    inputs = _inputs(rng, s, d, False)
    scores = BATCH * HEADS * s * s * 2
    report.line(f"memory at S={s} D={d}: one FLOAT16 [S, S] score matrix for every head is {scores / 2**30:.2f} GiB")
    for grad in (False, True):
        for name, f in _variants(s, d, "plain", grad).items():
            if name == "jnp twin":
                continue
            analysis = f.lower(*inputs).compile().memory_analysis()
            if analysis is None:
                report.line(f"memory: {name}: the backend gives no memory analysis")
                continue
            temp = analysis.temp_size_in_bytes
            whole = temp + analysis.argument_size_in_bytes + analysis.output_size_in_bytes
            report.point(f"{'fwd+bwd' if grad else 'fwd':7s} S={s} D={d} {name:40s} temporaries {temp / 2**30:8.3f} GiB, "
                         f"with arguments and outputs {whole / 2**30:8.3f} GiB",
                         group="memory", variant=name, grad=grad, temp_gib=temp / 2**30, gib=whole / 2**30)


if __name__ == "__main__":
    main()
