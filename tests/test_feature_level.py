"""FeatureLevel: ordering, parsing, and the four ways a call picks its level."""

import jax.numpy as jnp
import numpy as np
import pytest

import dmljax
from dmljax import FeatureLevel

X3 = np.ones((2, 2, 2), np.float32)  # 3 dimensions: refused before 3.0, accepted from 3.0


def test_all_levels_ordered_with_dml_values():
    versions = [lv.version for lv in FeatureLevel]
    assert versions == ["1.0", "2.0", "2.1", "3.0", "3.1", "4.0", "4.1", "5.0", "5.1", "5.2",
                        "6.0", "6.1", "6.2", "6.3", "6.4"]
    assert list(FeatureLevel) == sorted(FeatureLevel)
    assert FeatureLevel.FL_2_1 == 0x2100 and FeatureLevel.FL_6_4 == 0x6400
    assert FeatureLevel.newest() is FeatureLevel.FL_6_4
    assert str(FeatureLevel.FL_3_0) == "DML_FEATURE_LEVEL_3_0"


@pytest.mark.parametrize("text", ["2.0", "2_0", "DML_FEATURE_LEVEL_2_0", "dml_feature_level_2_0", " 2.0 ", "FL_2_0", 0x2000])
def test_parse_spellings(text):
    assert FeatureLevel.parse(text) is FeatureLevel.FL_2_0


@pytest.mark.parametrize("bad", ["2.2", "7.0", "latest", "", 2, 2.0, None])
def test_parse_invalid_lists_valid_levels(bad):
    with pytest.raises(ValueError, match=r"is not a DirectML feature level; valid: 1\.0, 2\.0, 2\.1, 3\.0.*6\.4"):
        FeatureLevel.parse(bad)


def test_default_is_newest(monkeypatch):
    monkeypatch.delenv("DMLJAX_FEATURE_LEVEL", raising=False)
    # INT64 modulus is accepted from 6.0 only: the default level must be at least that.
    x = np.ones((2,), np.int64)
    with pytest.raises(dmljax.ValidationError) as e:
        dmljax.element_wise_modulus_floor(x, x)
    assert "DML_FEATURE_LEVEL_6_4" in str(e.value)


def test_per_call_argument_accepts_every_form():
    for form in ("2.0", "2_0", "DML_FEATURE_LEVEL_2_0", FeatureLevel.FL_2_0):
        with pytest.raises(dmljax.ValidationError, match="at DML_FEATURE_LEVEL_2_0"):
            dmljax.activation_scaled_elu(X3, feature_level=form)
    assert dmljax.activation_scaled_elu(X3, feature_level="3.0").shape == X3.shape


def test_context_manager_nests_and_restores(monkeypatch):
    monkeypatch.delenv("DMLJAX_FEATURE_LEVEL", raising=False)
    with dmljax.feature_level("2.0"):
        with pytest.raises(dmljax.ValidationError, match="at DML_FEATURE_LEVEL_2_0"):
            dmljax.activation_scaled_elu(X3)
        with dmljax.feature_level("3.0"):
            dmljax.activation_scaled_elu(X3)
        assert dmljax.activation_scaled_elu(X3, feature_level="6.4").shape == X3.shape  # argument wins
        with pytest.raises(dmljax.ValidationError):
            dmljax.activation_scaled_elu(X3)
    dmljax.activation_scaled_elu(X3)


def test_environment_variable(monkeypatch):
    monkeypatch.setenv("DMLJAX_FEATURE_LEVEL", "DML_FEATURE_LEVEL_2_0")
    with pytest.raises(dmljax.ValidationError, match="at DML_FEATURE_LEVEL_2_0"):
        dmljax.activation_scaled_elu(X3)
    with dmljax.feature_level("3.0"):  # the context manager wins over the environment
        dmljax.activation_scaled_elu(X3)
    monkeypatch.setenv("DMLJAX_FEATURE_LEVEL", "9.9")
    with pytest.raises(ValueError, match=r"environment variable DMLJAX_FEATURE_LEVEL: '9\.9' is not a DirectML feature level; valid: 1\.0"):
        dmljax.activation_scaled_elu(X3)


def test_support_row_is_the_newest_at_or_below_the_level():
    spec = dmljax.element_wise_multiply.spec
    assert spec.support_at(FeatureLevel.FL_1_0).level is FeatureLevel.FL_1_0
    assert spec.support_at(FeatureLevel.FL_2_0).level is FeatureLevel.FL_1_0
    assert spec.support_at(FeatureLevel.FL_5_0).level is FeatureLevel.FL_4_1
    assert spec.support_at(FeatureLevel.FL_6_4).level is FeatureLevel.FL_5_1
    a = jnp.ones((2,), jnp.int16)
    with pytest.raises(dmljax.ValidationError, match="INT16 is supported from DML_FEATURE_LEVEL_5_1"):
        dmljax.element_wise_multiply(a, a, feature_level="5.0")
    assert dmljax.element_wise_multiply(a, a, feature_level="5.1").dtype == jnp.int16


def test_all_violations_reported_at_once():
    with pytest.raises(dmljax.ValidationError) as e:
        dmljax.element_wise_if(np.ones((2, 2), np.int8), np.ones((2, 2), np.float32),
                               np.ones((3,), np.int32), feature_level="3.0")
    err = e.value
    assert len(err.violations) == 3, str(err)
    assert str(err) == (
        "element_wise_if (DML_OPERATOR_ELEMENT_WISE_IF) at DML_FEATURE_LEVEL_3_0:\n"
        "  ConditionTensor (argument `condition`) has DataType INT8; supported: UINT8.\n"
        "  ConditionTensor (argument `condition`), ATensor (argument `a`) and BTensor (argument `b`) "
        "have Sizes [2, 2], [2, 2], [3]; they must have the same DimensionCount and Sizes.\n"
        "    Tip: broadcast explicitly (jnp.broadcast_to, i.e. zero strides): DirectML never broadcasts implicitly.\n"
        "  ATensor (argument `a`) and BTensor (argument `b`) have DataTypes FLOAT32, INT32; "
        "they must have the same DataType.\n"
        "    Tip: cast explicitly: DirectML never promotes types.")
    assert isinstance(err, ValueError)


def test_message_format_of_the_style_guide():
    with pytest.raises(dmljax.ValidationError) as e:
        dmljax.activation_scaled_elu(X3, feature_level="2.0")
    assert str(e.value) == (
        "activation_scaled_elu (DML_OPERATOR_ACTIVATION_SCALED_ELU) at DML_FEATURE_LEVEL_2_0:\n"
        "  InputTensor (argument `input`) has 3 dimensions (Sizes [2, 2, 2]); supported: 4 to 5.\n"
        "    Tip: 1 to 8 dimensions are supported from DML_FEATURE_LEVEL_3_0.")


def test_python_lists_and_scalars_refused():
    with pytest.raises(dmljax.ValidationError, match=r"InputTensor \(argument `input`\) is a Python list, not an array"):
        dmljax.activation_scaled_elu([1.0, 2.0])
    with pytest.raises(TypeError, match="element_wise_threshold: missing a required (keyword-only )?argument: 'min'"):
        dmljax.element_wise_threshold(X3)
