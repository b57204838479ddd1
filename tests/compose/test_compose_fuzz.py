"""Fuzzing dmljax.compose's public surface with hypothesis: random shapes (and malformed values)
for the views, the broadcasting arithmetic and the matrix products, labelled by NumPy's own rules
(an oracle independent of dmljax). A valid call must equal NumPy's float64 result rounded (within
the products' budget); an invalid one must raise one ``dmljax.ValidationError`` headed by the
composition, of bounded length. Nothing else may escape. Seeds are fixed; examples per test: 2 in
the fast tier, 60 in the slow one (tests/tiers.py)."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st

import dmljax
from dmljax import compose
from tests import tiers

SETTINGS = settings(max_examples=tiers.by_tier(2, 60), derandomize=True, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck))
shapes = st.lists(st.integers(1, 3), min_size=0, max_size=4).map(tuple)
junk = st.sampled_from([None, 1.5, "x", [1.0], (2, 2), np.ones(2, bool), np.ones(2, np.complex64)])


def arr(shape, dtype=np.float32, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def refused(fn, name):
    try:
        fn()
    except dmljax.ValidationError as e:
        assert str(e).startswith(f"compose.{name} ("), str(e)
        assert len(str(e)) < 2100
        return True
    return False


@SETTINGS
@given(shapes, shapes)
def test_add_broadcasts_as_numpy_does(sa, sb):
    a, b = arr(sa), arr(sb, seed=1)
    try:
        want = (a.astype(np.float64) + b).astype(np.float32)
    except ValueError:
        assert refused(lambda: compose.add(a, b), "add")
        return
    got = compose.add(a, b)
    assert got.shape == want.shape and got.dtype == np.float32
    np.testing.assert_array_equal(got, want)


@SETTINGS
@given(shapes.filter(lambda s: len(s) >= 1), shapes.filter(lambda s: len(s) >= 1))
def test_matmul_takes_numpys_shapes(sa, sb):
    a, b = arr(sa), arr(sb, seed=1)
    try:
        want = np.matmul(a.astype(np.float64), b)
    except ValueError:
        assert refused(lambda: compose.matmul(a, b), "matmul")
        return
    got = compose.matmul(a, b)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@SETTINGS
@given(shapes, shapes, st.permutations(range(4)))
def test_views_are_numpys(shape, target, perm):
    x = arr(shape)
    try:
        want = np.broadcast_to(x, target)
    except ValueError:
        assert refused(lambda: compose.broadcast_to(x, target), "broadcast_to")
    else:
        np.testing.assert_array_equal(compose.broadcast_to(x, target), want)
    p = [i for i in perm if i < x.ndim]
    np.testing.assert_array_equal(compose.transpose(x, p), np.transpose(x, p))
    np.testing.assert_array_equal(compose.reshape(x, (-1,)), x.reshape(-1))


@SETTINGS
@given(junk, st.sampled_from(["add", "matmul", "linear", "layer_norm", "softmax", "transpose", "broadcast_to",
                               "embedding", "cross_entropy"]))
def test_malformed_arguments_are_refused(bad, name):
    x = arr((2, 2))
    calls = {"add": lambda: compose.add(x, bad), "matmul": lambda: compose.matmul(bad, x),
             "linear": lambda: compose.linear(x, bad), "layer_norm": lambda: compose.layer_norm(bad),
             "softmax": lambda: compose.softmax(bad), "transpose": lambda: compose.transpose(bad),
             "broadcast_to": lambda: compose.broadcast_to(x, bad), "embedding": lambda: compose.embedding(x, bad),
             "cross_entropy": lambda: compose.cross_entropy(x, bad)}
    if name == "broadcast_to" and isinstance(bad, tuple) and bad == (2, 2):
        np.testing.assert_array_equal(calls[name](), x)
        return
    assert refused(calls[name], name)
