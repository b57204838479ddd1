"""dmljax.compile_operator: descs with DML member names, buffers bound by member name, strided
and broadcast layouts, in-place execution, OWNED_BY_DML, and the error messages.

Expected values come from NumPy (or the operator's own array API on packed arrays, for the
"strided equals packed" property); never from the buffer code under test."""

import jax.numpy as jnp
import numpy as np
import pytest

import dmljax
from dmljax import BufferBinding, ValidationError, compile_operator
from dmljax._src.spec import REQUIRED
from tests import tiers


def unary(op, sizes, in_strides=None, out_strides=None, dt="FLOAT32", **attrs):
    desc = {"InputTensor": {"DataType": dt, "Sizes": sizes},
            "OutputTensor": {"DataType": dt, "Sizes": sizes}}
    if in_strides is not None:
        desc["InputTensor"]["Strides"] = in_strides
    if out_strides is not None:
        desc["OutputTensor"]["Strides"] = out_strides
    desc.update(attrs)
    return compile_operator(op, desc)


def test_full_and_short_type_names_and_dict_bindings():
    x = np.array([-1.0, 0.25, 2.0, 7.0], np.float32)
    a = unary("ELEMENT_WISE_THRESHOLD", [4], Min=0.5)
    b = unary("DML_OPERATOR_ELEMENT_WISE_THRESHOLD", [4], Min=0.5)
    out = np.zeros(4, np.float32)
    ra = a(InputTensor=x, OutputTensor=out)["OutputTensor"]
    rb = b({"InputTensor": x, "OutputTensor": out})["OutputTensor"]
    np.testing.assert_array_equal(ra, np.maximum(x, np.float32(0.5)))
    np.testing.assert_array_equal(ra, rb)
    assert a.spec.enum_name == "DML_OPERATOR_ELEMENT_WISE_THRESHOLD"


def test_jitted_once_per_binding_layout():
    op = unary("ELEMENT_WISE_CLIP", [4], Min=-1, Max=1)
    for k in range(3):
        op(InputTensor=np.full(4, k, np.float32), OutputTensor=np.zeros(4, np.float32))
    assert op.trace_count == 1


def test_a_kernel_switch_compiles_the_binding_afresh():
    # the binding's program keys on dmljax.use_kernels' switches, as the operators' own caches do:
    # a block that turns kernels off gets a program traced inside it, and the one outside is kept
    op = unary("ACTIVATION_SOFTMAX", [2, 8])
    x, out = np.linspace(-2, 2, 16, dtype=np.float32), np.zeros(16, np.float32)
    want = op(InputTensor=x, OutputTensor=out)["OutputTensor"]
    with dmljax.use_kernels(False, "softmax"):
        got = op(InputTensor=x, OutputTensor=out)["OutputTensor"]
    op(InputTensor=x, OutputTensor=out)
    assert op.trace_count == 2
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))  # off CUDA both are the XLA formula


def test_nested_fused_activation_flattened_and_long_form():
    a = np.array([1, 2, 3], np.float32)
    b = np.array([5, 8, -5], np.float32)
    base = {"ATensor": {"DataType": "FLOAT32", "Sizes": [3]}, "BTensor": {"DataType": "FLOAT32", "Sizes": [3]},
            "OutputTensor": {"DataType": "FLOAT32", "Sizes": [3]}}
    expected = np.array([6, 10, 0.5 * (np.exp(-2.0) - 1)], np.float64)
    for fa in ({"Type": "ACTIVATION_ELU", "Alpha": 0.5},
               {"Type": "DML_OPERATOR_ACTIVATION_ELU", "Desc": {"Alpha": 0.5}}):
        op = compile_operator("ELEMENT_WISE_ADD1", {**base, "FusedActivation": fa})
        got = op(ATensor=a, BTensor=b, OutputTensor=np.zeros(3, np.float32))["OutputTensor"]
        np.testing.assert_allclose(np.asarray(got, np.float64), expected, rtol=2e-7)


# ------------------------------------------------------------------ strided == packed
LAYOUTS = [
    # (logical sizes, input strides, input buffer elements)
    ([2, 3], [0, 1], 3),          # broadcast rows
    ([2, 3], [1, 0], 2),          # broadcast columns
    ([2, 3], [5, 1], 8),          # padded rows
    ([2, 3], [1, 2], 6),          # column-major
    ([1, 2, 2, 3], [12, 1, 6, 2], 12),  # NHWC
    ([3, 2], [2, 3], 8),          # interleaved (gather)
]


