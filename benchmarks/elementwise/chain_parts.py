"""Where the five-operator chain's time over the jnp chain goes, and which GPU form of maxNum
(``numerics.max_num``/``min_num``) keeps DirectML's NaN rule at the least cost, in one run.

    python benchmarks/elementwise/chain_parts.py [--out DIR]      (SMOKE=1: 2^16 elements, any machine)

For FLOAT32 and FLOAT16 at 2^28 elements (benchmarks/common.py's device time, two input sets):
- the chain as dmljax runs it, as jnp runs it, and dmljax's chain with one step at a time taken
  from the jnp chain (what that step's DirectML rules cost in the fused kernel);
- the chain with maxNum's GPU form swapped for each candidate:
  ``isnan``    NaN tested by a float compare on the input (x != x ? m : max(x, m)), the library's
               form;
  ``bits``     NaN tested on the input's bits (``numerics.is_nan``), then XLA's maximum;
  ``select``   one compare and one select (x > m ? x : m), the CPU's form;
  ``result``   XLA's NaN-propagating maximum, then its result tested (r != r ? m : r).
  Each candidate also runs ``tests/gpu/semantics.py`` on the operators built on maxNum/minNum
  (THRESHOLD, CLIP, CLIP1, HARD_SIGMOID, the quantizers), whose inputs hold NaN, infinities and
  signed zeros: a form that changes one bit there is not DirectML's rule on this compiler.
Writes chain_parts.json and chain_parts.md to DIR (default: benchmarks/results/<device>/elementwise).
"""

import contextlib
import importlib.util
import io
import math
import re
import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parents[2])]

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

import common  # noqa: E402
from dmljax import DataType  # noqa: E402
from dmljax._src import numerics  # noqa: E402
from dmljax.bench.chain import CHAINS, chain_cases, program  # noqa: E402
from dmljax.bench.inputs import draw_all  # noqa: E402

LOG2 = 16 if common.SMOKE else 28
CHECKED = ("ELEMENT_WISE_THRESHOLD", "ELEMENT_WISE_CLIP", "ELEMENT_WISE_CLIP1", "ACTIVATION_HARD_SIGMOID",
           "ELEMENT_WISE_QUANTIZE_LINEAR", "QUANTIZE", "DYNAMIC_QUANTIZE_LINEAR")
_LIBRARY = numerics._num


def _form(kind: str):
    """numerics._num with ``kind`` as its form off the CPU (the CPU keeps compare and select)."""
    if kind == "isnan":
        return _LIBRARY

    def num(x, m, greater: bool):
        if isinstance(m, (float, np.floating)) and math.isnan(m):
            return x
        m_arr = jnp.asarray(m, dtype=x.dtype)

        def compared(x):
            return jnp.where(x > m_arr if greater else x < m_arr, x, m_arr)

        def other(x):
            signed = float(m) == 0.0 and (math.copysign(1.0, float(m)) < 0) == greater
            if kind == "select" or signed:
                return compared(x)
            plain = (lax.max if greater else lax.min)(x, m_arr)
            if kind == "result":
                return jnp.where(plain != plain, m_arr, plain)
            return jnp.where(numerics.is_nan(x), m_arr, plain)  # bits

        if not jnp.issubdtype(x.dtype, jnp.floating):
            return compared(x)
        return lax.platform_dependent(x, cpu=compared, default=other)

    return num


def _instructions(compiled) -> int:
    """Instructions of a compiled program (parameters, constants, broadcasts and fusions left out)."""
    skip = {"parameter", "constant", "broadcast", "bitcast", "tuple", "get-tuple-element", "fusion"}
    return sum(op not in skip for op in re.findall(r"= \w+\[[^\]]*\]\S* ([\w-]+)\(", compiled.as_text()))


def _semantics():
    path = Path(__file__).resolve().parents[2] / "tests" / "gpu" / "semantics.py"
    spec = importlib.util.spec_from_file_location("gpu_semantics", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def check(module) -> tuple[int, str]:
    """(failures, their lines) of tests/gpu/semantics.py on CHECKED under the current form."""
    argv, sys.argv = sys.argv, ["semantics.py", *CHECKED]
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            rc = module.main()
    finally:
        sys.argv = argv
    text = out.getvalue()
    fails = [line for line in text.splitlines() if " FAIL" in line]
    tally = text.strip().splitlines()[-1] if text.strip() else "no output"
    return (len(fails) if rc else 0), "\n".join([tally, *fails[:6]])


def main():
    report = common.Report("elementwise", f"2^{LOG2} elements; device time per call (benchmarks/common.py), "
                           "two input sets; steps from jnp and maxNum's forms swapped in one process")
    report.group = "chain_parts"
    chain = next(c for c in CHAINS if c.name == "five operators")
    cases, why = chain_cases(chain)
    if cases is None:
        report.line(f"{chain.name}: {why}")
        report.write()
        return
    semantics = _semantics()
    n = 1 << LOG2
    steps = [s.op for s in chain.steps]
    for dtype in ("FLOAT32", "FLOAT16"):
        kinds = tuple(chain.inputs.values())
        sets = [draw_all(seed, kinds=kinds, shapes=((n,),) * len(kinds), dtype=DataType.parse(dtype))
                for seed in (0, 1)]
        variants = {"dmljax": "dmljax", "jnp": "jnp"}
        for i, name in enumerate(steps):
            flavours = ["dmljax"] * len(steps)
            flavours[i] = "jnp"
            variants[f"jnp {name}"] = flavours
        groups = [("copy", lambda i: common.copy(sets[i % 2][0]))]
        sizes = {}
        for label, flavour in variants.items():
            f = jax.jit(program(chain, cases, dtype, flavour)).lower(*sets[0]).compile()
            groups.append((label, lambda i, f=f: f(*sets[i % 2])))
            sizes[label] = _instructions(f)
        for kind in ("bits", "select", "result"):
            numerics._num = _form(kind)
            jax.clear_caches()
            f = jax.jit(program(chain, cases, dtype, "dmljax")).lower(*sets[0]).compile()  # under this form
            numerics._num = _LIBRARY
            groups.append((f"maxNum {kind}", lambda i, f=f: f(*sets[i % 2])))
            sizes[f"maxNum {kind}"] = _instructions(f)
        jax.clear_caches()  # later traces under the library's form again
        t = common.times(groups)
        ms = {k: v["s"] * 1e3 for k, v in t.items()}
        for label, v in ms.items():
            report.point(f"{dtype:8s} {label:36s} {v:.4f} ms  {v / ms['jnp']:.3f}x jnp  "
                         f"{sizes.get(label, '-')} instructions", dtype=dtype, variant=label, ms=v,
                         ratio=v / ms["jnp"], instructions=sizes.get(label), method=t[label]["method"])
    for kind in ("bits", "select", "result", "isnan"):
        numerics._num = _form(kind)
        jax.clear_caches()
        failures, lines = check(semantics)
        numerics._num = _LIBRARY
        report.point(f"maxNum {kind}: tests/gpu/semantics.py on {len(CHECKED)} operators: {failures} failed"
                     + f" ({lines})", form=kind, failures=failures)
    report.write()


if __name__ == "__main__":
    main()
