"""``python -m dmljax.bench``: the same as ``dmljax bench``."""

import sys

from dmljax.bench.cli import main

sys.exit(main())
