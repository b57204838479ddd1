"""What the sharding benchmarks share: the two networks (examples/train_cnn.py's CNN and a
transformer block), built only from dmljax operators, their training steps, the device setup,
the timer and the markdown table.

The transformer block is examples/transformer.py's (pre-norm: MEAN_VARIANCE_NORMALIZATION1, one
GEMM to the stacked query/key/value, MULTIHEAD_ATTENTION, GEMM, ACTIVATION_GELU feed-forward,
ACTIVATION_LOG_SOFTMAX head, ADAM_OPTIMIZER), with its sizes as arguments so that one GPU is
busy. Its query/key/value columns are ordered head by head, so that splitting the columns of
that GEMM into contiguous blocks splits the heads (tensor parallelism).
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve()
sys.path[:0] = [str(HERE.parents[2]), str(HERE.parents[2] / "examples")]


def setup(argv=None, description="", options=None):
    """The command line every sharding benchmark takes; ``--cpu-devices N`` splits the CPU into
    N virtual devices before JAX starts (to run the script's code on any machine)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--cpu-devices", type=int, default=None,
                        help="N virtual CPU devices (a CPU run of the code, nothing about GPUs is learnt)")
    parser.add_argument("--devices", default=None,
                        help="device counts to measure, comma-separated (default: 1, 2, 4, ... up to all; 1 always)")
    parser.add_argument("--steps", type=int, default=20, help="timed steps (the median is reported)")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--size", choices=("gpu", "tiny"), default="gpu",
                        help="gpu: sizes at which one H200 is busy; tiny: a smoke run")
    parser.add_argument("--out", default=None, help="also write the table to this markdown file")
    if options is not None:
        options(parser)
    args = parser.parse_args(argv)
    import jax

    if args.cpu_devices:
        jax.config.update("jax_num_cpu_devices", args.cpu_devices)
    n = len(jax.devices())
    counts = [int(c) for c in args.devices.split(",")] if args.devices else \
        [c for c in (1, 2, 4, 8, 16) if c <= n]
    bad = [c for c in counts if c < 1 or c > n]
    if bad:
        parser.error(f"--devices asks for {bad}; this machine has {n} devices")
    return args, sorted({1, *counts})  # one device always: the speedups and gradients are against it


def environment() -> str:
    import jax
    import jaxlib

    import dmljax

    d = jax.devices()[0]
    return (f"device: {len(jax.devices())} x {d.device_kind} ({d.platform}); jax {jax.__version__}, "
            f"jaxlib {jaxlib.__version__}, dmljax {dmljax.__version__}, Python {sys.version.split()[0]}")


def median_seconds(step, state, batches, steps: int, warmup: int):
    """Runs ``state = step(state, batch)`` warmup + steps times (cycling through ``batches``),
    blocking on each; returns (the median of the timed steps' seconds, the final state)."""
    import jax

    times = []
    for i in range(warmup + steps):
        start = time.perf_counter()
        state = jax.block_until_ready(step(state, batches[i % len(batches)]))
        if i >= warmup:
            times.append(time.perf_counter() - start)
    return statistics.median(times), state


def max_relative_difference(a, b) -> float:
    """The largest |a - b| over each leaf, relative to the leaf's largest |a|."""
    import jax
    import numpy as np

    worst = 0.0
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
        x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
        worst = max(worst, float(np.max(np.abs(x - y))) / max(float(np.max(np.abs(x))), 1e-30))
    return worst


def table(title: str, header: list[str], rows: list[list], out: str | None = None) -> str:
    text = "\n".join([f"### {title}", "", environment(), "",
                      "| " + " | ".join(header) + " |", "|" + "---|" * len(header),
                      *("| " + " | ".join(str(c) for c in r) + " |" for r in rows), ""])
    print(text, flush=True)
    if out:
        with open(out, "a") as f:
            f.write(text + "\n")
    return text


# ------------------------------------------------------------------------------------ transformer
@dataclasses.dataclass(frozen=True)
class Block:
    vocab: int = 256
    length: int = 256
    width: int = 1024
    heads: int = 16
    hidden: int = 4096

    @property
    def head_size(self) -> int:
        return self.width // self.heads


TINY_BLOCK = Block(vocab=16, length=8, width=32, heads=4, hidden=64)
EPSILON = 1e-5


