"""``dmljax bench``: side-by-side timings of dmljax's operators against the jax.numpy formula a
user would write, PyTorch (eager and ``torch.compile``), ONNX Runtime and a device copy.

Not part of the library: ``import dmljax`` does not load it. The modules, one job each:

- ``cases``: what to measure per operator, from the registry: attributes and comparator
  formulas (a recipe per family, entries for operators with their own formula); name lookup.
- ``chain``: the chained-operators measurement, as data.
- ``inputs``: random inputs per data type; how many input sets a measurement cycles through.
- ``memory``: the bytes a measurement needs against the memory available.
- ``timing``: timers, paired ratios, device-side kernel times.
- ``hlo``: kernels counted in compiled HLO.
- ``frameworks``: the optional PyTorch and ONNX Runtime.
- ``plan``: what can run: operators, types, the chain's types, sizes that fit in memory.
- ``suite``: the measurements (``run_suite``).
- ``ratios`` / ``targets``: every comparison, computed in one place; the performance targets.
- ``report`` / ``plots``: Markdown and PNGs.
- ``cli``: the command's options, their checks and ``main``.

Only dmljax, JAX and NumPy are required; torch, onnxruntime, matplotlib and tqdm are optional
(``pip install dmljax[bench]`` for the last two): a missing one skips its column with a note.
benchmarks/README.md describes the method and the committed results.
"""

from dmljax.bench.cases import Case, Recipe, resolve, select
from dmljax.bench.chain import CHAIN, Chain, Step
from dmljax.bench.cli import main, parse_sizes, write_outputs
from dmljax.bench.hlo import hlo_kernel_count
from dmljax.bench.plan import BenchError, Options, plan
from dmljax.bench.report import markdown
from dmljax.bench.suite import run_suite
from dmljax.bench.timing import jax_device_times, time_calls, time_interleaved, time_paired

__all__ = [
    "CHAIN",
    "BenchError",
    "Case",
    "Chain",
    "Options",
    "Recipe",
    "Step",
    "hlo_kernel_count",
    "jax_device_times",
    "main",
    "markdown",
    "parse_sizes",
    "plan",
    "resolve",
    "run_suite",
    "select",
    "time_calls",
    "time_interleaved",
    "time_paired",
    "write_outputs",
]
