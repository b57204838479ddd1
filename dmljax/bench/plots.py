"""Plots: GB/s against size, one PNG per data type, one panel per operator (matplotlib, optional:
``pip install dmljax[bench]``; without it the plots are left out with a note)."""

from __future__ import annotations

import math
import os

from dmljax.bench.report import LABELS, short

__all__ = ["plot"]


def plot(res: dict, folder: str) -> list[str]:
    """One PNG per data type: GB/s against size, one panel per operator."""
    try:
        import matplotlib  # noqa: PLC0415  (optional)
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # noqa: PLC0415
    except ImportError:
        res["notes"].append("matplotlib not importable: no plots (pip install dmljax[bench]).")
        return []
    paths = []
    styles = {"dmljax_jit": ("C0", "-", "o"), "dmljax_call": ("C0", ":", "."), "jnp_jit": ("C1", "--", "s"),
              "torch_eager": ("C2", ":", "v"), "torch_compile": ("C2", "-", "^"), "ort": ("C4", "-.", "d"),
              "copy": ("k", "-", None)}
    for d in res["dtypes"]:
        recs = [r for r in res["throughput"] if r["dtype"] == d]
        if not recs:
            continue
        ops = sorted({r["op"] for r in recs})
        cols = min(3, len(ops))
        rows = math.ceil(len(ops) / cols)
        fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.6 * rows), squeeze=False, sharey=True)
        for ax, op in zip(axes.flat, ops):
            mine = sorted((r for r in recs if r["op"] == op), key=lambda r: r["n"])
            for v, (c, ls, mk) in styles.items():
                xs = [r["n"] for r in mine if v in r["variants"]]
                ys = [r["variants"][v]["gbps"] for r in mine if v in r["variants"]]
                if xs:
                    ax.plot(xs, ys, color=c, linestyle=ls, marker=mk, ms=3, label=LABELS[v])
            ax.set_xscale("log", base=2)
            ax.set_title(short(op), fontsize=9)
            ax.grid(alpha=0.3)
            ax.set_xlabel("elements")
        for ax in axes.flat[len(ops):]:
            ax.axis("off")
        axes[0][0].set_ylabel("GB/s (host clock)")
        legend = {}
        for ax in axes.flat:
            for h, lab in zip(*ax.get_legend_handles_labels()):
                legend.setdefault(lab, h)
        if legend:
            fig.legend(list(legend.values()), list(legend), loc="lower center", ncol=len(legend), fontsize=8)
        fig.suptitle(f"{res['meta']['device']}: {d}, jax {res['meta']['jax']}", fontsize=10)
        fig.tight_layout(rect=(0, 0.05, 1, 0.96))
        p = os.path.join(folder, f"throughput_{d}.png")
        fig.savefig(p, dpi=90)
        plt.close(fig)
        paths.append(p)
    return paths
