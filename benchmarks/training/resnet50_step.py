"""One ResNet-50 training step built from dmljax operators (CONVOLUTION, BATCH_NORMALIZATION_TRAINING
with its fused RELU and residual add, MAX_POOLING, REDUCE for the average pool and the loss, GEMM,
CAST, LOG_SOFTMAX, ADAM_OPTIMIZER), FLOAT16 with FLOAT32 master weights, against the same step in
plain jax.numpy / lax and in torch (channels_last, autocast, cuDNN), side by side in one run.

    python benchmarks/training/resnet50_step.py [--out DIR] [--batch 128] [--size 224]
        [--layouts NHWC,NCHW] [--no-torch]   (SMOKE=1: a narrow one-block-a-stage network, any machine)

The network is torchvision's ResNet-50 (bottlenecks of 3, 4, 6 and 3 blocks, the stride on the 3 x 3
convolution, 1000 classes). A step: the FLOAT32 master weights (one flat FLOAT32 vector, as a fused
optimizer keeps them) cast to FLOAT16, the forward in FLOAT16 (batch statistics in the
normalizations, the logits cast to FLOAT32 for LOG_SOFTMAX), the loss (the mean negative
log-probability of the labels), its gradient, one Adam update of the master weights and the
running statistics' update. No loss scaling in any of the three. dmljax runs in the logical NCHW
layout and with NHWC memory (each operator sees the NHWC activations as logical NCHW, as a DirectML
desc's strides would: transposes around each call, which XLA cancels between calls); the
jax.numpy / lax twin runs in the same memory layout with lax's own dimension numbers and Adam
written in jnp; torch in channels_last under torch.autocast with its fused Adam (torch is timed
with CUDA events over 10 steps).

Per-step time (device time where the backend records it: benchmarks/common.py) and images/s. Writes
resnet50_step.json and resnet50_step.md to DIR (default: benchmarks/results/<device>/training).
"""

import argparse
import os
import sys
import time
import traceback
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parents[2])]
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # torch shares the GPU

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

import common  # noqa: E402
import dmljax  # noqa: E402

LR, B1, B2, EPS = 1e-3, 0.9, 0.999, 1e-8
MOMENTUM, BN_EPS = 0.9, 1e-5
RELU = dmljax.FusedActivation("ACTIVATION_RELU")
STAGES = ((64, 1, 1), (128, 1, 2), (256, 1, 2), (512, 1, 2)) if common.SMOKE else \
    ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2))
WIDTH = 16 if common.SMOKE else 1  # SMOKE: every channel count divided by this
CLASSES = 10 if common.SMOKE else 1000


# ------------------------------------------------------------------------------------ the network
def architecture():
    """[(name, kind, shape)]: each parameter's name, kind (conv, scale, bias, dense, dense_bias) and
    shape, in order; and the blocks [(prefix, stride, has a projection)]."""
    params, blocks = [], []

    def conv(name, cin, cout, k):
        params.extend([(name, "conv", (cout, cin, k, k)), (name + ".scale", "scale", (1, cout, 1, 1)),
                       (name + ".bias", "bias", (1, cout, 1, 1))])

    stem = 64 // WIDTH
    conv("stem", 3, stem, 7)
    cin = stem
    for s, (width, count, stride) in enumerate(STAGES):
        width //= WIDTH
        for b in range(count):
            prefix = f"s{s}b{b}"
            st = stride if b == 0 else 1
            conv(prefix + ".c1", cin, width, 1)
            conv(prefix + ".c2", width, width, 3)
            conv(prefix + ".c3", width, 4 * width, 1)
            project = b == 0
            if project:
                conv(prefix + ".proj", cin, 4 * width, 1)
            blocks.append((prefix, st, project))
            cin = 4 * width
    params.extend([("dense", "dense", (cin, CLASSES)), ("dense_bias", "dense_bias", (1, CLASSES))])
    return params, blocks


PARAMS, BLOCKS = architecture()
SIZES = [int(np.prod(s)) for _, _, s in PARAMS]
OFFSETS = np.concatenate([[0], np.cumsum(SIZES)])
STATS = [(n, s) for n, k, s in PARAMS if k == "scale"]


