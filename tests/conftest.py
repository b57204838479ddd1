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
