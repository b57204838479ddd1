"""Suite-wide settings: 8 virtual CPU devices (for the sharding tests) and strict dtype promotion,
so that no implicit promotion can hide inside an operator."""

import jax

jax.config.update("jax_num_cpu_devices", 8)
jax.config.update("jax_numpy_dtype_promotion", "strict")

import numpy as np  # noqa: E402
import pytest  # noqa: E402


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


@pytest.fixture
def x64():
    """64-bit mode for one test (the types INT64, UINT64 and FLOAT64 need it)."""
    with jax.enable_x64(True):
        yield


def pytest_make_parametrize_id(config, val, argname):
    """Test ids that do not depend on the process (no object addresses), so that every pytest
    worker collects the same tests."""
    try:
        text = repr(val)
    except Exception:  # noqa: BLE001
        return type(val).__name__
    if " at 0x" in text:
        return type(val).__name__
    return None


# The slow tier: exhaustive cases, real models, long fuzzing. The README's command runs the fast
# tier; `python3 -m pytest --slow` (or DMLJAX_SLOW=1) runs everything, as .ci/run does after it.
def pytest_addoption(parser):
    parser.addoption("--slow", action="store_true", default=False,
                     help="also run the slow tier (tests marked slow): exhaustive cases, real models, long fuzzing")


def slow_tier(config) -> bool:
    import os
    return config.getoption("--slow") or os.environ.get("DMLJAX_SLOW", "") not in ("", "0")


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: the slow tier, run by `pytest --slow` (exhaustive cases, real models)")


def pytest_collection_modifyitems(config, items):
    if slow_tier(config):
        return
    skip = pytest.mark.skip(reason="slow tier: run with `python3 -m pytest --slow`")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