def _unary_float_ops():
    out = []
    for name, op in dmljax.registry().items():
        spec = op.spec
        row = spec.support_at(dmljax.FeatureLevel.newest())
        if [t.dml_name for t in spec.tensors] != ["InputTensor", "OutputTensor"]:
            continue
        if not all(dmljax.DataType.FLOAT32 in row.tensors[t].data_types for t in ("InputTensor", "OutputTensor")):
            continue  # FLOAT32 in and out (IS_NAN, BIT_COUNT write integers)
        if any(p.default is REQUIRED and p.dml_name not in _ATTR_VALUES for p in spec.params):
            continue
        out.append(name)
    return out


_ATTR_VALUES = {"Min": -0.5, "Max": 3.0, "Alpha": 0.75, "Gamma": 1.25, "Exponent": 2.0, "MinMaxDataType": "FLOAT32", "ValueDataType": "FLOAT32",
                "Axes": [0]}


def _attrs(spec):
    """Values for the desc's members: the table's, else the operator's default (a desc names
    every member; an enum by its DML_* name, a FLOAT by its value)."""
    out = {}
    for p in spec.params:
        if p.dml_name in _ATTR_VALUES and not p.nullable:
            out[p.dml_name] = _ATTR_VALUES[p.dml_name]
        elif p.enum is not None and p.default is not None:
            out[p.dml_name] = p.default.dml_name
        elif p.default is not REQUIRED and p.default is not None and not p.nullable:
            out[p.dml_name] = p.default  # a FLOAT with a documented default (HARD_SIGMOID's Beta)
    return out


def _max_rank(name):
    """The effective rank a page allows its InputTensor (SOFTMAX's 2), or None."""
    ranks = [getattr(c, "max_effective_rank", None) for c in dmljax.get_operator(name).spec.extra_checks]
    return min((r for r in ranks if r is not None), default=None)


def _layout_for(name, j):
    """Layout j, or the next one whose effective rank the operator's page allows."""
    limit = _max_rank(name)
    while limit is not None and len([s for s in LAYOUTS[j % len(LAYOUTS)][0]]) - _leading_ones(LAYOUTS[j % len(LAYOUTS)][0]) > limit:
        j += 1
    return j % len(LAYOUTS)


def _leading_ones(sizes):
    n = 0
    while n < len(sizes) and sizes[n] == 1:
        n += 1
    return n


def _unary_layouts():
    """Each unary operator with two of the layouts, in turn, so that every layout meets many
    operators and every operator two layouts (the strided read is the same code for all)."""
    ops = _unary_float_ops()
    return [pytest.param(name, *LAYOUTS[j], id=f"{name[13:]}-{j}")
            for i, name in enumerate(ops) for k in range(2) for j in [_layout_for(name, 2 * i + k)]]


@pytest.mark.parametrize("name, sizes, strides, n", tiers.fast_sample(_unary_layouts(), keep=14, key="strided"))
def test_strided_input_equals_packed_for_every_unary_operator(name, sizes, strides, n):
    op_fn = dmljax.get_operator(name)
    attrs = _attrs(op_fn.spec)
    buf = (np.arange(n, dtype=np.float32) - 2.5) * 0.75
    # the logical tensor, by index arithmetic (offset = dot(index, strides))
    idx = np.zeros(sizes, np.int64)
    for d, (s, t) in enumerate(zip(sizes, strides)):
        shape = [1] * len(sizes)
        shape[d] = s
        idx = idx + (np.arange(s) * t).reshape(shape)
    packed = buf[idx]
    kwargs = {p.arg: v for p, v in ((p, attrs.get(p.dml_name)) for p in op_fn.spec.params) if v is not None}
    kwargs.update({t.data_type_arg: "FLOAT32" for t in op_fn.spec.outputs if t.default_data_type is REQUIRED})  # CAST
    expected = np.asarray(op_fn(packed, **kwargs))
    op = unary(name, sizes, strides, **attrs)
    got = op(InputTensor=buf, OutputTensor=np.zeros(int(np.prod(sizes)), np.float32))["OutputTensor"]
    np.testing.assert_array_equal(np.asarray(got).reshape(sizes), expected)


