"""Tensor parallelism of a transformer block built from dmljax operators (benchmarks/sharding/
models.py), over 1, 2, 4, ... devices, through jax.sharding: a training step (forward, jax.grad,
ADAM_OPTIMIZER) with the weights split, Megatron's way, and the batch whole on every device.

    query/key/value GEMM   columns split   (P(None, "model")): each device computes its heads
    MULTIHEAD_ATTENTION    heads split     (the stacked query/key/value and the attended values
                                            constrained to P(None, None, "model"))
    output GEMM            rows split      (P("model", None)): partial sums, all-reduced by XLA
    feed-forward up GEMM   columns split,  ACTIVATION_GELU on each device's columns
    feed-forward down GEMM rows split:     partial sums, all-reduced by XLA
    embeddings, normalizations, head       replicated

Adam's moments are split as their parameters. XLA inserts every collective; none is written by
hand. Strong scaling: the same global batch on every device count. For each count: the median
step time, the speedup against one device, the collectives the compiled step holds (their count
and the bytes they move a step, read from the compiled HLO), the time left beyond a perfect
split (step - one device's step / devices: what communication and unsplit work cost), and the
largest difference of the gradients against one device's, relative to each parameter's largest.

    python benchmarks/sharding/tensor_parallel.py [--devices 1,2,4] [--batch N] [--steps N]
        [--warmup N] [--size gpu|tiny] [--out FILE] [--cpu-devices N]

The default size (--size gpu: width 1,024, 16 heads, feed-forward 4,096, 256 tokens, 16
sequences) keeps one H200 busy; the run takes about a minute. ``--cpu-devices 4 --size tiny``
runs the code on a CPU's virtual devices (the suite's smoke test).
"""

from __future__ import annotations

import functools
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import models  # noqa: E402

COLUMNS = ("qkv", "qkv_bias", "up", "up_bias")
ROWS = ("out", "down")
_BYTES = {"f32": 4, "f16": 2, "bf16": 2, "s32": 4, "u32": 4, "f64": 8, "s64": 8, "u8": 1, "s8": 1, "pred": 1}
_COLLECTIVE = re.compile(r"= \(?((?:\w+\[[\d,]*\][^ ]*(?:, )?)+)\)? (all-reduce|all-gather|reduce-scatter|"
                         r"all-to-all|collective-permute)(?:-start)?\(")


def collective_traffic(hlo: str) -> dict[str, tuple[int, int]]:
    """Per kind of collective in a compiled module's text: (how many, bytes of their results)."""
    out: dict[str, tuple[int, int]] = {}
    for m in _COLLECTIVE.finditer(hlo):
        size = 0
        for dtype, dims in re.findall(r"(\w+)\[([\d,]*)\]", m.group(1)):
            n = 1
            for d in filter(None, dims.split(",")):
                n *= int(d)
            size += n * _BYTES.get(dtype, 4)
        count, total = out.get(m.group(2), (0, 0))
        out[m.group(2)] = (count + 1, total + size)
    return out


def shardings(mesh, params):
    from jax.sharding import NamedSharding, PartitionSpec as P

    def spec(name):
        if name in COLUMNS:
            return P(None, "model")
        if name in ROWS:
            return P("model", None)
        return P()
    return {k: NamedSharding(mesh, spec(k)) for k in params}


def main(argv=None):
    def options(parser):
        parser.add_argument("--batch", type=int, default=None, help="sequences a step (default 16; 2 with --size tiny)")

    args, counts = models.setup(argv, __doc__.split("\n\n")[0], options)
    import jax
    import numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

    cfg = models.TINY_BLOCK if args.size == "tiny" else models.Block()
    batch = args.batch or (2 if args.size == "tiny" else 16)
    bad = [n for n in counts if cfg.heads % n or cfg.hidden % n]
    if bad:
        raise SystemExit(f"tensor_parallel.py: {cfg.heads} heads and a feed-forward of {cfg.hidden} do not split "
                         f"over {bad} devices")
    params0 = models.block_init(cfg)
    moments0 = {k: (np.zeros_like(p), np.zeros_like(p)) for k, p in params0.items()}
    data = [models.block_data(cfg, batch, seed) for seed in (0, 1)]
    rows, base = [], None
    for n in counts:
        mesh = Mesh(jax.devices()[:n], ("model",))
        heads = NamedSharding(mesh, P(None, None, "model"))

        def constrain(x, kind):
            return jax.lax.with_sharding_constraint(x, heads) if kind == "heads" else x

        loss = functools.partial(models.block_loss, cfg, constrain=constrain)

        def step(state, batch_):
            params, moments, t = state
            grads = jax.grad(loss)(params, *batch_)
            params, moments = models.adam(params, grads, moments, t)
            return params, moments, t + 1

        ps = shardings(mesh, params0)
        rep = NamedSharding(mesh, P())
        state_sh = (ps, {k: (s, s) for k, s in ps.items()}, rep)
        state = jax.device_put((params0, moments0, np.int32(1)), state_sh)
        batches = [jax.device_put(b, rep) for b in data]
        jitted = jax.jit(step, in_shardings=(state_sh, rep), out_shardings=state_sh)
        seconds, _ = models.median_seconds(jitted, state, batches, args.steps, args.warmup)
        traffic = collective_traffic(jitted.lower(state, batches[0]).compile().as_text())
        grads_n = jax.jit(jax.grad(loss), in_shardings=(ps, rep, rep))(state[0], *batches[0])
        if n == 1:
            base, grads_1 = seconds, grads_n
        diff = models.max_relative_difference(grads_1, grads_n)
        moved = ", ".join(f"{c} {k} ({b / 2**20:.1f} MiB)" for k, (c, b) in sorted(traffic.items())) or "none"
        rows.append([n, batch, f"{seconds * 1e3:.2f}", f"{base / seconds:.2f}x",
                     f"{max(seconds - base / n, 0) * 1e3:.2f}", moved, f"{diff:.1e}"])
    return models.table(f"Tensor-parallel transformer block (width {cfg.width}, {cfg.heads} heads, feed-forward "
                        f"{cfg.hidden}, {cfg.length} tokens)",
                        ["devices", "batch (sequences)", "step ms (median)", "speedup vs 1",
                         "ms beyond a perfect split", "collectives a step (bytes of their results)",
                         "grad max rel diff vs 1 device"], rows, args.out)


if __name__ == "__main__":
    main()
