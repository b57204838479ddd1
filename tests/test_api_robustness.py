"""Regression tests for what random input found (tests/test_fuzz_api.py fuzzes the same surface):
malformed calls end in one ValidationError naming the operator, never in another exception;
nothing invalid is accepted silently; messages stay short; operators work on constants inside
a caller's transformations. Each test failed before its fix."""

import fractions
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dmljax
from dmljax import DataType, FusedActivation, ScalarUnion, TensorDesc, ValidationError
from dmljax._src.errors import MAX_MESSAGE_CHARS, Violation, quote
from tests.doubles import BadHash, BadRepr, FakeArray, RaisingArray

X = np.array([-2.0, 0.5, 3.0], np.float32)
CONST = np.array([-1.0, 0.0, 2.0], np.float32)
ELU_CONST = np.array([math.expm1(-1.0), 0.0, 2.0], np.float32)


def ident(value) -> str:
    """A test id for any value (str() of a 5000-digit int raises), the same in every process (no
    object addresses: pytest workers must collect the same ids)."""
    text = quote(value)
    return type(value).__name__ if " at 0x" in text else text[:40]


def refused(fn, operator="element_wise_threshold") -> str:
    """The message of the ValidationError that ``fn()`` raises, checked to name the operator and
    to be short."""
    with pytest.raises(ValidationError) as info:
        fn()
    e = info.value
    assert e.operator == operator, str(e)
    text = str(e)
    assert len(text) <= MAX_MESSAGE_CHARS, len(text)
    return text


def desc(**over):
    d = {"InputTensor": {"DataType": "FLOAT32", "Sizes": [3]},
         "OutputTensor": {"DataType": "FLOAT32", "Sizes": [3]}, "Min": 0.5}
    for k, v in over.items():
        if k in ("Input", "Output"):
            d[k + "Tensor"] = {**d[k + "Tensor"], **v}
        else:
            d[k] = v
    return d


# ---------------------------------------------------------------- constants inside transformations
@pytest.mark.parametrize("where", ["top", "jit", "grad", "vmap", "eval_shape", "scan", "cond", "jvp", "checkpoint"])
@pytest.mark.parametrize("arg", ["constant", "argument"])
def test_operator_on_constants_and_tracers_inside_transformations(where, arg):
    """A NumPy constant inside a caller's jit made the operator pass compiler_options to a
    nested jax.jit ("`compiler_options` can only be passed to top-level `jax.jit`")."""
    elu = dmljax.activation_elu

    def f(y, x):
        v = elu(CONST) if arg == "constant" else elu(x)
        return v * y

    y, x = np.float32(2.0), CONST
    expected = ELU_CONST * 2
    if where == "top":
        out = f(y, x)
    elif where == "jit":
        out = jax.jit(f)(y, x)
    elif where == "grad":
        out = jax.grad(lambda y, x: f(y, x).sum())(y, x)
        expected = np.float32(ELU_CONST.sum())
    elif where == "vmap":
        out = jax.vmap(f, in_axes=(0, None))(np.array([2.0, 2.0], np.float32), x)[1]
    elif where == "eval_shape":
        out = jax.eval_shape(f, y, x)
        assert out.shape == (3,) and out.dtype == jnp.float32
        return
    elif where == "scan":
        out = jax.lax.scan(lambda c, _: (c + f(y, x), None), jnp.zeros(3, jnp.float32), None, length=2)[0] / 2
    elif where == "cond":
        out = jax.lax.cond(True, lambda: f(y, x), lambda: jnp.zeros(3, jnp.float32))
    elif where == "jvp":
        out = jax.jvp(lambda y: f(y, x), (y,), (np.float32(1.0),))[0]
    else:
        out = jax.jit(jax.checkpoint(f))(y, x)
    np.testing.assert_allclose(np.asarray(out), expected, rtol=1e-6)


