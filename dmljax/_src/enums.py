"""DirectML's enumerations (other than DML_OPERATOR_TYPE, DML_TENSOR_DATA_TYPE and
DML_FEATURE_LEVEL, which have modules of their own) as Python IntEnums with DirectML's values
(spec/core/enum-values.md: the enumerator order of DirectML.h at DML_TARGET_VERSION 0x6400).

An attribute of an enum type accepts the member, the full name
(``"DML_ROUNDING_MODE_HALVES_TO_NEAREST_EVEN"``), the short name (``"HALVES_TO_NEAREST_EVEN"``, any
case) or the integer value; anything else is refused with the valid names (``DmlEnum.parse``).
"""

from __future__ import annotations

import enum

from dmljax._src.errors import quote

__all__ = ["DmlEnum", "ReduceFunction", "MatrixTransform", "ConvolutionMode", "ConvolutionDirection", "PaddingMode", "InterpolationMode", "RecurrentNetworkDirection", "RoundingMode", "IsInfinityMode", "AxisDirection", "DepthSpaceOrder", "RandomGeneratorType", "MultiheadAttentionMaskType", "QuantizationType", "BOOLEAN_ENUMS"]


class DmlEnum(enum.IntEnum):
    """Base of DirectML's enums: members carry DirectML's values and names."""

    @property
    def dml_name(self) -> str:
        """The full enumerator name, e.g. ``DML_ROUNDING_MODE_TOWARD_ZERO``."""
        return _PREFIXES[type(self)] + self.name

    def __str__(self) -> str:
        return self.dml_name

    def __repr__(self) -> str:
        return f"{type(self).__name__}.{self.name}"

    @classmethod
    def enum_name(cls) -> str:
        """``DML_ROUNDING_MODE``."""
        return _PREFIXES[cls][:-1]

    @classmethod
    def parse(cls, value: object) -> "DmlEnum":
        """The member for a member, a full or short name (any case) or an integer value.

        Raises ValueError naming the valid spellings."""
        if isinstance(value, cls):
            return value
        if isinstance(value, str):
            key = value.strip().upper()
            if key.startswith(_PREFIXES[cls]):
                key = key[len(_PREFIXES[cls]):]
            if key in cls.__members__:
                return cls[key]
        elif isinstance(value, int) and not isinstance(value, (bool, enum.Enum)):
            try:
                return cls(value)
            except ValueError:
                pass
        valid = ", ".join(f"{m.dml_name} ({m.value})" for m in cls)
        raise ValueError(f"{quote(value)} is not a {cls.enum_name()}; valid: {valid}")


class ReduceFunction(DmlEnum):
    """DML_REDUCE_FUNCTION."""

    ARGMAX = 0
    ARGMIN = 1
    AVERAGE = 2
    L1 = 3
    L2 = 4
    LOG_SUM = 5
    LOG_SUM_EXP = 6
    MAX = 7
    MIN = 8
    MULTIPLY = 9
    SUM = 10
    SUM_SQUARE = 11


class MatrixTransform(DmlEnum):
    """DML_MATRIX_TRANSFORM."""

    NONE = 0
    TRANSPOSE = 1


class ConvolutionMode(DmlEnum):
    """DML_CONVOLUTION_MODE."""

    CONVOLUTION = 0
    CROSS_CORRELATION = 1


class ConvolutionDirection(DmlEnum):
    """DML_CONVOLUTION_DIRECTION."""

    FORWARD = 0
    BACKWARD = 1


class PaddingMode(DmlEnum):
    """DML_PADDING_MODE."""

    CONSTANT = 0
    EDGE = 1
    REFLECTION = 2
    SYMMETRIC = 3
    WRAP = 4


class InterpolationMode(DmlEnum):
    """DML_INTERPOLATION_MODE."""

    NEAREST_NEIGHBOR = 0
    LINEAR = 1


class RecurrentNetworkDirection(DmlEnum):
    """DML_RECURRENT_NETWORK_DIRECTION."""

    FORWARD = 0
    BACKWARD = 1
    BIDIRECTIONAL = 2


class RoundingMode(DmlEnum):
    """DML_ROUNDING_MODE."""

    HALVES_TO_NEAREST_EVEN = 0
    TOWARD_ZERO = 1
    TOWARD_INFINITY = 2


class IsInfinityMode(DmlEnum):
    """DML_IS_INFINITY_MODE."""

    EITHER = 0
    POSITIVE = 1
    NEGATIVE = 2


class AxisDirection(DmlEnum):
    """DML_AXIS_DIRECTION."""

    INCREASING = 0
    DECREASING = 1


class DepthSpaceOrder(DmlEnum):
    """DML_DEPTH_SPACE_ORDER."""

    DEPTH_COLUMN_ROW = 0
    COLUMN_ROW_DEPTH = 1


class RandomGeneratorType(DmlEnum):
    """DML_RANDOM_GENERATOR_TYPE."""

    PHILOX_4X32_10 = 0


class MultiheadAttentionMaskType(DmlEnum):
    """DML_MULTIHEAD_ATTENTION_MASK_TYPE."""

    NONE = 0
    KEY_SEQUENCE_LENGTH = 1
    KEY_SEQUENCE_END_START = 2
    KEY_QUERY_SEQUENCE_LENGTH_START_END = 3
    BOOLEAN = 4


class QuantizationType(DmlEnum):
    """DML_QUANTIZATION_TYPE."""

    NONE = 0
    SCALE = 1
    SCALE_ZERO_POINT = 2


_PREFIXES: dict[type, str] = {
    ReduceFunction: "DML_REDUCE_FUNCTION_",
    MatrixTransform: "DML_MATRIX_TRANSFORM_",
    ConvolutionMode: "DML_CONVOLUTION_MODE_",
    ConvolutionDirection: "DML_CONVOLUTION_DIRECTION_",
    PaddingMode: "DML_PADDING_MODE_",
    InterpolationMode: "DML_INTERPOLATION_MODE_",
    RecurrentNetworkDirection: "DML_RECURRENT_NETWORK_DIRECTION_",
    RoundingMode: "DML_ROUNDING_MODE_",
    IsInfinityMode: "DML_IS_INFINITY_MODE_",
    AxisDirection: "DML_AXIS_DIRECTION_",
    DepthSpaceOrder: "DML_DEPTH_SPACE_ORDER_",
    RandomGeneratorType: "DML_RANDOM_GENERATOR_TYPE_",
    MultiheadAttentionMaskType: "DML_MULTIHEAD_ATTENTION_MASK_TYPE_",
    QuantizationType: "DML_QUANTIZATION_TYPE_",
}


BOOLEAN_ENUMS = frozenset({MatrixTransform})
"""Enums whose two values a Python call may give as False and True (``trans_b=True`` is
DML_MATRIX_TRANSFORM_TRANSPOSE): only where True can mean one thing. DML_CONVOLUTION_MODE or
DML_AXIS_DIRECTION also have two values, but True names neither."""
