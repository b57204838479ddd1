"""Plots (matplotlib, optional: ``pip install dmljax[bench]``; without it the plots are left out
with a note): GB/s against size, one PNG per data type, one panel per operator; and at the largest
size, one PNG of the ratios the targets read (time against the jnp formula, bandwidth against the
copy, forward+backward against jnp autodiff), one bar per operator and type, limits drawn."""

from __future__ import annotations

import math
import os

from dmljax.bench.ratios import copy_fraction, time_ratio
from dmljax.bench.report import LABELS, short
from dmljax.bench.targets import LIMITS

__all__ = ["plot", "plot_ratios"]


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
    return paths + plot_ratios(res, folder, plt)


def plot_ratios(res: dict, folder: str, plt) -> list[str]:
    """ratios.png: at the largest size, per operator and type, the three ratios the targets read
    (ratios.py computes each, as the tables do), with each target's limit as a line."""
    if not res["sizes"]:
        return []
    largest = res["sizes"][-1]
    recs = sorted((r for r in res["throughput"] if r["n"] == largest), key=lambda r: (short(r["op"]), r["dtype"]))
    fwd = {(r["op"], r["dtype"]): r for r in res.get("fwd_bwd", [])}
    panels = [
        ("time(dmljax in jit) / time(jnp formula in jit)",
         [time_ratio(r, "dmljax_jit", "jnp_jit") for r in recs], LIMITS["gpu_time_vs_jnp"]),
        ("bandwidth(dmljax in jit) / bandwidth(device copy)", [copy_fraction(r) for r in recs],
         LIMITS["gpu_copy_fraction"]),
        ("time(dmljax forward+backward) / time(jnp autodiff)",
         [time_ratio(fwd[k], "dmljax_jit", "jnp_jit") if k in fwd else None
          for k in ((r["op"], r["dtype"]) for r in recs)], LIMITS["fwd_bwd_time_vs_jnp"]),
    ]
    panels = [(t, [None if v is None else v.value for v in vals], lim) for t, vals, lim in panels
              if any(v is not None for v in vals)]
    if len(recs) < 2 or not panels:
        return []
    labels = [f"{short(r['op']).removeprefix('ELEMENT_WISE_')} {r['dtype'].replace('FLOAT', 'F')}" for r in recs]
    fig, axes = plt.subplots(len(panels), 1, figsize=(max(8, 0.16 * len(recs) + 2), 3.2 * len(panels)),
                             squeeze=False)
    xs = range(len(recs))
    for ax, (title, vals, lim) in zip(axes[:, 0], panels):
        ys = [float("nan") if v is None else v for v in vals]
        ax.bar(xs, ys, color=["C0" if r["dtype"] == "FLOAT32" else "C1" for r in recs])
        ax.axhline(lim, color="k", linestyle="--", linewidth=1, label=f"target limit {lim:.3f}")
        ax.axhline(1.0, color="grey", linewidth=0.5)
        ax.set_title(title, fontsize=9)
        ax.set_xticks(list(xs))
        ax.set_xticklabels(labels, rotation=90, fontsize=6)
        ax.legend(fontsize=7, loc="upper right")
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle(f"{res['meta']['device']}: 2^{largest.bit_length() - 1} elements, jax {res['meta']['jax']} "
                 "(FLOAT32 blue, FLOAT16 orange)", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    p = os.path.join(folder, "ratios.png")
    fig.savefig(p, dpi=90)
    plt.close(fig)
    return [p]