@pytest.mark.slow  # 1.4-4.5 s on 2 cores; the slow tier keeps it in CI
def test_constant_inside_jit_exact_reproduction():
    out = jax.jit(lambda y: dmljax.activation_elu(np.ones(3, np.float32)) + y)(np.float32(1))
    np.testing.assert_array_equal(np.asarray(out), np.full(3, 2.0, np.float32))


def test_concrete_jax_arrays_at_top_level_and_nested():
    x = jnp.asarray(X)
    top = dmljax.element_wise_threshold(x, min=0.0)
    nested = jax.jit(lambda: dmljax.element_wise_threshold(x, min=0.0))()
    np.testing.assert_array_equal(np.asarray(top), np.asarray(nested))


# ---------------------------------------------------------------- feature level and flags
@pytest.mark.parametrize("level", ["9.9", 2.1, [1], 10**400, object(), "x" * 5000, True, np.int64(0x2100)], ids=ident)
def test_invalid_feature_level_argument(level):
    text = refused(lambda: dmljax.element_wise_threshold(X, min=0.0, feature_level=level))
    assert "feature_level (argument `feature_level`)" in text and "is not a DirectML feature level" in text


def test_invalid_feature_level_environment_variable(monkeypatch):
    monkeypatch.setenv("DMLJAX_FEATURE_LEVEL", "bogus")
    text = refused(lambda: dmljax.element_wise_threshold(X, min=0.0))
    assert "environment variable DMLJAX_FEATURE_LEVEL: 'bogus' is not a DirectML feature level" in text
    assert "Tip: set DMLJAX_FEATURE_LEVEL to a valid level, unset it, or pass feature_level=." in text
    with pytest.raises(ValidationError, match="environment variable DMLJAX_FEATURE_LEVEL"):
        dmljax.compile_operator("ELEMENT_WISE_THRESHOLD", desc())


@pytest.mark.parametrize("half", [1, 0, np.bool_(True), "True", None, 1.0], ids=ident)
def test_half_precision_flag_must_be_a_bool(half):
    text = refused(lambda: dmljax.element_wise_threshold(X, min=0.0, allow_half_precision_computation=half))
    assert "allow_half_precision_computation (argument `allow_half_precision_computation`) is" in text
    assert "expected True or False" in text


def test_compile_operator_refuses_level_and_flag_with_a_validation_error():
    with pytest.raises(ValidationError, match="allow_half_precision_computation is 1; expected True or False"):
        dmljax.compile_operator("ELEMENT_WISE_THRESHOLD", desc(), allow_half_precision_computation=1)
    with pytest.raises(ValidationError, match="'x' is not a DirectML feature level") as e:
        dmljax.compile_operator("ELEMENT_WISE_THRESHOLD", desc(), feature_level="x")
    assert e.value.operator == "element_wise_threshold"


# ---------------------------------------------------------------- attributes that escaped
def _self_list():
    x = [1.0]
    x.append(x)
    return x


def _self_first():
    x = []
    x.append(x)
    return x


@pytest.mark.parametrize("value, found", [
    (10**400, "is <an integer of 1329 bits>, outside the range of FLOAT"),
    (-(10**5000), "is -<an integer of 16610 bits>, outside the range of FLOAT"),
    ("1.5", "is '1.5' (str), not a number"),
    (_self_list(), "is [1.0, [1.0, [1.0, [...]]]] (list), not a number"),
    (np.ma.masked_array([1.0]), "is an array (MaskedArray)"),
    (np.ma.masked, "is an array (MaskedConstant)"),
    (FakeArray(), "is an array (FakeArray)"),
    (RaisingArray(), "(RaisingArray), not a number"),  # hasattr let its RuntimeError through
    (BadHash(), "(BadHash), not a number"),  # the cache key's hash() raised
    (BadRepr(), "(BadRepr), not a number"),
], ids=ident)
def test_bad_attribute_values_end_in_a_validation_error(value, found):
    text = refused(lambda: dmljax.element_wise_threshold(X, min=value))
    assert "  Min (argument `min`) is " in text and found in text, text


