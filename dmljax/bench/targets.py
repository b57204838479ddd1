"""dmljax's performance targets (benchmarks/README.md), each checked against a result: met or
missed, with its value. All values come from ratios.py, so a target reads the same figure as the
tables. On a GPU (device-side times, the largest size): dmljax in jit within 1/0.97 of the jnp
formula's and torch.compile's time and at least 90% of the copy's bandwidth; the chain one
kernel, the five-operator chain within 1.15x of its reference operator alone and the chain of
eight within 1.05x of the same chain in jax.numpy (each chain's own limits, chain.py); forward+backward within 1.1x of jnp
autodiff. On a CPU: dmljax in jit within 1.05x of the jnp formula's time, and, the goal for every
operator with a jnp/lax twin (softmax, reductions, normalizations, GEMM, convolution, pooling,
gathers, ...: cases.py), within 1.25x of the twin's time (paired, in the same run).
"""

from __future__ import annotations

from dmljax.bench.ratios import copy_fraction, time_ratio

__all__ = ["LIMITS", "evaluate_targets", "twin_ratios"]

LIMITS = {
    "gpu_time_vs_jnp": 1 / 0.97,  # throughput at least 0.97x
    "gpu_time_vs_torch_compile": 1 / 0.97,
    "gpu_copy_fraction": 0.90,
    "chain_time_vs_one_operator": 1.15,  # the five-operator chain (chain.CHAIN)
    "chain_time_vs_jnp_chain": 1.05,  # the chain of eight (chain.CHAIN8)
    "fwd_bwd_time_vs_jnp": 1.10,
    "cpu_time_vs_jnp": 1.05,
    "cpu_time_vs_twin": 1.25,  # every operator with a twin, FLOAT32 and FLOAT16
}


def _short(enum_name: str) -> str:
    return enum_name.removeprefix("DML_OPERATOR_")


def evaluate_targets(res: dict) -> list[dict]:
    """One row per target and measured pair: target, value, limit, met, basis."""
    out = []
    gpu = res["meta"]["platform"] == "gpu"
    largest = res["sizes"][-1] if res["sizes"] else None

    def at_most(what, r, limit):
        if r is not None:
            out.append({"target": what, "value": r.value, "limit": f"<= {limit:.3f}",
                        "met": bool(r.value <= limit), "basis": r.basis})

    for rec in res["throughput"]:
        if rec["n"] != largest:
            continue
        name = f"{_short(rec['op'])} {rec['dtype']}"
        if gpu:
            at_most(f"{name}: time(dmljax in jit) / time(jnp formula in jit)",
                    time_ratio(rec, "dmljax_jit", "jnp_jit"), LIMITS["gpu_time_vs_jnp"])
            at_most(f"{name}: time(dmljax in jit) / time(torch.compile)",
                    time_ratio(rec, "dmljax_jit", "torch_compile"), LIMITS["gpu_time_vs_torch_compile"])
            f = copy_fraction(rec)
            if f is not None:
                out.append({"target": f"{name}: bandwidth(dmljax in jit) / bandwidth(device copy)",
                            "value": f.value, "limit": f">= {LIMITS['gpu_copy_fraction']:.2f}",
                            "met": bool(f.value >= LIMITS["gpu_copy_fraction"]), "basis": f.basis})
        else:
            r = time_ratio(rec, "dmljax_jit", "jnp_jit")
            at_most(f"{name}: time(dmljax in jit) / time(jnp formula in jit)", r, LIMITS["cpu_time_vs_jnp"])
            at_most(f"{name}: time(dmljax in jit) / time(jnp/lax twin in jit), the goal for every twin", r,
                    LIMITS["cpu_time_vs_twin"])
    if gpu:
        for rec in res.get("chain", []):
            label = f"chain of {rec['chain']}" if rec.get("chain") else "chain"
            for v in ("dmljax_jit", "jnp_jit"):
                k = rec.get(f"hlo_kernels_{v}")
                if k is not None and (v == "dmljax_jit" or rec.get("limit_vs_jnp") is not None):
                    who = "dmljax's" if v == "dmljax_jit" else "the jnp chain's"
                    out.append({"target": f"{label} {rec['dtype']}: kernels in {who} compiled HLO", "value": k,
                                "limit": "1", "met": k == 1, "basis": "HLO"})
            ref = rec.get("compare_to", "DML_OPERATOR_ELEMENT_WISE_IF")
            limit_one = rec.get("limit_vs_one", LIMITS["chain_time_vs_one_operator"] if "chain" not in rec else None)
            single = next((r for r in res["throughput"] if r["op"] == ref and r["dtype"] == rec["dtype"]
                           and r["n"] == rec["n"]), None)
            if single is not None and limit_one is not None:
                at_most(f"{label} {rec['dtype']}: time(dmljax chain) / time(dmljax {_short(ref)})",
                        time_ratio(rec, "dmljax_jit", "dmljax_jit", single), limit_one)
            if rec.get("limit_vs_jnp") is not None:
                at_most(f"{label} {rec['dtype']}: time(dmljax chain) / time(jnp chain)",
                        time_ratio(rec, "dmljax_jit", "jnp_jit"), rec["limit_vs_jnp"])
        for rec in res.get("fwd_bwd", []):
            at_most(f"{_short(rec['op'])} {rec['dtype']}: time(dmljax forward+backward) / time(jnp autodiff)",
                    time_ratio(rec, "dmljax_jit", "jnp_jit"), LIMITS["fwd_bwd_time_vs_jnp"])
    return out


def twin_ratios(res: dict) -> list[tuple[str, str, object, bool]]:
    """On a CPU, at the largest size: (operator, type, time(dmljax in jit) / time(twin) as a
    ratios.Ratio, over the twin goal) for every record with a twin; [] on a GPU."""
    if res["meta"]["platform"] == "gpu" or not res["sizes"]:
        return []
    out = []
    for rec in res["throughput"]:
        r = time_ratio(rec, "dmljax_jit", "jnp_jit") if rec["n"] == res["sizes"][-1] else None
        if r is not None:
            out.append((_short(rec["op"]), rec["dtype"], r, bool(r.value > LIMITS["cpu_time_vs_twin"])))
    return out
