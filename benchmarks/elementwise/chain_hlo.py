"""Instructions in each chained-operator program's compiled HLO (dmljax against the jnp chain),
counted by opcode: where a chain's extra time goes (benchmarks/README.md, "Element-wise operators
and chains"). Runs on any backend; prints one line per chain, type and program (it writes no file).

    python benchmarks/elementwise/chain_hlo.py
"""

import os
import re
import sys
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from dmljax.bench.chain import CHAINS, chain_cases, program  # noqa: E402

_SKIP = {"parameter", "constant", "broadcast"}


def counts(fn, *args) -> Counter:
    text = jax.jit(fn).lower(*args).compile().as_text()
    return Counter(op for op in re.findall(r"= \w+\[[^\]]*\]\S* (\w+)\(", text) if op not in _SKIP)


def main():
    for chain in CHAINS:
        cases, why = chain_cases(chain)
        if cases is None:
            print(f"{chain.name}: {why}")
            continue
        for dtype, dt in (("FLOAT32", jnp.float32), ("FLOAT16", jnp.float16)):
            args = [jnp.ones((1 << 16,), jnp.uint8 if kind == "condition" else dt) for kind in chain.inputs.values()]
            for flavour in ("dmljax", "jnp"):
                c = counts(program(chain, cases, dtype, flavour), *args)
                print(f"{chain.name:30s} {dtype} {flavour:6s} {sum(c.values()):4d} {dict(c.most_common(8))}")


if __name__ == "__main__":
    main()
