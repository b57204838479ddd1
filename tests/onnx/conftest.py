"""Fixtures of the ONNX tests."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def bench(request):
    """The benchmarks/onnx script that the test module names in ``BENCHMARK``, imported as the
    script itself runs (benchmarks/ and benchmarks/onnx/ on the path)."""
    sys.path.insert(0, str(BENCH))
    sys.path.insert(0, str(BENCH / "onnx"))
    try:
        yield importlib.import_module(request.module.BENCHMARK)
    finally:
        sys.path.remove(str(BENCH / "onnx"))
        sys.path.remove(str(BENCH))
