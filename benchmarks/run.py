"""The benchmark harness (the same suite as ``dmljax bench``), runnable from a checkout:

    python benchmarks/run.py --out benchmarks/results/cpu
    python benchmarks/run.py --ops ELEMENT_WISE_IF --dtypes FLOAT32 --sizes 10:20:2 --out /tmp/b

``python benchmarks/run.py --help`` lists the options; benchmarks/README.md gives the method. The
code is the package ``dmljax/bench/``; this script puts the checkout first on ``sys.path`` so that
it runs the checkout's dmljax without installing it.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from dmljax.bench.cli import main  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
