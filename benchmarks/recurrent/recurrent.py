"""LSTM and GRU against the ``jax.lax.scan`` network a user would write (and torch's cuDNN nn.LSTM /
nn.GRU, where torch sees a GPU), side by side in one run.

    python benchmarks/recurrent/recurrent.py [--out DIR] [--forward] [--no-torch] [--hidden N[,N]]
        [--dtype float32|float16] [--outputs FILE.npz] [GROUP ...]   (SMOKE=1: small shapes, any machine)

Groups (default: all):
- ``lstm``, ``gru``: batch 64, hidden 512 and 1024, 512 steps, input = hidden (on a CPU: batch 8,
  hidden 64, 64 steps), FLOAT32 and FLOAT16, forward and forward + backward (the gradient of the
  sum of the output sequence with respect to X, W and R). The twin is the plain scan: the input
  projection hoisted, ``h @ R.T`` per step, jax.nn.sigmoid / jnp.tanh, its FLOAT32 products at
  precision HIGHEST (dmljax's are: a TF32 twin would not be the same arithmetic) and its FLOAT16
  ones accumulated in FLOAT32. Goal: at most 1.0x the twin's time, forward and forward + backward.

Options: ``--forward`` times the forward variants only (no forward + backward); ``--no-torch``
leaves out torch's cuDNN comparison; ``--hidden`` and ``--dtype`` pick among the sizes and types;
``--outputs FILE.npz`` saves dmljax's forward output of each point (the first input set), so that two
commits' outputs can be compared bit for bit (run with the same options: the inputs come from one
seeded generator, in order).
``python benchmarks/recurrent/recurrent.py --no-torch lstm gru`` runs the 16 JAX points of the
table (8 shapes and types, each forward and forward + backward, against their twins).

Per-call time (device time where the backend records it: benchmarks/common.py), two input sets;
the lines give each variant's kernels per call too (a step's kernels times the steps, roughly).
Writes <group>.json and <group>.md for each group run to DIR (default:
benchmarks/results/<device>/recurrent).
"""

import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parents[2])]

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

import common  # noqa: E402
import dmljax  # noqa: E402

GPU = jax.devices()[0].platform == "gpu"
if common.SMOKE:
    SIZES, BATCH, STEPS = (16,), 4, 8
elif GPU:
    SIZES, BATCH, STEPS = (512, 1024), 64, 512
else:
    SIZES, BATCH, STEPS = (64,), 8, 64
GATES = {"lstm": 4, "gru": 3}


def options(args: list[str]) -> tuple[list[str], dict]:
    """The groups and the options (``forward``, ``torch``, ``sizes``, ``dtypes``) of the command line
    (``--out`` already taken out)."""
    opts = {"forward": False, "torch": True, "sizes": SIZES, "dtypes": (np.float32, np.float16), "outputs": None}
    groups, args = [], list(args)
    while args:
        a = args.pop(0)
        name, _, value = a.partition("=")
        if name in ("--hidden", "--dtype", "--outputs") and not value:
            if not args:
                raise SystemExit(f"recurrent.py: {name} needs a value")
            value = args.pop(0)
        if a == "--forward":
            opts["forward"] = True
        elif a == "--no-torch":
            opts["torch"] = False
        elif name == "--outputs":
            opts["outputs"] = value
        elif name == "--hidden":
            opts["sizes"] = tuple(int(v) for v in value.split(","))
        elif name == "--dtype":
            if any(v not in ("float32", "float16") for v in value.split(",")):
                raise SystemExit(f"recurrent.py: --dtype takes float32 and/or float16, not {value!r}")
            opts["dtypes"] = tuple(np.dtype(v).type for v in value.split(","))
        elif a in GATES:
            groups.append(a)
        else:
            raise SystemExit(f"recurrent.py: unknown argument {a!r} (groups: {', '.join(GATES)})")
    return groups or list(GATES), opts


def main():
    _, args = common.arguments()
    groups, opts = options(args)
    report = common.Report("recurrent", "per-call time (benchmarks/common.py), two input sets")
    rng = np.random.default_rng(0)
    outputs, path = {}, opts.pop("outputs")
    for g in groups:
        report.group = g
        run(g, rng, report, outputs=outputs, **opts)
    report.write()
    if path:
        np.savez(path, **outputs)
        print(f"written: {path} (dmljax's forward outputs)")


# ---------------------------------------------------------------------------------- the twins
def _dot(a, b, dtype):
    return lax.dot_general(a, b, (((a.ndim - 1,), (1,)), ((), ())), preferred_element_type=jnp.float32,
                           precision=lax.Precision.HIGHEST if dtype == np.float32 else None)


