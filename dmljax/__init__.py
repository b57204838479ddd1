"""dmljax: DirectML's operators as differentiable, jitted JAX functions, with DirectML's
documented semantics."""

from dmljax._src import ops as _ops  # noqa: F401  (registers every operator)
from dmljax._src.buffers import BufferBinding
from dmljax._src.compile import CompiledOperator, compile_operator
from dmljax._src.dtypes import DataType
from dmljax._src.errors import ValidationError, Violation
from dmljax._src.feature_level import FeatureLevel, feature_level
from dmljax._src.fused import FusedActivation
from dmljax._src.op import get_operator, registry
from dmljax._src.ops.activation import activation_elu, activation_scaled_elu
from dmljax._src.ops.element_wise import (
    element_wise_add,
    element_wise_add1,
    element_wise_clip,
    element_wise_clip1,
    element_wise_constant_pow,
    element_wise_identity,
    element_wise_if,
    element_wise_logical_less_than,
    element_wise_modulus_floor,
    element_wise_multiply,
    element_wise_threshold,
)
from dmljax._src.structs import ScalarUnion, ScaleBias
from dmljax._src.tensor_desc import TensorDesc, TensorFlags, calc_buffer_tensor_size

__version__ = "0.1.0"

__all__ = [
    "BufferBinding",
    "CompiledOperator",
    "DataType",
    "FeatureLevel",
    "FusedActivation",
    "ScalarUnion",
    "ScaleBias",
    "TensorDesc",
    "TensorFlags",
    "ValidationError",
    "Violation",
    "activation_elu",
    "activation_scaled_elu",
    "calc_buffer_tensor_size",
    "compile_operator",
    "element_wise_add",
    "element_wise_add1",
    "element_wise_clip",
    "element_wise_clip1",
    "element_wise_constant_pow",
    "element_wise_identity",
    "element_wise_if",
    "element_wise_logical_less_than",
    "element_wise_modulus_floor",
    "element_wise_multiply",
    "element_wise_threshold",
    "feature_level",
    "get_operator",
    "registry",
]
