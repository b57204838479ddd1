"""The suite's two tiers.

The fast tier is the README's command (`python3 -m pytest`): every operator's covering sample of
generated cases, every hand-written edge, short fuzzing, one case of each Pallas kernel through
the interpreter. The slow tier (`python3 -m pytest --slow`, or DMLJAX_SLOW=1) adds what costs
minutes: every generated case, every kernel geometry, every operator from a DxDispatch model,
long fuzzing and the benchmark's smoke run. `.ci/run` runs both, the fast tier first.

A test of the slow tier carries ``pytest.mark.slow``; `fast_sample` marks all but a few of a
parameter list, so that the fast tier still runs each test."""

from __future__ import annotations

import os
import zlib
from pathlib import Path

import pytest

SLOW_ENV = "DMLJAX_SLOW"


def slow() -> bool:
    """Whether this run is the slow tier (the conftest sets the variable from ``--slow``)."""
    return os.environ.get(SLOW_ENV, "") not in ("", "0")


def by_tier(fast: int, slow_value: int) -> int:
    """A count for the fast tier, and another for the slow one (fuzzing examples)."""
    return slow_value if slow() else fast


def fast_sample(params, keep: int = 1, key: str = "") -> list:
    """``params`` (values or ``pytest.param``s) with all but ``keep`` of them in the slow tier: the
    first one and, for ``keep`` > 1, others picked by a fixed hash of ``key`` and the position."""
    params = list(params)
    picked = {0} | {i for i in range(len(params)) if zlib.crc32(f"{key}{i}".encode()) % max(1, len(params)) < keep - 1}
    out = []
    for i, p in enumerate(params):
        if i in picked:
            out.append(p)
            continue
        if isinstance(p, type(pytest.param())):
            out.append(pytest.param(*p.values, marks=(*p.marks, pytest.mark.slow), id=p.id))
        elif isinstance(p, tuple):  # the values of several argument names
            out.append(pytest.param(*p, marks=pytest.mark.slow))
        else:
            out.append(pytest.param(p, marks=pytest.mark.slow))
    return out


SLOW_TRANSFORMATIONS = frozenset({"DML_OPERATOR_MULTIHEAD_ATTENTION", "DML_OPERATOR_MULTIHEAD_ATTENTION1",
                                  "DML_OPERATOR_RNN", "DML_OPERATOR_LSTM", "DML_OPERATOR_GRU"})
"""Operators whose generated transformation checks (gradients, forward mode, jit, vmap, half
precision) run in the slow tier even where ``fast_sample`` picks them: each of their attribute
sets compiles the blockwise attention or the recurrent scan forward and backward, seconds a check
on 2 cores (GRU's jacfwd against jacrev: 13 s). Their values stay in the fast tier (the covering
sample) and so do forward and reverse mode, through their hand tests (tests/ops/attention,
tests/ops/recurrent)."""


def slow_transformations(params) -> list:
    """``params`` from ``fast_sample`` with those of SLOW_TRANSFORMATIONS' operators (the first
    value names the operator) moved to the slow tier."""
    out = []
    for p in params:
        values = p.values if isinstance(p, type(pytest.param())) else (p if isinstance(p, tuple) else (p,))
        if values[0] not in SLOW_TRANSFORMATIONS or (isinstance(p, type(pytest.param())) and any(
                m.name == "slow" for m in p.marks)):
            out.append(p)
        elif isinstance(p, type(pytest.param())):
            out.append(pytest.param(*p.values, marks=(*p.marks, pytest.mark.slow), id=p.id))
        else:
            out.append(pytest.param(*values, marks=pytest.mark.slow))
    return out


SHARED = Path(__file__).resolve().parents[2] / "shared"
"""The folder beside the checkout with DirectML's reference pages and DxDispatch's models. Users
clone only the repository: tests that read it skip without it, all with one reason."""
SHARED_REASON = ("../shared is not beside this checkout: the checks against DirectML's reference pages and "
                 "DxDispatch's example models need it")
needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason=SHARED_REASON)