def test_self_referential_and_deep_containers_as_attributes():
    d = {"Scale": 1.0}
    d["Bias"] = d
    deep = ()
    for _ in range(10000):
        deep = (deep,)
    for sb in (_self_list(), [_self_list(), 1.0], d, deep, (deep, deep)):
        refused(lambda: dmljax.element_wise_threshold(X, min=0.0, scale_bias=sb))


@pytest.mark.parametrize("value, found", [
    (np.str_("1.5"), "is np.str_('1.5') (str_), not a number"),
    (np.longdouble("1e4000"), "is np.longdouble('1e+4000'), outside the range of FLOAT (float32, largest 3.402823e+38)"),
    (np.complex64(1 + 1j), "is np.complex64(1+1j) (complex64), not a number"),
    (1e39, "is 1e+39, outside the range of FLOAT"),
    (True, "is True (bool), not a number"),
], ids=ident)
def test_invalid_float_attributes_are_refused_not_converted(value, found):
    text = refused(lambda: dmljax.activation_elu(X, alpha=value), "activation_elu")
    assert f"  Alpha (argument `alpha`) {found}" in text, text


@pytest.mark.parametrize("value, found", [
    ({"Bytes": 8}, "has Bytes 8; Bytes is 8 integers from 0 to 255"),  # bytes(8) is eight zero bytes
    ({"Bytes": 10**12}, "has Bytes 1000000000000"),  # bytes(10**12): MemoryError
    ({"Bytes": "abcdefgh"}, "has Bytes 'abcdefgh'"),  # bytes(str): TypeError
    ({"Bytes": [256, 0, 0, 0, 0, 0, 0, 0]}, "has Bytes [256, 0, 0, 0, 0, 0, ...]"),
    ({"Bytes": [True] * 8}, "has Bytes [True, True"),
    ({"Bytes": [0, 0]}, "has 2 Bytes; the union holds 8"),
    (np.longdouble("1e4000"), "is np.longdouble('1e+4000'), outside the range of FLOAT32"),
    (10**400, "is <an integer of 1329 bits>, outside the range of FLOAT32"),
    ({BadRepr(): 1}, "names member <BadRepr instance at"),
], ids=ident)
def test_invalid_scalar_unions_are_refused(value, found):
    text = refused(lambda: dmljax.element_wise_clip1(X, min=value, max=1.0), "element_wise_clip1")
    assert f"  Min (argument `min`) {found}" in text, text


def test_scalar_union_bytes_forms_still_accepted():
    for b in ([0, 0, 128, 63, 0, 0, 0, 0], b"\x00\x00\x80\x3f\x00\x00\x00\x00", bytearray(b"\x00\x00\x80\x3f" + bytes(4))):
        out = dmljax.element_wise_clip1(X, min={"Bytes": b}, max=2.0)
        np.testing.assert_array_equal(np.asarray(out), [1.0, 1.0, 2.0])


def test_long_double_integrality_is_read_in_its_own_precision(x64):
    # 2**60 + 0.5 is no integer, but rounds to one through float64
    v = np.longdouble(2**60) + np.longdouble(0.5)
    if v == np.longdouble(2**60):
        pytest.skip("long double is float64 here")
    x = np.zeros(2, np.int64)
    text = refused(lambda: dmljax.element_wise_clip1(x, min=0, max=v), "element_wise_clip1")
    assert "which is not an integer, so INT64 cannot hold it" in text


# ---------------------------------------------------------------- rounding once (C's conversion)
def test_float_attributes_round_once_to_float32():
    """2**53 + 2**29 + 1 is just above the midpoint of two float32 values: C rounds it up; a
    rounding to float64 first lands on the midpoint and then rounds to even, down."""
    big = 2**53 + 2**29 + 1
    x = np.full(2, 2.0**53, np.float32)
    out = np.asarray(dmljax.element_wise_threshold(x, min=big))
    assert out[0] == np.float32(2**53 + 2**30)
    out = np.asarray(dmljax.element_wise_threshold(x, min=fractions.Fraction(big)))
    assert out[0] == np.float32(2**53 + 2**30)
    clip = np.asarray(dmljax.element_wise_clip1(x, min=big, max=2.0**60))
    assert clip[0] == np.float32(2**53 + 2**30)
    # the largest int that rounds to FLT_MAX is accepted, the next one overflows
    edge = 2**128 - 2**103
    assert float(dmljax.element_wise_threshold(x, min=edge - 1)[0]) == float(np.finfo(np.float32).max)
    refused(lambda: dmljax.element_wise_threshold(x, min=edge))


