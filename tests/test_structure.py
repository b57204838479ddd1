"""The structure the operator families build on: a record's output inference (for operators whose
outputs no SameSizes/SameDataType constraint gives), checked through validate.check_call with a
record that is not registered, so the catalog's completeness tests do not see it."""

import jax
import numpy as np
import pytest

import dmljax
from dmljax._src.dtypes import FLOAT32_FLOAT16, DataType
from dmljax._src.errors import Violation
from dmljax._src.feature_level import FeatureLevel
from dmljax._src.spec import OpSpec, ParamSpec, SameDataType, TensorSpec, table
from dmljax._src.validate import TensorInfo, check_call



def _reduce_outputs(tensors, attrs, problems):
    """REDUCE-like: the reduced axes are kept with size 1."""
    x = tensors["InputTensor"]
    axes = attrs["Axes"]
    bad = [a for a in axes if a >= len(x.shape)]
    if bad:
        problems.append(Violation("Axes", "axes", f"has {bad} for a {len(x.shape)}-dimensional input",
                                  f"axes are 0 to {len(x.shape) - 1}"))
        return {}
    shape = tuple(1 if i in axes else s for i, s in enumerate(x.shape))
    return {"OutputTensor": TensorInfo(shape, x.data_type)}


SPEC = OpSpec(
    enum_name="DML_OPERATOR_REDUCE",
    summary="(a test record)",
    formula="f(x) = sum over Axes",
    tensors=(TensorSpec("InputTensor", "input"), TensorSpec("OutputTensor", "output")),
    params=(ParamSpec("Axes", "UINT[]"),),
    support=(table("1.0", InputTensor=("1 to 4", FLOAT32_FLOAT16), OutputTensor=("2 to 4", FLOAT32_FLOAT16)),),
    constraints=(SameDataType(("InputTensor", "OutputTensor")),),
    infer_outputs=_reduce_outputs,
)


def test_inferred_output_sizes():
    x = jax.ShapeDtypeStruct((2, 3, 4), np.float32)
    call = check_call(SPEC, FeatureLevel.FL_6_4, {"InputTensor": x}, {"Axes": [1, 2]})
    assert call.tensors["OutputTensor"] == TensorInfo((2, 1, 1), DataType.FLOAT32)
    assert call.attrs["Axes"] == (1, 2)


def test_inferred_output_problems_are_violations():
    x = jax.ShapeDtypeStruct((2, 3), np.float16)
    with pytest.raises(dmljax.ValidationError, match=r"Axes \(argument `axes`\) has \[5\] for a 2-dimensional input"):
        check_call(SPEC, FeatureLevel.FL_6_4, {"InputTensor": x}, {"Axes": [5]})


def test_inferred_output_is_checked_against_the_table():
    x = jax.ShapeDtypeStruct((7,), np.float32)  # the output would have 1 dimension; the table says 2 to 4
    with pytest.raises(dmljax.ValidationError, match=r"OutputTensor would have 1 dimension \(Sizes \[1\]\); supported: 2 to 4"):
        check_call(SPEC, FeatureLevel.FL_6_4, {"InputTensor": x}, {"Axes": [0]})


def test_enum_members_parse_every_spelling():
    assert dmljax.RoundingMode.parse("DML_ROUNDING_MODE_TOWARD_ZERO") is dmljax.RoundingMode.TOWARD_ZERO
    assert dmljax.RoundingMode.parse("toward_zero") is dmljax.RoundingMode.TOWARD_ZERO
    assert dmljax.ReduceFunction.parse(10) is dmljax.ReduceFunction.SUM
    with pytest.raises(ValueError, match="not a DML_AXIS_DIRECTION; valid: DML_AXIS_DIRECTION_INCREASING"):
        dmljax.AxisDirection.parse("UP")
    with pytest.raises(ValueError):
        dmljax.AxisDirection.parse(True)  # a bool is not an enum value


def test_catalog_is_the_header(unimplemented):
    entries = dmljax.catalog()
    assert len(entries) == 177 and [e.value for e in entries] == list(range(1, 178))
    assert dmljax.canonical_name("SCATTER") == dmljax.canonical_name(94) == "DML_OPERATOR_SCATTER_ELEMENTS"
    implemented = {e.enum_name for e in entries if e.implemented}
    assert implemented == set(dmljax.registry())
    missing = unimplemented[0]
    with pytest.raises(dmljax.OperatorNotImplementedError, match=f"{missing.enum_name} is not implemented yet in dmljax"):
        dmljax.get_operator(missing.short_name.lower())
    with pytest.raises(NotImplementedError):
        dmljax.get_operator(missing.value)
    with pytest.raises(dmljax.UnknownOperatorError, match="'ELEMENT_WISE_NEGAT' is not a DirectML operator type; did you mean DML_OPERATOR_ELEMENT_WISE_NEGATE"):
        dmljax.get_operator("ELEMENT_WISE_NEGAT")
    with pytest.raises(dmljax.UnknownOperatorError, match="178 is not a DML_OPERATOR_TYPE value"):
        dmljax.get_operator(178)


def test_exports_follow_the_registry():
    for name, op in dmljax.registry().items():
        assert getattr(dmljax, op.spec.python_name) is op
        assert op.spec.python_name in dmljax.__all__
    assert dmljax.__all__ == sorted(dmljax.__all__)


def test_names_that_are_not_operators_stay_short():
    for value in (10**5000, "x" * 100_000, b"ELEMENT_WISE_ADD", None, 2.5):
        with pytest.raises(dmljax.UnknownOperatorError) as info:
            dmljax.get_operator(value)
        assert len(str(info.value)) < 600
    with pytest.raises(ValueError, match=r"^'yyyyyy.*\.\.\..* is not a DML_ROUNDING_MODE") as info:
        dmljax.RoundingMode.parse("y" * 10_000)
    assert len(str(info.value)) < 400
    assert dmljax.FusedActivation.coerce({"Type": "ACTIVATION_ELU", "Desc": None}) == dmljax.FusedActivation("ACTIVATION_ELU")
    with pytest.raises(TypeError):
        dmljax.FusedActivation.coerce({"Type": "ACTIVATION_ELU", "Desc": ""})  # not silently "no members"