def test_padded_output_keeps_padding():
    op = unary("ELEMENT_WISE_IDENTITY", [2, 3], out_strides=[4, 1], ScaleBias={"Scale": 2, "Bias": 1})
    out = np.full(8, -7, np.float32)
    got = np.asarray(op(InputTensor=np.arange(6, dtype=np.float32), OutputTensor=out)["OutputTensor"])
    np.testing.assert_array_equal(got, [1, 3, 5, -7, 7, 9, 11, -7])


def test_binding_offsets():
    op = unary("ELEMENT_WISE_IDENTITY", [4])
    buf = np.arange(12, dtype=np.float32)
    out = np.zeros(12, np.float32)
    got = op(InputTensor=BufferBinding(buf, 16), OutputTensor=(out, 32))["OutputTensor"]
    np.testing.assert_array_equal(np.asarray(got), [0] * 8 + [4, 5, 6, 7])
    with pytest.raises(ValidationError, match=r"InputTensor is bound at byte offset 8; the offset must be a multiple of 16"):
        op(InputTensor=BufferBinding(buf, 8), OutputTensor=out)
    with pytest.raises(ValidationError, match=r"OutputTensor is bound to a range of 0 bytes"):
        op(InputTensor=buf, OutputTensor=BufferBinding(out, 48))


# ------------------------------------------------------------------ in-place
def test_in_place_equals_out_of_place():
    x = np.array([-4, -3, -2, -1, 0, 1, 2, 3, 4], np.float32)
    op = unary("ELEMENT_WISE_CLIP", [9], Min=-2.5, Max=2.5)
    out_of_place = np.asarray(op(InputTensor=x, OutputTensor=np.zeros(9, np.float32))["OutputTensor"])
    buf = jnp.asarray(x)
    in_place = op(InputTensor=buf, OutputTensor=buf)["OutputTensor"]
    np.testing.assert_array_equal(np.asarray(in_place), out_of_place)
    np.testing.assert_array_equal(out_of_place, np.clip(x, -2.5, 2.5))
    assert buf.is_deleted()  # donated to XLA


def test_in_place_binary_with_strides_and_reinterpretation():
    # ADD in place into A, viewed as a 2x2 tensor whose B broadcasts a row.
    desc = {"ATensor": {"DataType": "FLOAT32", "Sizes": [2, 2]},
            "BTensor": {"DataType": "FLOAT32", "Sizes": [2, 2], "Strides": [0, 1]},
            "OutputTensor": {"DataType": "FLOAT32", "Sizes": [2, 2]}}
    op = compile_operator("ELEMENT_WISE_ADD", desc)
    a = jnp.asarray(np.array([1, 2, 3, 4], np.float32))
    b = np.array([10, 20], np.float32)
    got = np.asarray(op(ATensor=a, BTensor=b, OutputTensor=a)["OutputTensor"])
    np.testing.assert_array_equal(got, [11, 22, 13, 24])


def test_in_place_refused_where_the_page_does_not_allow_it():
    spec = dmljax.get_operator("ELEMENT_WISE_IF").spec
    assert not spec.in_place
    desc = {n: {"DataType": "UINT8" if n == "ConditionTensor" else "FLOAT32", "Sizes": [4]}
            for n in ("ConditionTensor", "ATensor", "BTensor", "OutputTensor")}
    op = compile_operator("ELEMENT_WISE_IF", desc)
    a = np.ones(4, np.float32)
    with pytest.raises(ValidationError) as e:
        op(ConditionTensor=np.ones(4, np.uint8), ATensor=a, BTensor=np.zeros(4, np.float32), OutputTensor=a)
    assert ("OutputTensor and ATensor are bound to overlapping ranges of one buffer; "
            "DML_OPERATOR_ELEMENT_WISE_IF does not support in-place execution") in str(e.value)


def test_partial_overlap_refused():
    op = unary("ELEMENT_WISE_IDENTITY", [8])
    buf = jnp.zeros(12, jnp.float32)
    with pytest.raises(ValidationError, match="overlap without being the same elements"):
        op(InputTensor=buf, OutputTensor=BufferBinding(buf, 16))