def init(seed=0):
    """Flat FLOAT32 master weights (He-normal filters, unit scales, zero biases, a dense layer of
    variance 1 / fan-in), and the running statistics (means 0, variances 1)."""
    rng = np.random.default_rng(seed)
    parts = []
    for _, kind, shape in PARAMS:
        if kind == "conv":
            fan = int(np.prod(shape[1:]))
            parts.append(rng.standard_normal(shape, dtype=np.float32).ravel() * np.sqrt(2 / fan))
        elif kind == "dense":
            parts.append(rng.standard_normal(shape, dtype=np.float32).ravel() / np.sqrt(shape[0]))
        elif kind == "scale":
            parts.append(np.ones(int(np.prod(shape)), np.float32))
        else:
            parts.append(np.zeros(int(np.prod(shape)), np.float32))
    flat = np.concatenate(parts).astype(np.float32)
    stats = {n: (np.zeros(s, np.float32), np.ones(s, np.float32)) for n, s in STATS}
    return flat, stats


def unflatten(flat):
    """{name: the parameter} from the flat vector (views: slices XLA fuses into their readers)."""
    return {n: flat[o:o + z].reshape(s) for (n, _, s), o, z in zip(PARAMS, OFFSETS[:-1], SIZES)}


def forward(ops, p, x):
    """Logits (FLOAT32) and each normalization's batch statistics; ``ops`` supplies the layers."""
    batch_stats = {}

    def conv_bn(name, x, stride, pad, add=None, relu=True):
        y = ops.conv(x, p[name], stride, pad)
        y, mean, var = ops.bn(y, p[name + ".scale"], p[name + ".bias"], add, relu)
        batch_stats[name + ".scale"] = (mean, var)
        return y

    x = conv_bn("stem", x, 2, 3)
    x = ops.max_pool(x)
    for prefix, stride, project in BLOCKS:
        y = conv_bn(prefix + ".c1", x, 1, 0)
        y = conv_bn(prefix + ".c2", y, stride, 1)
        short = conv_bn(prefix + ".proj", x, stride, 0, relu=False) if project else x
        x = conv_bn(prefix + ".c3", y, 1, 0, add=short)
    return ops.head(x, p["dense"], p["dense_bias"]), batch_stats


def make_step(ops, adam):
    def loss_fn(flat, x, onehot):
        logits, batch_stats = forward(ops, unflatten(flat), x)
        return ops.loss(logits, onehot), batch_stats

    @jax.jit
    def step(flat, m, v, t, stats, x, onehot):
        (loss, batch_stats), g = jax.value_and_grad(loss_fn, has_aux=True)(flat, x, onehot)
        flat, m, v = adam(flat, m, v, g, t)
        stats = {k: (MOMENTUM * a + (1 - MOMENTUM) * batch_stats[k][0].reshape(a.shape).astype(np.float32),
                     MOMENTUM * b + (1 - MOMENTUM) * batch_stats[k][1].reshape(b.shape).astype(np.float32))
                 for k, (a, b) in stats.items()}
        return flat, m, v, t + 1, stats, loss
    return step


# ------------------------------------------------------------------------------------ dmljax
class DmljaxOps:
    """The layers from dmljax operators; ``nhwc``: activations in NHWC memory, seen as logical NCHW
    by each operator."""

    def __init__(self, nhwc: bool):
        self.nhwc = nhwc

    def _in(self, x):
        return jnp.transpose(x, (0, 3, 1, 2)) if self.nhwc else x

    def _out(self, x):
        return jnp.transpose(x, (0, 2, 3, 1)) if self.nhwc else x

    def conv(self, x, w, stride, pad):
        w16 = dmljax.cast(w, output_data_type="FLOAT16")
        return self._out(dmljax.convolution(self._in(x), w16, strides=(stride, stride), start_padding=(pad, pad),
                                            end_padding=(pad, pad)))

    def bn(self, x, scale, bias, add, relu):
        half = [dmljax.cast(a, output_data_type="FLOAT16") for a in (scale, bias)]
        y, mean, var = dmljax.batch_normalization_training(
            self._in(x), *half, None if add is None else self._in(add), epsilon=BN_EPS,
            fused_activation=RELU if relu else None)
        return self._out(y), mean, var

    def max_pool(self, x):
        return self._out(dmljax.max_pooling(self._in(x), window_size=(3, 3), strides=(2, 2), start_padding=(1, 1),
                                            end_padding=(1, 1)))

    def head(self, x, w, b):
        pooled = dmljax.reduce(self._in(x), function="AVERAGE", axes=(2, 3))
        pooled = pooled.reshape(pooled.shape[:2])
        bias = jnp.broadcast_to(dmljax.cast(b, output_data_type="FLOAT16"), (pooled.shape[0], CLASSES))
        logits = dmljax.gemm(pooled, dmljax.cast(w, output_data_type="FLOAT16"), bias)
        return dmljax.cast(logits, output_data_type="FLOAT32")

    @staticmethod
    def loss(logits, onehot):
        logp = dmljax.activation_log_softmax(logits)
        picked = dmljax.reduce(dmljax.element_wise_multiply(onehot, logp), function="SUM", axes=(1,))
        return dmljax.element_wise_negate(dmljax.reduce(picked, function="AVERAGE", axes=(0,)))[0, 0]