# ---------------------------------------------------------------- tensors
@pytest.mark.parametrize("bad, found", [
    (np.ma.masked_array(X), "is a NumPy masked array; DirectML tensors have no mask"),
    (FakeArray(), "is a FakeArray, not an array"),
    (RaisingArray(), "is a RaisingArray, not an array"),
    (jax.ShapeDtypeStruct((3,), np.float32), "is a jax.ShapeDtypeStruct, which has a shape but no values"),
    (jax.random.key(0), "is a PRNGKeyArray whose shape or dtype is not an array's"),
], ids=ident)
def test_non_arrays_are_refused_even_after_a_cached_call_of_the_same_shape(bad, found):
    """The validation cache keyed a call by shape and dtype only: a masked array or an object
    with the shape and dtype of an earlier valid call was accepted (then JAX raised, or dropped
    the mask)."""
    dmljax.element_wise_threshold(np.zeros(3, np.float32), min=0.0)
    text = refused(lambda: dmljax.element_wise_threshold(bad, min=0.0))
    assert f"  InputTensor (argument `input`) {found}" in text, text



@pytest.mark.parametrize("operator, call, found", [
    ("one_hot", lambda: dmljax.one_hot(np.zeros(5, np.uint32), np.ma.masked_array(np.zeros(2, np.float32)),
                            output_sizes=(5, 2), axis=1),
     "ValuesTensor (argument `values`) is a NumPy masked array"),
    ("average_pooling_grad", lambda: dmljax.average_pooling_grad(np.zeros((1, 1, 4, 4), bool), output_gradient_sizes=(1, 1, 4, 4),
                                         strides=(1, 1), window_size=(1, 1), start_padding=(0, 0),
                                         end_padding=(0, 0), include_padding=False),
     "InputGradientTensor (argument `input_gradient`) has dtype bool"),
], ids=["one_hot masked values", "average_pooling_grad bool"])
def test_an_output_typed_by_a_refused_input_ends_in_a_validation_error(operator, call, found):
    """An output given Sizes by the caller and its DataType by an input (ONE_HOT's by ValuesTensor,
    AVERAGE_POOLING_GRAD's by InputGradientTensor) raised an internal TypeError ("DataType comes
    from nothing") when that input was refused, instead of the ValidationError naming it (found by
    the API fuzz with 400 examples an operator)."""
    assert found in refused(call, operator)

def test_zero_size_arrays_are_refused_like_tensor_descs():
    text = refused(lambda: dmljax.upsample_2d(np.zeros((1, 1, 0, 0), np.float32), scale_size=(2, 2),
                                              interpolation_mode="LINEAR"), "upsample_2d")
    assert "has Sizes [1, 1, 0, 0], with a zero size" in text  # UPSAMPLE_2D's bound divided by it
    text = refused(lambda: dmljax.element_wise_threshold(np.zeros((0, 3), np.float32), min=0.0))
    assert "InputTensor (argument `input`) has Sizes [0, 3], with a zero size" in text
    refused(lambda: jax.eval_shape(lambda v: dmljax.element_wise_threshold(v, min=0.0),
                                   jax.ShapeDtypeStruct((2, 0), np.float32)))
    with pytest.raises(ValidationError, match=r"InputTensor.Sizes \[3, 0\] has a size below 1"):
        dmljax.compile_operator("ELEMENT_WISE_THRESHOLD", desc(Input={"Sizes": [3, 0]}))


