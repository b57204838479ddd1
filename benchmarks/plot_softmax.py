"""Plot benchmarks/results/h100_activations/softmax_log.txt (made by softmax_gpu.py on the H100):
device ms per call of a copy, jax.nn, dmljax (the path it takes) and dmljax's XLA formula, forward
and forward+backward, per type and row length; the issue's torch.softmax figure (FLOAT16 rows of
32,768: 0.48 ms, quoted, not measured here) as a marker.

    python benchmarks/plot_softmax.py [LOG] [PNG]
"""

import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

LINE = re.compile(r"^(\w+)\s+(float\d+) rows of\s+(\d+): copy ([\d.]+) ms, jax.nn ([\d.]+), dmljax ([\d.]+) "
                  r"\(XLA path ([\d.]+)\).*fwd\+bwd ([\d.]+) vs jax.nn ([\d.]+) .*\(XLA path ([\d.]+)\)")


def main(log="benchmarks/results/h100_activations/softmax_log.txt",
         png="benchmarks/results/h100_activations/softmax.png"):
    rows = [m.groups() for m in map(LINE.match, open(log).read().splitlines()) if m]
    fig, axes = plt.subplots(1, 2, figsize=(13, 4.8))
    labels = [f"{op}\n{dt} x{n}" for op, dt, n, *_ in rows]
    x = range(len(rows))
    w = 0.2
    fwd = [("copy", 3, "grey"), ("jax.nn", 4, "tab:blue"), ("dmljax", 5, "tab:green"), ("dmljax, XLA formula", 6, "tab:olive")]
    for k, (name, i, color) in enumerate(fwd):
        axes[0].bar([p + (k - 1.5) * w for p in x], [float(r[i]) for r in rows], w, label=name, color=color)
    for p, r in zip(x, rows):
        if r[0] == "SOFTMAX" and r[1] == "float16" and r[2] == "32768":
            axes[0].plot([p], [0.48], "r*", markersize=12, label="torch.softmax (issue's figure)")
    axes[0].set_title("forward, device ms per call (2^28 elements, H100)")
    bwd = [("jax.nn autodiff", 8, "tab:blue"), ("dmljax", 7, "tab:green"), ("dmljax, XLA formula", 9, "tab:olive")]
    for k, (name, i, color) in enumerate(bwd):
        axes[1].bar([p + (k - 1) * w for p in x], [float(r[i]) for r in rows], w, label=name, color=color)
    axes[1].set_title("forward + backward (vjp), device ms per call")
    for ax in axes:
        ax.set_xticks(list(x))
        ax.set_xticklabels(labels, fontsize=7)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    print(f"wrote {png}")


if __name__ == "__main__":
    main(*sys.argv[1:])
