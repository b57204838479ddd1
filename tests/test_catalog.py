"""Generated from the registry: every seed operator x support table x data type x dimension
count against the float64 reference, and every edge of every support table refused."""

import jax
import numpy as np
import pytest

import dmljax
from dmljax._src.dtypes import DataType
from tests import catalog
from tests.compare import assert_matches
from tests.reference.seeds import REFERENCES

POSITIVE = catalog.positive_cases()
NEGATIVE = catalog.negative_cases()


def _x64_for(dt):
    return jax.enable_x64(dt.needs_x64)


def test_generated_counts():
    # Seven operators with 3-5 tables each: the generator must not silently produce nothing.
    assert len(catalog.seed_ops()) == 7
    assert len(POSITIVE) > 150
    assert len(NEGATIVE) > 100


@pytest.mark.parametrize("case", POSITIVE, ids=lambda c: c.id)
def test_matches_reference(case, rng):
    op = dmljax.get_operator(case.op_name)
    spec = op.spec
    shape = catalog.shape_of(case.ndim)
    with _x64_for(case.data_type):
        args = catalog.inputs_for(spec, case.data_type, shape, rng)
        out_types = {}
        if case.op_name == "DML_OPERATOR_ELEMENT_WISE_LOGICAL_LESS_THAN":
            sup = spec.support_at(case.level).tensors["OutputTensor"]
            out_types = {"output_data_type": sup.data_types[-1]}
        for attrs in catalog.ATTRS.get(case.op_name, [{}]):
            if case.data_type.is_integer and "exponent" in attrs:
                continue
            out = op(*args, **attrs, **out_types, feature_level=case.level)
            out_dt = out_types.get("output_data_type", case.data_type)
            assert out.shape == shape
            ref = REFERENCES[case.op_name](*args, **attrs)
            budget = spec.ulp.get(out_dt, 0)
            assert_matches(out, ref, out_dt, budget, context=f"{case.id} {attrs}",
                           flush=case.op_name not in catalog.SELECTION)


@pytest.mark.parametrize("case,what", NEGATIVE, ids=lambda c: c.id if hasattr(c, "id") else c)
def test_refused_outside_support(case, what):
    op = dmljax.get_operator(case.op_name)
    spec = op.spec
    shape = catalog.shape_of(case.ndim) if case.ndim <= 8 else (1,) * case.ndim
    with jax.enable_x64(True):
        args = catalog.abstract_inputs(spec, case.data_type, shape)
        with pytest.raises(dmljax.ValidationError) as info:
            attrs = catalog.ATTRS.get(case.op_name, [{}])[0]
            jax.eval_shape(lambda *a: op(*a, **attrs, feature_level=case.level), *args)
    msg = str(info.value)
    assert msg.startswith(f"{spec.python_name} ({spec.enum_name}) at {case.level.dml_name}:"), msg
    main = spec.inputs[-1]
    if what == "dims":
        assert f"{main.dml_name} (argument `{main.arg}`) has {case.ndim} dimension" in msg, msg
        assert f"supported: {spec.support_at(case.level).tensors[main.dml_name].dims_text()}" in msg
    elif what == "type":
        assert f"{main.dml_name} (argument `{main.arg}`) has DataType {case.data_type.name}" in msg, msg
        later = spec.lowest_level(main.dml_name, lambda s: case.data_type in s.data_types, case.level)
        if later is not None:
            assert f"{case.data_type.name} is supported from {later.dml_name}" in msg, msg
        else:
            assert "is supported from" not in msg.split(main.dml_name, 2)[1].split("\n  ")[0]
    else:
        assert (f"  The operator is not available at {case.level.dml_name}; "
                f"it was introduced in {spec.introduced.dml_name}.") in msg, msg
        assert f"pass feature_level='{spec.introduced.version}' or newer" in msg


@pytest.mark.parametrize("dtype", ["bfloat16", "bool", "complex64", "float8_e4m3fn"])
def test_non_directml_dtypes_refused(dtype):
    x = jax.ShapeDtypeStruct((2, 2), np.dtype(dtype) if dtype != "bfloat16" else jax.numpy.bfloat16)
    with pytest.raises(dmljax.ValidationError, match=f"InputTensor \\(argument `input`\\) has dtype {dtype}, "
                       "which is not a DirectML data type; supported: FLOAT32, FLOAT16"):
        jax.eval_shape(lambda v: dmljax.activation_scaled_elu(v), x)


@pytest.mark.parametrize("name", ["INT64", "UINT64", "FLOAT64"])
def test_64_bit_types_need_x64(name):
    dt = DataType[name]
    x = np.zeros((2, 2), dt.dtype)  # a numpy array: JAX would silently narrow it without x64
    cond = np.ones((2, 2), np.uint8)
    with jax.enable_x64(False):
        with pytest.raises(dmljax.ValidationError) as info:
            dmljax.element_wise_if(cond, x, x)
    msg = str(info.value)
    assert f"ATensor (argument `a`) has DataType {name}, which JAX holds only in its 64-bit mode" in msg
    assert "jax.config.update('jax_enable_x64', True)" in msg
    with jax.enable_x64(True):
        out = dmljax.element_wise_if(cond, x, x)
        assert out.dtype == dt.dtype