def test_more_than_2_to_the_32_elements_refused_without_allocating():
    big = jax.ShapeDtypeStruct((65536, 65536), np.float32)
    text = refused(lambda: jax.eval_shape(lambda v: dmljax.element_wise_threshold(v, min=0.0), big))
    assert "has 4294967296 elements (Sizes [65536, 65536]); a DirectML tensor holds at most 2^32 - 1 elements" in text
    assert jax.eval_shape(lambda v: dmljax.element_wise_threshold(v, min=0.0),
                          jax.ShapeDtypeStruct((65535, 65537), np.float32)).shape == (65535, 65537)
    with pytest.raises(ValidationError, match="at most 2\\^32 - 1 elements"):
        dmljax.compile_operator("ELEMENT_WISE_THRESHOLD", desc(Input={"Sizes": [65536, 65536]},
                                                                Output={"Sizes": [65536, 65536]}))


def test_float64_without_support_gets_the_cast_tip():
    text = refused(lambda: dmljax.activation_elu(np.ones(3)), "activation_elu")
    assert ("  InputTensor (argument `input`) has DataType FLOAT64; supported: FLOAT32, FLOAT16.\n"
            "    Tip: cast it to FLOAT32 (x.astype(np.float32)); dmljax never narrows a type for you.") in text
    assert "64-bit mode" not in text
    text = refused(lambda: dmljax.element_wise_negate(np.ones(3, np.int64)), "element_wise_negate")
    assert "64-bit mode" in text  # NEGATE supports INT64: there the tip is the 64-bit mode's


# ---------------------------------------------------------------- data types given as values
@pytest.mark.parametrize("value", [np.zeros(3, np.uint8), np.uint8(1), FakeArray(), True], ids=ident)
def test_an_array_or_a_number_is_not_a_data_type(value):
    """np.dtype(x) reads an array's or any object's ``dtype`` attribute: an array given as a
    DataType was taken as its dtype."""
    with pytest.raises(ValidationError, match="is not a DirectML data type"):
        TensorDesc(value, [2])
    text = refused(lambda: dmljax.element_wise_logical_less_than(X, X, output_data_type=value),
                   "element_wise_logical_less_than")
    assert "OutputTensor (argument `output_data_type`) DataType" in text
    assert DataType.parse(np.dtype(np.uint8)) is DataType.UINT8 and DataType.parse(np.uint8) is DataType.UINT8


# ---------------------------------------------------------------- fused activations
@pytest.mark.parametrize("fa", [{"Type": "ACTIVATION_ELU", "Desc": np.zeros(2)},
                                {"Type": "ACTIVATION_ELU", "Desc": ""},
                                {"Type": "ACTIVATION_ELU", "Desc": 0},
                                {"Type": "ACTIVATION_ELU", "Desc": []}], ids=ident)
def test_fused_activation_desc_must_be_a_mapping(fa):
    """``desc.get("Desc") or {}``: an array raised ValueError; "", 0 and [] became no members."""
    text = refused(lambda: dmljax.element_wise_add1(X, X, fused_activation=fa), "element_wise_add1")
    assert "expected {'Type': 'DML_OPERATOR_...', 'Desc': {member: value, ...}}" in text