def dmljax_adam(flat, m, v, g, t):
    """ADAM_OPTIMIZER on the flat master weights, seen as a {1, 1, 1, n} tensor."""
    view = [a.reshape(1, 1, 1, -1) for a in (flat, m, v, g)]
    step = jnp.reshape(t, (1, 1, 1, 1)).astype(jnp.uint32)
    p2, m2, v2 = dmljax.adam_optimizer(*view, step, learning_rate=LR, beta1=B1, beta2=B2, epsilon=EPS)
    return p2.reshape(-1), m2.reshape(-1), v2.reshape(-1)


# ------------------------------------------------------------------------------------ jnp + lax
class LaxOps:
    """The same layers in jax.numpy and lax, FLOAT16 with FLOAT32 statistics, in the layout's own
    dimension numbers."""

    def __init__(self, nhwc: bool):
        self.nhwc = nhwc
        self.axes = (0, 1, 2) if nhwc else (0, 2, 3)

    def _channel(self, a):
        return a.reshape((1, 1, 1, -1) if self.nhwc else (1, -1, 1, 1))

    def conv(self, x, w, stride, pad):
        w = w.astype(jnp.float16)
        dn = ("NHWC", "OIHW", "NHWC") if self.nhwc else ("NCHW", "OIHW", "NCHW")
        return lax.conv_general_dilated(x, w, (stride, stride), [(pad, pad)] * 2, dimension_numbers=dn)

    def bn(self, x, scale, bias, add, relu):
        x32 = x.astype(jnp.float32)
        mean = jnp.mean(x32, axis=self.axes, keepdims=True)
        var = jnp.mean(jnp.square(x32 - mean), axis=self.axes, keepdims=True)
        y = (x32 - mean) * lax.rsqrt(var + BN_EPS) * self._channel(scale) + self._channel(bias)
        if add is not None:
            y = y + add.astype(jnp.float32)
        y = jax.nn.relu(y) if relu else y
        return y.astype(jnp.float16), mean, var

    def max_pool(self, x):
        window = (1, 3, 3, 1) if self.nhwc else (1, 1, 3, 3)
        strides = (1, 2, 2, 1) if self.nhwc else (1, 1, 2, 2)
        pads = [(0, 0), (1, 1), (1, 1), (0, 0)] if self.nhwc else [(0, 0), (0, 0), (1, 1), (1, 1)]
        return lax.reduce_window(x, -jnp.inf, lax.max, window, strides, pads)

    def head(self, x, w, b):
        pooled = jnp.mean(x.astype(jnp.float32), axis=(1, 2) if self.nhwc else (2, 3)).astype(jnp.float16)
        return (pooled @ w.astype(jnp.float16) + b.astype(jnp.float16)).astype(jnp.float32)

    @staticmethod
    def loss(logits, onehot):
        return -jnp.mean(jnp.sum(onehot * jax.nn.log_softmax(logits), axis=1))


def jnp_adam(flat, m, v, g, t):
    """Adam (bias-corrected, as ADAM_OPTIMIZER and torch's) in jnp."""
    t = t.astype(jnp.float32)
    m = B1 * m + (1 - B1) * g
    v = B2 * v + (1 - B2) * g * g
    step = LR * jnp.sqrt(1 - B2 ** t) / (1 - B1 ** t)
    return flat - step * m / (jnp.sqrt(v) + EPS), m, v