# ------------------------------------------------------------------ OWNED_BY_DML
def test_owned_by_dml_bound_at_initialization():
    desc = {"ATensor": {"DataType": "FLOAT32", "Sizes": [3], "Flags": "OWNED_BY_DML"},
            "BTensor": {"DataType": "FLOAT32", "Sizes": [3]},
            "OutputTensor": {"DataType": "FLOAT32", "Sizes": [3]}}
    op = compile_operator("ELEMENT_WISE_ADD", desc)
    assert op.owned_by_dml == ("ATensor",) and op.bind_points == ("BTensor", "OutputTensor")
    b = np.array([5, 8, -5], np.float32)
    with pytest.raises(ValidationError, match="flagged OWNED_BY_DML, were never bound"):
        op(BTensor=b, OutputTensor=np.zeros(3, np.float32))
    a = np.array([1, 2, 3], np.float32)
    op.initialize(ATensor=a)
    a[:] = 100  # DirectML copied the data at initialization
    got = op(BTensor=b, OutputTensor=np.zeros(3, np.float32))["OutputTensor"]
    np.testing.assert_array_equal(np.asarray(got), [6, 10, -2])
    with pytest.raises(ValidationError, match="ATensor is flagged OWNED_BY_DML: it is bound once, at initialization"):
        op(ATensor=a, BTensor=b, OutputTensor=np.zeros(3, np.float32))


# ------------------------------------------------------------------ desc errors
def test_desc_errors_are_collected_and_name_members():
    with pytest.raises(ValidationError) as e:
        compile_operator("ELEMENT_WISE_CLIP", {
            "InputTensor": {"DataType": "FLOAT32", "Sizes": [4], "Stride": [1]},
            "OutputTensor": {"DataType": "FLOAT32", "Sizes": [4]},
            "Min": 0, "Maximum": 1})
    text = str(e.value)
    assert text.startswith("element_wise_clip (DML_OPERATOR_ELEMENT_WISE_CLIP) at DML_FEATURE_LEVEL_")
    assert "Maximum is not a member of ELEMENT_WISE_CLIP's desc" in text
    assert "members: InputTensor, OutputTensor" in text and "Tip: the closest member is Max" in text
    assert "InputTensor.Stride is not a member of DML_BUFFER_TENSOR_DESC; valid: DataType, Flags" in text
    assert "Max is missing; a required member (FLOAT)" in text


@pytest.mark.parametrize("out, message", [
    ({"DataType": "FLOAT16", "Sizes": [4]}, "OutputTensor.DataType is FLOAT16; the operator produces FLOAT32 here"),
    ({"DataType": "FLOAT32", "Sizes": [2, 2]}, "OutputTensor.Sizes are [2, 2]; the operator produces Sizes [4] here"),
    ({"DataType": "FLOAT32", "Sizes": [2, 2], "Strides": [0, 1]}, "OutputTensor.Strides [0, 1] has stride 0"),
    ({"DataType": "FLOAT32", "Sizes": [4], "Flags": "OWNED_BY_DML"}, "OutputTensor.Flags is OWNED_BY_DML"),
    ({"DataType": "FLOAT32", "Sizes": [4], "TotalTensorSizeInBytes": 10},
     "OutputTensor.TotalTensorSizeInBytes is 10, below the 16 bytes"),
])
def test_output_desc_errors(out, message):
    with pytest.raises(ValidationError) as e:
        compile_operator("ELEMENT_WISE_IDENTITY", {"InputTensor": {"DataType": "FLOAT32", "Sizes": [4]},
                                                   "OutputTensor": out})
    assert message in str(e.value)


def test_feature_level_and_unimplemented_operator(unimplemented):
    with pytest.raises(ValidationError) as e:
        compile_operator(
            "ELEMENT_WISE_IDENTITY", {"InputTensor": {"DataType": "FLOAT32", "Sizes": [4]},
                                      "OutputTensor": {"DataType": "FLOAT32", "Sizes": [4]}}, feature_level="2.0")
    assert "at DML_FEATURE_LEVEL_2_0" in str(e.value) and "has 1 dimension" in str(e.value)
    missing = unimplemented[0]
    with pytest.raises(ValidationError, match=f"{missing.enum_name} is not implemented yet in dmljax"):
        compile_operator(missing.short_name, {})
    with pytest.raises(ValidationError, match="'ELEMENT_WISE_ADDD' is not a DirectML operator type; did you mean"):
        compile_operator("ELEMENT_WISE_ADDD", {})


def test_binding_errors():
    op = unary("ELEMENT_WISE_IDENTITY", [4])
    with pytest.raises(ValidationError) as e:
        op(InputTensor=np.zeros((2, 2), np.float32), Output=np.zeros(4, np.float32))
    text = str(e.value)
    assert "InputTensor is bound to ndarray of shape (2, 2); a buffer is a 1-D array" in text
    assert "Output is not a bind point of DML_OPERATOR_ELEMENT_WISE_IDENTITY" in text
    assert "OutputTensor is not bound" in text
