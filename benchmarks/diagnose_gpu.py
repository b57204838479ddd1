"""Why the missed GPU targets miss: device times of the dmljax kernel against variants that each
remove one difference from the plain jnp formula, and what XLA emitted for each (PTX counts).

    python benchmarks/diagnose_gpu.py OUT_DIR          # timings + PTX/HLO summary -> OUT_DIR
    python benchmarks/diagnose_gpu.py OUT_DIR --ncu    # one small call of each SELU variant (for ncu)

Read with benchmarks/README.md ("Missed targets").
"""

import glob
import json
import os
import re
import sys

OUT = sys.argv[1]
NCU = "--ncu" in sys.argv
DUMP = os.path.join(OUT, "xla_dump") if not NCU else "/tmp/xla_dump_ncu"
os.makedirs(DUMP, exist_ok=True)
os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + f" --xla_dump_to={DUMP} --xla_dump_hlo_as_text"
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import dmljax  # noqa: E402
from dmljax.bench.timing import jax_device_times  # noqa: E402

# SCALED_ELU's default Alpha and Gamma, as the benchmark's jnp formula uses them
_DEFAULTS = {p.arg: p.default for p in dmljax.activation_scaled_elu.spec.params}
ALPHA, GAMMA = _DEFAULTS["alpha"], _DEFAULTS["gamma"]

F16, F32 = jnp.float16, jnp.float32


# --- SCALED_ELU FLOAT16 ---------------------------------------------------------------------
def selu_dml(x):
    return dmljax.activation_scaled_elu(x)


def selu_dml_half(x):
    return dmljax.activation_scaled_elu(x, allow_half_precision_computation=True)


def selu_jnp(x):  # the benchmark's plain formula, in the tensor's type
    return jnp.where(x > 0, GAMMA * x, GAMMA * (ALPHA * jnp.exp(x) - ALPHA))


def selu_jnp_f32(x):  # same formula computed in FLOAT32, rounded once
    y = x.astype(F32)
    return jnp.where(y > 0, GAMMA * y, GAMMA * (ALPHA * jnp.exp(y) - ALPHA)).astype(x.dtype)


def selu_jnp_f32_expm1(x):  # FLOAT32 and expm1, as dmljax, without the denormal flushes
    y = x.astype(F32)
    neg = jnp.minimum(y, 0.0)
    return jnp.where(y > 0, GAMMA * y, GAMMA * (ALPHA * jnp.expm1(neg))).astype(x.dtype)


# --- MODULUS_FLOOR FLOAT16 ------------------------------------------------------------------
def mod_dml(a, b):
    return dmljax.element_wise_modulus_floor(a, b)


def mod_dml_half(a, b):
    return dmljax.element_wise_modulus_floor(a, b, allow_half_precision_computation=True)


def mod_jnp(a, b):
    return jnp.mod(a, b)


def mod_jnp_f32(a, b):
    return jnp.mod(a.astype(F32), b.astype(F32)).astype(a.dtype)


# --- chain FLOAT16 --------------------------------------------------------------------------
def chain_dml(x, b, c, half=False):
    k = {"allow_half_precision_computation": half}
    y = dmljax.activation_scaled_elu(x, **k)
    y = dmljax.element_wise_threshold(y, min=-0.5, **k)
    y = dmljax.element_wise_constant_pow(y, exponent=3.0, **k)
    y = dmljax.element_wise_modulus_floor(y, b, **k)
    return dmljax.element_wise_if(c, y, x)


def chain_dml_half(x, b, c):
    return chain_dml(x, b, c, True)


def chain_jnp(x, b, c):
    y = selu_jnp(x)
    y = jnp.maximum(y, -0.5)
    y = y ** 3.0
    y = jnp.mod(y, b)
    return jnp.where(c != 0, y, x)


def chain_jnp_f32(x, b, c):
    return chain_jnp(x.astype(F32), b.astype(F32), c).astype(x.dtype)


# --- MODULUS_FLOOR forward+backward FLOAT32 -------------------------------------------------
def _vjp(f):
    def g(a, b, ct):
        _, pull = jax.vjp(f, a, b)
        return pull(ct)
    return g


def modgrad_dml(a, b, ct):
    return _vjp(mod_dml)(a, b, ct)


def modgrad_jnp(a, b, ct):
    return _vjp(mod_jnp)(a, b, ct)


def modgrad_dml_sum(a, b, ct):  # gradients consumed by a following op, as in a model
    da, db = _vjp(mod_dml)(a, b, ct)
    return da + db


def modgrad_jnp_sum(a, b, ct):
    da, db = _vjp(mod_jnp)(a, b, ct)
    return da + db


