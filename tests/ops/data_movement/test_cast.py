"""CAST's edges, by hand: every pair of the newest table's types on the values where conversions
differ (NaN, +-inf, +-0, denormals, halves, the types' extremes and just beyond), against the
exact reference; rounding once from FLOAT64 to FLOAT16; 64-bit types without 64-bit mode;
gradients."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dmljax
from dmljax._src.dtypes import DataType
from tests import tiers
from tests.compare import assert_matches
from tests.reference.data_movement.cast import cast as reference

TYPES = [d for d in dmljax.cast.spec.support[0].tensors["InputTensor"].data_types]


def _values(dt: DataType) -> np.ndarray:
    if dt.is_float:
        info = np.finfo(dt.dtype)
        v = [np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, -0.5, 2.5, -2.5, 255.5, 256.0, -129.0, 65504.0, 70000.0,
             2.0**31, -(2.0**31) - 1e3, 2.0**32, 2.0**63, -(2.0**63), 2.0**64, float(info.max), float(info.tiny),
             float(info.tiny) / 4, -float(info.tiny) / 4, 1 + 2.0**-11 + 2.0**-40, 3.0e38]
        with np.errstate(over="ignore"):
            return np.array(v, np.float64).astype(dt.dtype)
    info = np.iinfo(dt.dtype)
    v = {0, 1, -1, 2, 127, 128, 255, 256, -128, -129, 2049, 65504, 65519, 65520, 2**24 + 1, 2**31 - 1, -(2**31),
         2**32 - 1, 2**53 + 1, 2**63 - 1, -(2**63), 2**64 - 1, 2**63 + 2**39 + 1}
    return np.array(sorted(x for x in v if info.min <= x <= info.max), dtype=object).astype(dt.dtype)


@pytest.mark.parametrize("src", tiers.fast_sample(TYPES, keep=4, key="cast"), ids=lambda d: d.name)  # 11 compiles a type
def test_every_pair_of_types(src):
    with jax.enable_x64(True):
        x = _values(src)
        for out in TYPES:
            got = dmljax.cast(x, output_data_type=out)
            assert got.dtype == out.dtype and got.shape == x.shape
            assert_matches(got, reference(x, out.name), out, 0, context=f"{src.name} to {out.name}")


def test_chosen_rules():
    f32 = np.array([2.7, -2.7, np.nan, np.inf, -np.inf, -0.5, 3e9], np.float32)
    assert np.asarray(dmljax.cast(f32, output_data_type="INT32")).tolist() == [2, -2, 0, 2**31 - 1, -(2**31), 0,
                                                                               2**31 - 1]
    assert np.asarray(dmljax.cast(f32, output_data_type="UINT8")).tolist() == [2, 0, 0, 255, 0, 0, 255]
    assert np.asarray(dmljax.cast(np.array([300, -1, -129], np.int32), output_data_type="INT8")).tolist() == [44, -1, 127]
    assert np.asarray(dmljax.cast(np.array([-1], np.int16), output_data_type="UINT16")).tolist() == [65535]
    # FLOAT32 denormals read and written as zero, their sign kept; FLOAT16 denormals kept
    d = dmljax.cast(np.array([1e-40, -1e-40], np.float32), output_data_type="FLOAT16")
    assert np.asarray(d).view(np.uint16).tolist() == [0, 0x8000]
    h = np.array([6e-8, -6e-8], np.float16)
    assert np.asarray(dmljax.cast(h, output_data_type="FLOAT32")).tolist() == h.astype(np.float32).tolist()
    assert np.asarray(dmljax.cast(np.array([6e-8], np.float32), output_data_type="FLOAT16")).view(np.uint16).tolist() == [1]


def test_float64_to_float16_rounds_once():
    with jax.enable_x64(True):
        x = np.array([1 + 2.0**-11 + 2.0**-40, -(1 + 2.0**-11 + 2.0**-40), 1 + 2.0**-11, 65519.99, 65520.0], np.float64)
        got = np.asarray(dmljax.cast(x, output_data_type="FLOAT16"))
        # through FLOAT32 the first two would round to the tie 1 + 2^-11 and then to even, 1.0
        assert got.tolist() == [1.0009765625, -1.0009765625, 1.0, 65504.0, np.inf]
        assert jax.jit(lambda v: dmljax.cast(v, output_data_type="FLOAT16"))(x).tolist() == got.tolist()


def test_64_bit_types_need_x64():
    with jax.enable_x64(False):
        with pytest.raises(dmljax.ValidationError) as e:
            dmljax.cast(np.zeros((2,), np.float32), output_data_type="INT64")
        assert "OutputTensor (argument `output_data_type`) has DataType INT64, which JAX holds only in its 64-bit mode" in str(e.value)
    with pytest.raises(TypeError, match="output_data_type"):
        dmljax.cast(np.zeros((2,), np.float32))  # no default: the page gives none
    with pytest.raises(dmljax.ValidationError, match="FLOAT64 is supported from DML_FEATURE_LEVEL_4_1"):
        with jax.enable_x64(True):
            dmljax.cast(np.zeros((1, 1, 1, 2), np.float32), output_data_type="FLOAT64", feature_level="4.0")
    with pytest.raises(dmljax.ValidationError, match="supported: FLOAT32, FLOAT16, INT16, INT8, UINT16, UINT8"):
        dmljax.cast(np.zeros((1, 1, 1, 2), np.int32), output_data_type="FLOAT32", feature_level="2.0")


def test_gradients():
    x = np.array([1.0, -2.5, 3e-3], np.float32)
    g = jax.grad(lambda v: jnp.sum(dmljax.cast(v, output_data_type="FLOAT16").astype(jnp.float32) * 3))(x)
    assert g.dtype == np.float32 and np.asarray(g).tolist() == [3, 3, 3]
    g = jax.grad(lambda v: jnp.sum(dmljax.cast(v, output_data_type="INT32")).astype(jnp.float32))(x)
    assert np.asarray(g).tolist() == [0, 0, 0]
    g = jax.grad(lambda v: jnp.sum(dmljax.cast(v, output_data_type="FLOAT32")), allow_int=True)(np.ones(2, np.int32))
    assert g.dtype == jax.dtypes.float0
    g16 = jax.grad(lambda v: jnp.sum(dmljax.cast(v, output_data_type="FLOAT32")))(np.ones(2, np.float16))
    assert g16.dtype == np.float16