def block_init(cfg: Block, seed=0):
    import numpy as np

    rng = np.random.default_rng(seed)

    def w(n_in, n_out):
        return (rng.standard_normal((n_in, n_out)) / np.sqrt(n_in)).astype(np.float32)

    def row(n, value=0.0):
        return np.full((1, n), value, np.float32)

    return {"embed": w(cfg.vocab, cfg.width), "position": (0.1 * rng.standard_normal((cfg.length, cfg.width))).astype(np.float32),
            "norm0_scale": row(cfg.width, 1.0), "norm0_bias": row(cfg.width),
            "qkv": w(cfg.width, 3 * cfg.width), "qkv_bias": row(3 * cfg.width),
            "out": w(cfg.width, cfg.width), "out_bias": row(cfg.width),
            "norm1_scale": row(cfg.width, 1.0), "norm1_bias": row(cfg.width),
            "up": w(cfg.width, cfg.hidden), "up_bias": row(cfg.hidden),
            "down": w(cfg.hidden, cfg.width), "down_bias": row(cfg.width),
            "norm2_scale": row(cfg.width, 1.0), "norm2_bias": row(cfg.width),
            "head": w(cfg.width, cfg.vocab), "head_bias": row(cfg.vocab)}


def _dense(x, w, b):
    import jax.numpy as jnp

    import dmljax

    return dmljax.gemm(x, w, jnp.broadcast_to(b, (x.shape[0], w.shape[1])))


def _norm(x, p, name):
    import jax.numpy as jnp

    import dmljax

    return dmljax.mean_variance_normalization1(x, jnp.broadcast_to(p[f"{name}_scale"], x.shape),
                                               jnp.broadcast_to(p[f"{name}_bias"], x.shape), axes=(1,),
                                               epsilon=EPSILON)


def block_forward(cfg: Block, p, tokens, constrain=lambda x, kind: x):
    """Log-probabilities [n * length, vocab]. ``constrain(x, kind)`` may place an intermediate
    (kind "heads": the stacked query/key/value and the attended values, split by heads)."""
    import jax
    import jax.numpy as jnp

    import dmljax

    n = tokens.shape[0]
    onehot = jax.nn.one_hot(tokens.reshape(-1), cfg.vocab, dtype=jnp.float32)
    x = dmljax.gemm(onehot, p["embed"])
    x = dmljax.element_wise_add(x, jnp.tile(p["position"], (n, 1)))
    qkv = _dense(_norm(x, p, "norm0"), p["qkv"], p["qkv_bias"]).reshape(n, cfg.length, cfg.heads, 3, cfg.head_size)
    qkv = constrain(qkv, "heads")
    attended, _, _ = dmljax.multihead_attention(stacked_query_key_value=qkv, scale=float(cfg.head_size ** -0.5),
                                                head_count=cfg.heads)
    attended = constrain(attended.reshape(n, cfg.length, cfg.heads, cfg.head_size), "heads")
    x = dmljax.element_wise_add(x, _dense(attended.reshape(n * cfg.length, cfg.width), p["out"], p["out_bias"]))
    h = dmljax.activation_gelu(_dense(_norm(x, p, "norm1"), p["up"], p["up_bias"]))
    x = dmljax.element_wise_add(x, _dense(h, p["down"], p["down_bias"]))
    return dmljax.activation_log_softmax(_dense(_norm(x, p, "norm2"), p["head"], p["head_bias"]))


def block_loss(cfg: Block, p, tokens, targets, constrain=lambda x, kind: x):
    import jax
    import jax.numpy as jnp

    import dmljax

    onehot = jax.nn.one_hot(targets.reshape(-1), cfg.vocab, dtype=jnp.float32)
    picked = dmljax.reduce(dmljax.element_wise_multiply(onehot, block_forward(cfg, p, tokens, constrain)),
                           function="SUM", axes=(1,))
    return dmljax.element_wise_negate(dmljax.reduce(picked, function="AVERAGE", axes=(0,)))[0, 0]


def adam(params, grads, moments, step, lr=1e-3):
    """ADAM_OPTIMIZER on each parameter, seen as a 4-D tensor (the page's) by leading ones: not
    flattened, so that a parameter split by columns or rows stays split (a flattened one would be
    gathered onto every device and split again)."""
    import jax.numpy as jnp

    import dmljax

    new_params, new_moments = {}, {}
    t = jnp.full((1, 1, 1, 1), step, jnp.uint32)
    for k, p in params.items():
        m, v = moments[k]
        flat = [a.reshape((1,) * (4 - a.ndim) + a.shape) for a in (p, m, v, grads[k])]
        p2, m2, v2 = dmljax.adam_optimizer(*flat, t, learning_rate=lr)
        new_params[k] = p2.reshape(p.shape)
        new_moments[k] = (m2.reshape(p.shape), v2.reshape(p.shape))
    return new_params, new_moments


def block_data(cfg: Block, n: int, seed=0):
    """``n`` token sequences and their reversals (examples/transformer.py's task)."""
    import numpy as np

    x = np.random.default_rng(seed).integers(0, cfg.vocab, (n, cfg.length)).astype(np.int32)
    return x, x[:, ::-1].copy()