# ---------------------------------------------------------------- compile_operator descs
@pytest.mark.parametrize("over, found", [
    (dict(Input={"Flags": _self_first()}), "InputTensor.Flags is [[[[...]]]]"),  # RecursionError
    (dict(Input={"Sizes": [math.inf]}), "InputTensor.Sizes is [inf]; expected a list of integers"),  # OverflowError
    (dict(Input={"Sizes": ["3"]}), "InputTensor.Sizes is ['3']; expected a list of integers"),  # int("3")
    (dict(Input={"Sizes": [np.float32(2.5)]}), "InputTensor.Sizes is [np.float32(2.5)]"),  # int(): 2
    (dict(Input={"Sizes": [True, 3]}), "InputTensor.Sizes is [True, 3]"),
    (dict(Input={"DimensionCount": np.array([1, 1])}), "InputTensor.DimensionCount is array("),  # ValueError
    (dict(Input={"DimensionCount": 1.5}), "InputTensor.DimensionCount is 1.5"),
    (dict(Input={"DimensionCount": True}), "InputTensor.DimensionCount is True"),
    (dict(Input={"Strides": "1"}), "InputTensor.Strides is '1'"),
    (dict(Input={"Type": ["BUFFER"]}), "InputTensor.Type is ['BUFFER']"),
    (dict(Input={"Desc": {"DataType": "FLOAT32", "Sizes": [3]}, 1: 2, "a": 3}), "beside Type and Desc"),  # sorted()
    (dict(Input={"TotalTensorSizeInBytes": 10**400}), "TotalTensorSizeInBytes is <an integer of 1329 bits>; it is a UINT64"),
    (dict(Input={"GuaranteedBaseOffsetAlignment": 10**400}), "GuaranteedBaseOffsetAlignment is <an integer of 1329 bits>"),
    (dict(Input={"DataType": np.zeros(2, np.float32)}), "InputTensor.DataType is array("),
    (dict(Min="x" * 100000), "Min (argument `min`) is 'xxxxxxx"),
    (dict(FusedActivation={"Type": "ACTIVATION_ELU"}), "FusedActivation is not a member"),
], ids=ident)
def test_compile_operator_bad_members_end_in_a_validation_error(over, found):
    text = refused(lambda: dmljax.compile_operator("ELEMENT_WISE_THRESHOLD", desc(**over)))
    assert found in text, text


def test_tensor_desc_and_buffer_size_refuse_what_is_not_a_list_of_integers():
    for sizes in ("123", {1: 2}, [np.float32(2.5)], None, 7):
        with pytest.raises(ValidationError, match="expected a list of integers"):
            TensorDesc("FLOAT32", sizes)
    with pytest.raises(ValidationError, match="expected a list of integers"):
        dmljax.calc_buffer_tensor_size("FLOAT32", ["2"])
    with pytest.raises(ValidationError, match="is not a DirectML data type"):
        dmljax.calc_buffer_tensor_size("FLOAT8", [2])
    assert TensorDesc("FLOAT32", [2], total_tensor_size_in_bytes=np.int64(0)).total_tensor_size_in_bytes == 8
    assert TensorDesc("FLOAT32", [2.0, np.int64(3)]).sizes == (2, 3)


# ---------------------------------------------------------------- message length
def test_messages_are_capped():
    """A message quoted a whole value (50,508 characters)."""
    e = ValidationError("op", "DML_OPERATOR_X", "L", [Violation("S", "a", "f" * 10**5, "b" * 10**5, "t" * 10**5)] * 50)
    assert len(str(e)) <= MAX_MESSAGE_CHARS and "... and 49 more problems" in str(e)
    many = {f"Bogus{i}": i for i in range(1000)}
    text = refused(lambda: dmljax.compile_operator("ELEMENT_WISE_THRESHOLD", {**desc(), **many}))
    assert "The desc has 992 more members that ELEMENT_WISE_THRESHOLD's desc lacks" in text
    fa = FusedActivation("ACTIVATION_ELU", **{f"m{i}": i for i in range(1000)})
    text = refused(lambda: dmljax.element_wise_add1(X, X, fused_activation=fa), "element_wise_add1")
    assert "FusedActivation.Desc (argument `fused_activation`) has 992 more members that DML_OPERATOR_ACTIVATION_ELU lacks." in text
    text = refused(lambda: dmljax.compile_operator("ELEMENT_WISE_THRESHOLD", desc(Input={"Sizes": list(range(10**5))})))
    assert "has 100000 entries" in text
    for v in (10**5000, "x" * 10**6, list(range(10**5)), _self_list(), BadRepr()):
        assert len(quote(v)) <= 80
    for name in ("x" * 10**6, 10**5000, -(10**400)):
        with pytest.raises(ValidationError) as info:
            dmljax.compile_operator(name, {})
        assert len(str(info.value)) <= MAX_MESSAGE_CHARS


