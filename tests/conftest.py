"""Suite-wide settings: 8 virtual CPU devices (for the sharding tests) and strict dtype promotion,
so that no implicit promotion can hide inside an operator."""

import jax

jax.config.update("jax_num_cpu_devices", 8)
jax.config.update("jax_numpy_dtype_promotion", "strict")

import os  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from dmljax._src import registry  # noqa: E402
from tests import catalog, tiers  # noqa: E402


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


@pytest.fixture
def unimplemented(monkeypatch):
    """The catalog's last two operators hidden from the registry for one test, as
    (tests.catalog.unimplemented(0), tests.catalog.unimplemented(1)): DirectML operators that dmljax,
    for that test, does not implement."""
    hidden = (catalog.unimplemented(0), catalog.unimplemented(1))
    for entry in hidden:
        monkeypatch.delitem(registry._REGISTRY, entry.enum_name)
    return hidden


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


# The slow tier (tests/tiers.py): `python3 -m pytest --slow`, or DMLJAX_SLOW=1.
def pytest_addoption(parser):
    parser.addoption("--slow", action="store_true", default=False,
                     help="also run the slow tier (tests marked slow): every generated case, real models, long fuzzing")


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: the slow tier, run by `pytest --slow` (every case, real models)")
    config.addinivalue_line("markers", "fuzz: hypothesis tests, which draw more examples in the slow tier")
    if config.getoption("--slow"):
        os.environ[tiers.SLOW_ENV] = "1"  # before collection, in every worker: module-level lists read it


def pytest_collection_modifyitems(config, items):
    """The fast tier leaves the slow tier's tests out (deselected; the summary says so in one line)."""
    if tiers.slow():
        return
    slow = [item for item in items if "slow" in item.keywords]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if "slow" not in item.keywords]


def pytest_terminal_summary(terminalreporter):
    """One line per reason for what was skipped, so that a skipped tier or a missing ../shared
    folder shows in the summary, not only in -rs's list."""
    reasons = {}
    for rep in terminalreporter.stats.get("skipped", []):
        reason = rep.longrepr[2] if isinstance(rep.longrepr, tuple) else str(rep.longrepr)
        reason = reason.removeprefix("Skipped: ")
        reasons[reason] = reasons.get(reason, 0) + 1
    for reason, n in sorted(reasons.items(), key=lambda kv: -kv[1]):
        terminalreporter.write_line(f"skipped {n}: {reason}")
    if not tiers.slow():  # (pytest-xdist's workers deselect, so the count is not known here)
        terminalreporter.write_line("left out: the slow tier (every generated case, every kernel geometry, every "
                                    "operator from a DxDispatch model, long fuzzing); `python3 -m pytest --slow` runs it")
