"""The chains of element-wise operators (``dmljax/bench/chain.py``) against the same chains of
jnp formulas, side by side in one run, with what each compiled program holds.

    python benchmarks/elementwise/chains.py [--out DIR]      (SMOKE=1: 2^16 elements, any machine)

For each chain and type (FLOAT32, FLOAT16) at 2^28 elements (2^16 with SMOKE=1): the device time
per call (benchmarks/common.py: CUPTI kernel durations on a GPU, the host clock elsewhere) of
dmljax's chain, the jnp chain, each of dmljax's operators alone and a device copy of the first
input; the ratio dmljax / jnp; and, per program, the compiled HLO's fusions (kernels) and its
instructions inside them (parameters, constants and broadcasts left out), which tell where extra
time goes when the chain is bound by arithmetic rather than memory. Writes chains.json and
chains.md to DIR (default: benchmarks/results/<device>/elementwise).
"""

import re
import sys
from collections import Counter
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parents[2])]

import jax  # noqa: E402

import common  # noqa: E402
from dmljax.bench.chain import CHAINS, chain_cases, program  # noqa: E402
from dmljax import DataType  # noqa: E402
from dmljax.bench.inputs import draw_all  # noqa: E402

LOG2 = 16 if common.SMOKE else 28
_SKIP = {"parameter", "constant", "broadcast", "bitcast", "tuple", "get-tuple-element"}


def hlo_counts(fn, *args) -> tuple[int, int, Counter]:
    """(fusions, instructions, instructions by opcode) of ``fn``'s compiled program."""
    text = jax.jit(fn).lower(*args).compile().as_text()
    ops = Counter(op for op in re.findall(r"= \w+\[[^\]]*\]\S* ([\w-]+)\(", text) if op not in _SKIP)
    fusions = ops.pop("fusion", 0)
    return fusions, sum(ops.values()), ops


def main():
    report = common.Report("elementwise", f"2^{LOG2} elements; device time per call (benchmarks/common.py), "
                           "two input sets; HLO counts from the compiled program")
    report.group = "chains"
    n = 1 << LOG2
    for chain in CHAINS:
        cases, why = chain_cases(chain)
        if cases is None:
            report.line(f"{chain.name}: {why}")
            continue
        for dtype in ("FLOAT32", "FLOAT16"):
            kinds = tuple(chain.inputs.values())
            sets = [draw_all(seed, kinds=kinds, shapes=((n,),) * len(kinds), dtype=DataType.parse(dtype))
                    for seed in (0, 1)]
            progs = {"dmljax": program(chain, cases, dtype, "dmljax"), "jnp": program(chain, cases, dtype, "jnp")}
            for flavour, f in list(progs.items()):
                progs[flavour] = jax.jit(f)
            groups = [("copy", lambda i: common.copy(sets[i % 2][0]))]
            groups += [(k, lambda i, f=f: f(*sets[i % 2])) for k, f in progs.items()]
            t = common.times(groups)
            ms = {k: v["s"] * 1e3 for k, v in t.items()}
            counts = {k: hlo_counts(f, *sets[0]) for k, f in progs.items()}
            report.point(
                f"{chain.name} {dtype}: dmljax {ms['dmljax']:.4f} ms, jnp {ms['jnp']:.4f} ms, copy {ms['copy']:.4f} ms; "
                f"dmljax/jnp {ms['dmljax'] / ms['jnp']:.3f}; fusions/instructions dmljax "
                f"{counts['dmljax'][0]}/{counts['dmljax'][1]}, jnp {counts['jnp'][0]}/{counts['jnp'][1]}",
                chain=chain.name, dtype=dtype, elements=n, ms=ms, ratio=ms["dmljax"] / ms["jnp"],
                kernels={k: v["kernels_per_call"] for k, v in t.items()},
                hlo={k: {"fusions": c[0], "instructions": c[1], "by_opcode": dict(c[2].most_common())}
                     for k, c in counts.items()},
                method=t["dmljax"]["method"])
            report.line(f"  dmljax opcodes: {dict(counts['dmljax'][2].most_common(12))}")
            report.line(f"  jnp opcodes:    {dict(counts['jnp'][2].most_common(12))}")
    report.write()


if __name__ == "__main__":
    main()
