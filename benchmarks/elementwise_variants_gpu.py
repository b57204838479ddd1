"""Where the element-wise misses go on a GPU: each program's device time, dmljax against the
jax.numpy formula, side by side, and its optimized HLO.

    python benchmarks/elementwise_variants_gpu.py OUT_DIR [NAME_FILTER]

Programs (2^28 elements, two input sets, device time from CUPTI, 20 calls each): a copy; issue 9's
two chains (dmljax.bench.chain); single operators as one-step chains (the chain's operators, and
the ones issue 9 and 10 still miss: LOG, ERF, SINH, POW, ELU, SCALED_ELU); POW's forward+backward
(``jax.vjp`` of both inputs against jnp.power's autodiff). XLA dumps each program's optimized HLO
to OUT_DIR/dump (module ``jit_probe_<program>``), packed into OUT_DIR/dump.tgz. (This jaxlib's
dump holds no PTX, and the cubin in a serialized executable is compressed: the variants of the
chain below stand in for a disassembly.) Writes OUT_DIR/results.json and prints a table: time,
time over jnp's, kernels per call.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys

OUT = sys.argv[1] if len(sys.argv) > 1 else "/tmp/ew_ptx"
PICK = sys.argv[2] if len(sys.argv) > 2 else ""
DUMP = os.path.join(OUT, "dump")
os.makedirs(DUMP, exist_ok=True)
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + f" --xla_dump_to={DUMP}"
                           " --xla_dump_hlo_module_re=.*probe_.* --xla_dump_hlo_as_text")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import dmljax  # noqa: E402
from dmljax._src.dtypes import DataType  # noqa: E402
from dmljax.bench.chain import CHAIN, CHAIN8, Chain, Step, chain_cases, program  # noqa: E402
from dmljax.bench.inputs import draw_all  # noqa: E402
from dmljax.bench.timing import jax_device_times  # noqa: E402

N = int(os.environ.get("EW_TOTAL", 2 ** 28))
SETS = 2

SINGLES = {  # operator: (input kinds, types)
    "ELEMENT_WISE_SUBTRACT": ({"x": "normal", "b": "divisor"}, ("FLOAT16",)),
    "ELEMENT_WISE_SQRT": ({"x": "positive"}, ("FLOAT16",)),
    "ELEMENT_WISE_DIVIDE": ({"x": "numerator", "b": "divisor"}, ("FLOAT16",)),
    "ELEMENT_WISE_TANH": ({"x": "normal"}, ("FLOAT16",)),
    "ELEMENT_WISE_MAX": ({"x": "normal", "b": "divisor"}, ("FLOAT16",)),
    "ELEMENT_WISE_IF": ({"c": "condition", "x": "normal", "b": "divisor"}, ("FLOAT16",)),
    "ELEMENT_WISE_LOG": ({"x": "positive"}, ("FLOAT16",)),
    "ELEMENT_WISE_ERF": ({"x": "normal"}, ("FLOAT16",)),
    "ELEMENT_WISE_SINH": ({"x": "normal"}, ("FLOAT32",)),
    "ELEMENT_WISE_COSH": ({"x": "normal"}, ("FLOAT32",)),
    "ELEMENT_WISE_POW": ({"x": "positive", "b": "shift"}, ("FLOAT32", "FLOAT16")),
    "ACTIVATION_ELU": ({"x": "normal"}, ("FLOAT16",)),
    "ACTIVATION_SCALED_ELU": ({"x": "normal"}, ("FLOAT16",)),
    "ELEMENT_WISE_MODULUS_FLOOR": ({"x": "numerator", "b": "divisor"}, ("FLOAT16",)),
    "ELEMENT_WISE_CONSTANT_POW": ({"x": "normal"}, ("FLOAT16",)),
}


def one_step(op: str, kinds: dict) -> Chain:
    return Chain(name=op, inputs=kinds, start="x", steps=(Step(op, tuple(kinds)),), compare_to=op)


def programs():
    """(name, function, input kinds, dtype) of every program measured."""
    out = []
    for dtype in ("FLOAT32", "FLOAT16"):
        out.append((f"copy_{dtype}", lambda x: x.copy(), ("normal",), dtype))
    for tag, chain, dtypes in (("chain8", CHAIN8, ("FLOAT32", "FLOAT16")), ("chain5", CHAIN, ("FLOAT16",))):
        cases, _ = chain_cases(chain)
        for dtype in dtypes:
            for flavour in ("dmljax", "jnp"):
                out.append((f"{tag}_{flavour}_{dtype}", program(chain, cases, dtype, flavour),
                            tuple(chain.inputs.values()), dtype))
    for op, (kinds, dtypes) in SINGLES.items():
        chain = one_step(op, kinds)
        cases, why = chain_cases(chain)
        if cases is None:
            print(op, why)
            continue
        short = op.split("_", 2)[-1] if op.startswith("ELEMENT_WISE") else op.split("_", 1)[1]
        for dtype in dtypes:
            for flavour in ("dmljax", "jnp"):
                fn = program(chain, cases, dtype, flavour)
                if fn is not None:
                    out.append((f"{short}_{flavour}_{dtype}", fn, tuple(kinds.values()), dtype))
    for dtype in ("FLOAT32", "FLOAT16"):
        out.append((f"POWgrad_dmljax_{dtype}", lambda x, e, dy: jax.vjp(dmljax.element_wise_pow, x, e)[1](dy),
                    ("positive", "shift", "normal"), dtype))
        out.append((f"POWgrad_jnp_{dtype}", lambda x, e, dy: jax.vjp(jnp.power, x, e)[1](dy),
                    ("positive", "shift", "normal"), dtype))
    for variant in CHAIN8_VARIANTS:
        out.append((f"chain8{variant}_dmljax_FLOAT16", chain8_variant(variant), ("normal", "divisor", "condition"),
                    "FLOAT16"))
    cases5, _ = chain_cases(CHAIN)
    for i, step in enumerate(CHAIN.steps):  # the five-operator chain with one operator as jnp's
        short = step.op.split("_", 2)[-1] if step.op.startswith("ELEMENT_WISE") else step.op.split("_", 1)[1]
        flavours = ["jnp" if k == i else "dmljax" for k in range(len(CHAIN.steps))]
        out.append((f"chain5jnp{short}_dmljax_FLOAT16", program(CHAIN, cases5, "FLOAT16", flavours),
                    tuple(CHAIN.inputs.values()), "FLOAT16"))
    return [p for p in out if PICK in p[0]]


CHAIN8_VARIANTS = ("maxjnp", "f16math", "nomax")
"""The chain of eight in FLOAT16 with one part changed, to see what each costs: MAX as a plain
``jnp.maximum`` (``maxjnp``, not DirectML's rule: the floor); SUBTRACT to TANH as jnp's FLOAT16
formulas (``f16math``); no MAX at all (``nomax``). (Dropped after the first run, 0.669 / 0.783 ms
against 0.727: MAX from ``lax.max`` with NaN tests on the bits, now dmljax's; MAX on FLOAT16
order keys.)"""


def chain8_variant(variant):
    def run(x, b, c):
        if variant == "f16math":
            y = jnp.tanh(jnp.sqrt(jnp.abs((x - b) * b)) / b)
        else:
            y = dmljax.element_wise_subtract(x, b)
            y = dmljax.element_wise_multiply(y, b)
            y = dmljax.element_wise_abs(y)
            y = dmljax.element_wise_sqrt(y)
            y = dmljax.element_wise_divide(y, b)
            y = dmljax.element_wise_tanh(y)
        if variant in ("f16math",):
            y = dmljax.element_wise_max(y, x)
        elif variant == "maxjnp":
            y = jnp.maximum(y, x)
        return dmljax.element_wise_if(c, y, x)
    return run


def named(name, fn):
    def probe(*xs):
        return fn(*xs)
    probe.__name__ = f"probe_{name}"
    return jax.jit(probe)


def main():
    progs = programs()
    sets = {}
    groups = []
    for name, fn, kinds, dtype in progs:
        key = (kinds, dtype)
        if key not in sets:
            sets[key] = [jax.block_until_ready(draw_all(np.uint32(s), kinds=kinds, shapes=((N,),) * len(kinds),
                                                        dtype=DataType.parse(dtype))) for s in range(SETS)]
        f = named(name, fn)
        xs = sets[key]
        groups.append((name, (lambda f, xs: lambda i: f(*xs[i]))(f, xs)))
    times = jax_device_times(groups, SETS)
    rows = {}
    for name, fn, kinds, dtype in progs:
        t = times.get(name, {})
        rows[name] = {"ms": t.get("s", float("nan")) * 1e3, "kernels": t.get("kernels_per_call")}
    for f in glob.glob(os.path.join(DUMP, "*")):  # keep the probes' optimized HLO
        if "probe_" not in f or not f.endswith("after_optimizations.txt"):
            shutil.rmtree(f) if os.path.isdir(f) else os.remove(f)
    subprocess.run(["tar", "-czf", os.path.join(OUT, "dump.tgz"), "-C", DUMP, "."], check=False)
    shutil.rmtree(DUMP)
    json.dump({"N": N, "device": str(jax.devices()[0]), "jax": jax.__version__, "rows": rows},
              open(os.path.join(OUT, "results.json"), "w"), indent=1)
    print(f"{'program':34s} {'ms':>7s} {'/jnp':>6s} {'k':>2s}")
    for name, r in rows.items():
        twin = rows.get(name.replace("_dmljax_", "_jnp_"))
        ratio = r["ms"] / twin["ms"] if twin and "_dmljax_" in name else float("nan")
        print(f"{name:34s} {r['ms']:7.3f} {ratio:6.3f} {r['kernels'] or 0:2.0f}")


if __name__ == "__main__":
    main()
