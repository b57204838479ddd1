"""SOFTMAX and LOG_SOFTMAX over the last axis against jax.nn, side by side in one run.

    python benchmarks/activations/softmax.py [--out DIR]      (SMOKE=1: small shapes, any machine)

FLOAT32 and FLOAT16 tensors of 2^28 elements in rows of 1,024 and of 32,768. For each: the time
per call of a device copy of the tensor, jax.nn.softmax / jax.nn.log_softmax, dmljax's operator
(on a GPU, rows of 2,048 to 65,536 take its Pallas kernel) and the same operator with the kernel
off (``dmljax.use_kernels(False, "softmax")``: XLA's formula), forward, and forward+backward
(``jax.vjp`` with a random cotangent) against jax.nn's autodiff. Device time where the backend
records it (benchmarks/common.py). Writes softmax.json, softmax.md and, where matplotlib is
installed, softmax.png to DIR (default: benchmarks/results/<device>/activations).
"""

import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parents[2])]

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import common  # noqa: E402
import dmljax  # noqa: E402

TOTAL = 2 ** 14 if common.SMOKE else 2 ** 28
ROWS = (1024, 32768) if not common.SMOKE else (1024, 4096)
OPS = {"SOFTMAX": (dmljax.activation_softmax, jax.nn.softmax),
       "LOG_SOFTMAX": (dmljax.activation_log_softmax, jax.nn.log_softmax)}


def _forward_backward(f):
    return lambda x, g: jax.vjp(f, x)[1](g)[0]


def measure(report):
    rng = np.random.default_rng(1)
    for dtype in (np.float32, np.float16):
        for n in ROWS:
            shape = (TOTAL // n, n)
            xs = [jnp.asarray((rng.standard_normal(shape, dtype=np.float32) * 4).astype(dtype)) for _ in range(2)]
            g = jnp.asarray(rng.standard_normal(shape, dtype=np.float32).astype(dtype))
            for name, (dml, jnn) in OPS.items():
                ref = lambda x, jnn=jnn: jnn(x, axis=-1)  # noqa: E731
                programs = {"jax.nn": common.compiled(ref, xs[0]),
                            "dmljax": common.compiled(dml, xs[0]),
                            "jax.nn fwd+bwd": common.compiled(_forward_backward(ref), xs[0], g),
                            "dmljax fwd+bwd": common.compiled(_forward_backward(dml), xs[0], g)}
                with dmljax.use_kernels(False, "softmax"):
                    programs["dmljax, kernel off"] = common.compiled(dml, xs[0])
                    programs["dmljax, kernel off fwd+bwd"] = common.compiled(_forward_backward(dml), xs[0], g)
                groups = [("copy", lambda i: common.copy(xs[i % 2]))]
                groups += [(k, (lambda f, both: (lambda i: f(xs[i % 2], g)) if both else (lambda i: f(xs[i % 2])))(
                    f, k.endswith("fwd+bwd"))) for k, f in programs.items()]
                t = common.times(groups)
                ms = {k: v["s"] * 1e3 for k, v in t.items()}
                report.point(
                    f"{name:11s} {np.dtype(dtype).name:7s} rows of {n:5d}: copy {ms['copy']:.3f} ms, jax.nn "
                    f"{ms['jax.nn']:.3f}, dmljax {ms['dmljax']:.3f} (kernel off {ms['dmljax, kernel off']:.3f}): "
                    f"time(dmljax)/time(jax.nn) {ms['dmljax'] / ms['jax.nn']:.3f}, of a copy's bandwidth "
                    f"{ms['copy'] / ms['dmljax']:.2f}; fwd+bwd {ms['dmljax fwd+bwd']:.3f} against jax.nn "
                    f"{ms['jax.nn fwd+bwd']:.3f}: {ms['dmljax fwd+bwd'] / ms['jax.nn fwd+bwd']:.3f} "
                    f"(kernel off {ms['dmljax, kernel off fwd+bwd']:.3f})",
                    op=name, dtype=np.dtype(dtype).name, row=n, shape=list(shape), ms=ms,
                    kernels={k: v["kernels_per_call"] for k, v in t.items()}, method=t["copy"]["method"])


def plot(report):
    """Forward and forward+backward times per type and row length, as bars."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    pts = report.points["softmax"]
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.8))
    labels = [f"{p['op']}\n{p['dtype']} x{p['row']}" for p in pts]
    for ax, keys, title in (
            (axes[0], ("copy", "jax.nn", "dmljax", "dmljax, kernel off"), "forward, ms per call"),
            (axes[1], ("jax.nn fwd+bwd", "dmljax fwd+bwd", "dmljax, kernel off fwd+bwd"),
             "forward + backward (vjp), ms per call")):
        w = 0.8 / len(keys)
        for k, key in enumerate(keys):
            ax.bar([i + (k - (len(keys) - 1) / 2) * w for i in range(len(pts))], [p["ms"][key] for p in pts], w,
                   label=key)
        ax.set_title(f"{title} ({report.env['device']})")
        ax.set_xticks(range(len(pts)))
        ax.set_xticklabels(labels, fontsize=7)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(report.out / "softmax.png", dpi=110)


def main():
    report = common.Report("activations", f"2^{TOTAL.bit_length() - 1} elements a tensor, rows along the last "
                           "axis, two input sets; " + "per-call time (benchmarks/common.py)")
    report.group = "softmax"
    measure(report)
    report.write()
    plot(report)


if __name__ == "__main__":
    main()