def inputs(n, dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(n, np.float32)
    a = 4 * rng.standard_normal(n, np.float32)
    b = rng.uniform(0.5, 2.0, n).astype(np.float32) * np.where(rng.random(n) < 0.5, -1, 1).astype(np.float32)
    c = (rng.random(n) < 0.5).astype(np.uint8)
    ct = rng.standard_normal(n, np.float32)
    return [jax.device_put(v.astype(dtype) if v.dtype == np.float32 else v) for v in (x, a, b, c, ct)]


GROUPS = {
    "selu_f16": ([selu_dml, selu_jnp, selu_jnp_f32, selu_jnp_f32_expm1, selu_dml_half], F16, lambda x, a, b, c, ct: (x,)),
    "mod_f16": ([mod_dml, mod_jnp, mod_jnp_f32, mod_dml_half], F16, lambda x, a, b, c, ct: (a, b)),
    "chain_f16": ([chain_dml, chain_jnp, chain_jnp_f32, chain_dml_half], F16, lambda x, a, b, c, ct: (x, b, c)),
    "chain_f32": ([chain_dml, chain_jnp], F32, lambda x, a, b, c, ct: (x, b, c)),
    "modgrad_f32": ([modgrad_dml, modgrad_jnp, modgrad_dml_sum, modgrad_jnp_sum], F32, lambda x, a, b, c, ct: (a, b, ct)),
}


def ptx_summary(name):
    out = {}
    ptx = [p for p in glob.glob(os.path.join(DUMP, f"*jit_{name}.*ptx")) if p.endswith(".ptx")]
    if ptx:
        text = open(ptx[0]).read()
        body = [ln.strip() for ln in text.splitlines() if ln.strip().endswith(";") and not ln.strip().startswith(("//", ".", "{", "}"))]
        out["ptx_file"] = os.path.basename(ptx[0])
        out["ptx_instructions"] = len(body)
        out["ld_global"] = sum("ld.global" in ln for ln in body)
        out["ld_global_vector"] = sum(bool(re.search(r"ld\.global\S*\.v[248]", ln)) for ln in body)
        out["st_global"] = sum("st.global" in ln for ln in body)
        out["st_global_vector"] = sum(bool(re.search(r"st\.global\S*\.v[248]", ln)) for ln in body)
        out["ex2"] = sum("ex2.approx" in ln for ln in body)
        out["cvt_f16"] = sum(bool(re.search(r"cvt\.\S*f16", ln)) for ln in body)
    hlo = [p for p in glob.glob(os.path.join(DUMP, f"*jit_{name}.*after_optimizations.txt"))]
    if hlo:
        text = open(hlo[0]).read()
        out["hlo_file"] = os.path.basename(hlo[0])
        out["hlo_fused_instructions"] = sum(1 for ln in text.splitlines() if " = " in ln and "parameter(" not in ln)
    return out


def main():
    if NCU:
        x, a, b, c, ct = inputs(1 << 24, F16)
        for f in GROUPS["selu_f16"][0]:
            jax.block_until_ready(jax.jit(f)(x))
        return
    n = int(os.environ.get("DIAG_N", 1 << 28))
    report = {"device": jax.devices()[0].device_kind, "jax": jax.__version__, "n": n, "groups": {}}
    for gname, (fns, dtype, pick) in GROUPS.items():
        args = pick(*inputs(n, dtype, 1))
        args2 = pick(*inputs(n, dtype, 2))
        sets = [args, args2]
        jitted = [(f.__name__, jax.jit(f)) for f in fns]
        times = jax_device_times([(nm, (lambda i, j=j: j(*sets[i]))) for nm, j in jitted], 2, n_calls=20)
        rows = {}
        for nm, _ in jitted:
            t = times.get(nm, {})
            rows[nm] = {"ms": t.get("s", float("nan")) * 1e3, "kernels_per_call": t.get("kernels_per_call"),
                        "kernel_names": t.get("kernel_names"), **ptx_summary(nm)}
        report["groups"][gname] = rows
        del sets, args, args2
    with open(os.path.join(OUT, "diagnose.json"), "w") as f:
        json.dump(report, f, indent=1)
    for g, rows in report["groups"].items():
        print(f"\n{g}")
        for nm, r in rows.items():
            print(f"  {nm:22s} {r['ms']:8.4f} ms  kernels {r['kernels_per_call']}  ptx {r.get('ptx_instructions')} "
                  f"ld {r.get('ld_global')} (vec {r.get('ld_global_vector')}) st {r.get('st_global')} "
                  f"(vec {r.get('st_global_vector')}) ex2 {r.get('ex2')}  {r.get('kernel_names')}")


if __name__ == "__main__":
    main()
