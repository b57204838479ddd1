"""The benchmark suite (the same as ``dmljax bench``), runnable from a checkout: every registered
operator (or those named) in jit against the jax.numpy formula a user would write, PyTorch (eager
and ``torch.compile``, where installed), ONNX Runtime one-node graphs (CPU, where installed) and
a device copy; forward+backward; the chained operators; trace+compile time and per-call overhead.

    python benchmarks/suite/run.py --out benchmarks/results/cpu/suite
    python benchmarks/suite/run.py --sizes 28 --dtypes FLOAT32 FLOAT16 --no-compile --out OUT   (a GPU)
    python benchmarks/suite/run.py --ops ELEMENT_WISE_IF --dtypes FLOAT32 --sizes 10:20:2 --out /tmp/b

``--help`` lists the options; benchmarks/README.md gives the method. Writes results.json (the
device, versions, options, method and every figure), results.md (the tables) and PNG plots to
``--out``. The code is the package ``dmljax/bench/``; this script puts the checkout first on
``sys.path`` so that it runs the checkout's dmljax without installing it.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from dmljax.bench.cli import main  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