# ------------------------------------------------------------------------------------ torch
def torch_step_seconds(batch, size, steps=10):
    """Seconds per step of torchvision's ResNet-50 (channels_last, autocast FLOAT16, fused Adam),
    or None where torch or its GPU is absent."""
    torch = common.torch_cuda()
    try:
        import torchvision
    except ImportError:
        return None
    if torch is None:
        return None
    model = torchvision.models.resnet50(num_classes=CLASSES).cuda().to(memory_format=torch.channels_last)
    try:
        opt = torch.optim.Adam(model.parameters(), lr=LR, betas=(B1, B2), eps=EPS, fused=True)
    except (TypeError, RuntimeError):
        opt = torch.optim.Adam(model.parameters(), lr=LR, betas=(B1, B2), eps=EPS)
    xs = [torch.randn(batch, 3, size, size, device="cuda").to(memory_format=torch.channels_last) for _ in range(2)]
    ys = [torch.randint(0, CLASSES, (batch,), device="cuda") for _ in range(2)]
    loss_fn = torch.nn.CrossEntropyLoss()
    k = [0]

    def step():
        i = k[0] % 2
        k[0] += 1
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.float16):
            loss = loss_fn(model(xs[i]), ys[i])
        loss.backward()
        opt.step()
    return common.torch_ms(step, calls=steps, warmup=3) / 1e3


# ------------------------------------------------------------------------------------ the run
def main():
    _, rest = common.arguments()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", type=int, default=2 if common.SMOKE else 128)
    ap.add_argument("--size", type=int, default=32 if common.SMOKE else 224)
    ap.add_argument("--layouts", default="NHWC,NCHW")
    ap.add_argument("--no-torch", action="store_true")
    args = ap.parse_args(rest)
    layouts = args.layouts.split(",")
    if any(la not in ("NHWC", "NCHW") for la in layouts):
        ap.error(f"--layouts {args.layouts}: NHWC, NCHW or both")
    report = common.Report("training", "per-step time (benchmarks/common.py), two input sets; torch: CUDA events")
    report.group = "resnet50_step"
    rng = np.random.default_rng(0)
    flat, stats = init(0)
    report.line(f"ResNet-50{' (SMOKE: narrow)' if common.SMOKE else ''}: {flat.size} parameters, batch "
                f"{args.batch}, {args.size} x {args.size}, FLOAT16 with FLOAT32 master weights")
    labels = [rng.integers(0, CLASSES, args.batch) for _ in range(2)]
    onehots = [jnp.asarray(np.eye(CLASSES, dtype=np.float32)[y]) for y in labels]
    images = rng.standard_normal((2, args.batch, 3, args.size, args.size), dtype=np.float32).astype(np.float16)
    state = jax.device_put((flat, np.zeros_like(flat), np.zeros_like(flat), np.int32(1), stats))
    for layout in layouts:
        nhwc = layout == "NHWC"
        xs = [jnp.asarray(x.transpose(0, 2, 3, 1) if nhwc else x) for x in images]
        for name, ops, adam in (("dmljax", DmljaxOps(nhwc), dmljax_adam), ("jax.numpy + lax", LaxOps(nhwc), jnp_adam)):
            try:
                t0 = time.perf_counter()
                step = make_step(ops, adam).lower(*state, xs[0], onehots[0]).compile()
                compile_s = time.perf_counter() - t0
                loss = float(step(*state, xs[0], onehots[0])[-1])
                t = common.times([(name, lambda i, f=step: f(*state, xs[i], onehots[i]))])[name]
            except Exception:  # noqa: BLE001  (one variant's failure is reported, the run goes on)
                report.line(f"{name} {layout}: FAILED {traceback.format_exc(limit=3)[-800:]}")
                continue
            report.point(f"{name:16s} {layout}: {t['s'] * 1e3:8.2f} ms a step, {args.batch / t['s']:8.0f} images/s "
                         f"(first loss {loss:.3f}; compiled in {compile_s:.0f} s; kernels {t['kernels_per_call']})",
                         variant=name, layout=layout, batch=args.batch, size=args.size, ms=t["s"] * 1e3,
                         images_per_s=args.batch / t["s"], loss=loss, compile_s=compile_s,
                         kernels=t["kernels_per_call"], method=t["method"])
    if not args.no_torch:
        s = torch_step_seconds(args.batch, args.size)
        if s is not None:
            report.point(f"{'torch':16s} channels_last autocast: {s * 1e3:8.2f} ms a step, {args.batch / s:8.0f} "
                         f"images/s", variant="torch", layout="channels_last", batch=args.batch, size=args.size,
                         ms=s * 1e3, images_per_s=args.batch / s, method="CUDA events over 10 steps")
    report.write()


if __name__ == "__main__":
    main()