def test_enum_members_refuse_with_the_valid_names():
    from dmljax._src.params import ParamContext, check_param
    from dmljax._src.spec import ParamSpec
    p = ParamSpec("RoundingMode", "DML_ROUNDING_MODE", enum=dmljax.RoundingMode)
    for bad in (BadRepr(), 10**5000, "NEAREST", 7, True, 1.0):
        ctx = ParamContext(dmljax.element_wise_threshold.spec, None, {}, [])
        assert check_param(ctx, p, bad) is None
        assert "valid: DML_ROUNDING_MODE_HALVES_TO_NEAREST_EVEN (0)" in ctx.problems[0].allowed
    ctx = ParamContext(dmljax.element_wise_threshold.spec, None, {}, [])
    assert check_param(ctx, p, "toward_zero") is dmljax.RoundingMode.TOWARD_ZERO and not ctx.problems


def test_scalar_union_accepts_fractions_and_exact_ints():
    assert ScalarUnion("FLOAT32", 2**53 + 2**29 + 1).value == 2**53 + 2**30
    assert ScalarUnion("INT8", fractions.Fraction(6, 2)).value == 3
    with pytest.raises(ValueError, match="not an integer"):
        ScalarUnion("INT8", fractions.Fraction(1, 2))


# ---------------------------------------------------------------- CompiledOperator bindings
class FakeBuffer:
    shape = (3,)
    dtype = np.dtype(np.float32)


@pytest.mark.parametrize("binding, found", [
    ((np.zeros(3, np.float32), "16"), "InputTensor is bound at offset '16'; an offset is a whole number of bytes"),
    ((np.zeros(3, np.float32), math.inf), "InputTensor is bound at offset inf"),  # OverflowError
    ((np.zeros(3, np.float32), 1.5), "InputTensor is bound at offset 1.5"),  # int(): 1
    ((np.zeros(3, np.float32), True), "InputTensor is bound at offset True"),
    ((np.zeros(3, np.float32), 10**5000), "InputTensor is bound at offset <an integer of 16610 bits>"),
    (dmljax.BufferBinding(np.zeros(3, np.float32), "x"), "InputTensor is bound at offset 'x'"),
    (np.ma.masked_array(np.zeros(3, np.float32)), "InputTensor is bound to a NumPy masked array"),  # JAX's ValueError
    (FakeBuffer(), "InputTensor is bound to FakeBuffer; a buffer is a 1-D array"),  # float(): TypeError
    (jax.ShapeDtypeStruct((3,), np.float32), "InputTensor is bound to ShapeDtypeStruct"),
    (np.zeros(3), "InputTensor is bound to a buffer of DataType FLOAT64, which JAX holds only in its 64-bit mode"),
], ids=ident)
def test_bad_bindings_end_in_a_validation_error(binding, found):
    """A float64 buffer without 64-bit mode was narrowed to float32 by jnp.asarray and its bytes
    read as FLOAT32 data: a silent change."""
    op = dmljax.compile_operator("ELEMENT_WISE_THRESHOLD", desc())
    text = refused(lambda: op(InputTensor=binding, OutputTensor=np.zeros(3, np.float32)))
    assert found in text, text


@pytest.mark.parametrize("bindings", [[1], "x", 7], ids=ident)
def test_bindings_must_be_a_mapping(bindings):
    op = dmljax.compile_operator("ELEMENT_WISE_THRESHOLD", desc())
    assert "bindings are a mapping from member name to buffer" in refused(lambda: op(bindings))


def test_float64_buffer_bytes_still_bind_in_64_bit_mode(x64):
    op = dmljax.compile_operator("ELEMENT_WISE_IDENTITY", {"InputTensor": {"DataType": "FLOAT64", "Sizes": [2]},
                                                           "OutputTensor": {"DataType": "FLOAT64", "Sizes": [2]}})
    out = op(InputTensor=np.array([1.5, -2.0]), OutputTensor=np.zeros(2))["OutputTensor"]
    np.testing.assert_array_equal(np.asarray(out), [1.5, -2.0])