def twin(kind, x, w, r):
    """What a user writes: x [T, B, I], w [G H, I], r [G H, H] (ONNX's gate orders); the output
    sequence [T, B, H]."""
    dtype = x.dtype
    hidden = r.shape[1]
    proj = _dot(x, w, dtype)  # [T, B, G H]

    def lstm_step(carry, p):
        h, c = carry
        g = p + _dot(h, r, dtype)
        i, o, f, cc = jnp.split(g, 4, axis=-1)
        c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(cc)
        h = (jax.nn.sigmoid(o) * jnp.tanh(c)).astype(dtype)
        return (h, c), h

    def gru_step(h, p):
        hf = h.astype(jnp.float32)
        zr = p[..., :2 * hidden] + _dot(h, r[:2 * hidden], dtype)
        z, rg = jax.nn.sigmoid(zr[..., :hidden]), jax.nn.sigmoid(zr[..., hidden:])
        hh = jnp.tanh(p[..., 2 * hidden:] + _dot((rg * hf).astype(dtype), r[2 * hidden:], dtype))
        h = ((1 - z) * hh + z * hf).astype(dtype)
        return h, h

    b = x.shape[1]
    if kind == "lstm":
        init = (jnp.zeros((b, hidden), dtype), jnp.zeros((b, hidden), jnp.float32))
        return lax.scan(lstm_step, init, proj)[1]
    return lax.scan(gru_step, jnp.zeros((b, hidden), dtype), proj)[1]


def ours(kind, x, w, r):
    op = dmljax.lstm if kind == "lstm" else dmljax.gru
    return op(x[None], w[None, None], r[None, None])[0][:, 0]


def _loss(f, kind):
    return jax.jit(jax.grad(lambda x, w, r: jnp.sum(f(kind, x, w, r).astype(jnp.float32)), argnums=(0, 1, 2)))


def _point(report, group, name, v, base=None, **fields):
    ratio = "" if base is None else f"  {v['s'] / base['s']:.3f}x"
    kernels = "" if v["kernels_per_call"] is None else f"  {v['kernels_per_call']:g} kernels"
    report.point(f"{group:34s} {name:40s} {v['s'] * 1e3:9.3f} ms{ratio}{kernels}", group=group, variant=name,
                 ms=v["s"] * 1e3, kernels=v["kernels_per_call"], method=v["method"], **fields)


def run(kind, rng, report, forward=False, torch=True, sizes=SIZES, dtypes=(np.float32, np.float16), outputs=None):
    g = GATES[kind]
    for hidden in sizes:
        for dtype in dtypes:
            def u(*s, scale=1 / np.sqrt(hidden)):
                return jnp.asarray((rng.uniform(-1, 1, s) * scale).astype(dtype))
            sets = [(u(STEPS, BATCH, hidden, scale=1.0), u(g * hidden, hidden), u(g * hidden, hidden))
                    for _ in range(2)]
            group = f"{kind.upper()} {np.dtype(dtype).name} B{BATCH} H{hidden} T{STEPS}"
            variants = [
                ("dmljax forward", jax.jit(lambda x, w, r: ours(kind, x, w, r))),
                ("lax.scan twin forward", jax.jit(lambda x, w, r: twin(kind, x, w, r))),
            ]
            if not forward:
                variants += [("dmljax forward+backward", _loss(ours, kind)),
                             ("lax.scan twin forward+backward", _loss(twin, kind))]
            t = common.times([(name, lambda i, f=f: f(*sets[i % 2])) for name, f in variants])
            for name, v in t.items():
                base = t["lax.scan twin forward+backward" if "backward" in name else "lax.scan twin forward"]
                _point(report, group, name, v, base)
            got, want = (np.asarray(f(*sets[0])) for _, f in variants[:2])
            if outputs is not None:
                outputs[group] = got
            got, want = got.astype(np.float64), want.astype(np.float64)
            report.line(f"{group}: largest difference from the twin {np.max(np.abs(got - want)):.3g}")
            if torch:
                report.line(_torch(kind, hidden, dtype, sets[0], forward))


def _torch(kind, hidden, dtype, arrays, forward_only=False) -> str:
    """torch's cuDNN nn.LSTM / nn.GRU of the same shape: forward and forward + backward, CUDA events."""
    try:
        import torch
    except ImportError:
        return "torch: not installed, no cuDNN comparison"
    if not torch.cuda.is_available():
        return "torch: no GPU, no cuDNN comparison"
    tdt = torch.float32 if dtype == np.float32 else torch.float16
    torch.backends.cudnn.allow_tf32 = False  # FLOAT32 products, as dmljax's
    net = (torch.nn.LSTM if kind == "lstm" else torch.nn.GRU)(hidden, hidden).cuda().to(tdt)
    x = torch.from_numpy(np.asarray(arrays[0])).cuda().requires_grad_(True)
    out = []
    for backward in (False,) if forward_only else (False, True):
        def call():
            y, _ = net(x)
            if backward:
                y.float().sum().backward()
        out.append(common.torch_ms(call))
    both = "" if forward_only else f", forward+backward {out[1]:.3f} ms"
    return (f"torch cuDNN nn.{'LSTM' if kind == 'lstm' else 'GRU'} {np.dtype(dtype).name} H{hidden}: forward "
            f"{out[0]:.3f} ms{both} (CUDA events over 10 calls, torch {torch.__version__}, TF32 off)")


if __name__ == "__main__":
    main()
