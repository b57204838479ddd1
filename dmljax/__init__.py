"""dmljax: DirectML's operators as differentiable, jitted JAX functions, with DirectML's
documented semantics.

Every implemented operator is exported under its Python name (``dmljax.element_wise_add``);
the list follows from the registry (``dmljax.registry()``), so an operator declared in
``dmljax/_src/ops/<family>/`` is exported without being named here.
"""

from dmljax._src.buffers import BufferBinding
from dmljax._src.catalog import CatalogEntry
from dmljax._src.compile import CompiledOperator, compile_operator
from dmljax._src.dtypes import DataType
from dmljax._src.enums import (
    AxisDirection,
    ConvolutionDirection,
    ConvolutionMode,
    DepthSpaceOrder,
    InterpolationMode,
    IsInfinityMode,
    MatrixTransform,
    MultiheadAttentionMaskType,
    PaddingMode,
    QuantizationType,
    RandomGeneratorType,
    RecurrentNetworkDirection,
    ReduceFunction,
    RoundingMode,
)
from dmljax._src.errors import OperatorNotImplementedError, UnknownOperatorError, ValidationError, Violation
from dmljax._src.feature_level import FeatureLevel, feature_level
from dmljax._src.fused import FusedActivation
from dmljax._src.kernel_seam import packed_memory, use_kernels
from dmljax._src.ops import OPERATORS as _OPERATORS
from dmljax._src.ops.quantization.dequantize_gemm import dequantize_gemm
from dmljax._src.ops.quantization.fake_quantization import quantize_dequantize
from dmljax._src.registry import OperatorMatch, canonical_name, catalog, find_operators, get_operator, registry
from dmljax._src.structs import ScalarUnion, ScaleBias, Size2D
from dmljax._src.tensor_desc import TensorDesc, TensorFlags, calc_buffer_tensor_size
from dmljax._src.version import __version__

globals().update(_OPERATORS)

_CORE = [
    "AxisDirection",
    "BufferBinding",
    "CatalogEntry",
    "CompiledOperator",
    "ConvolutionDirection",
    "ConvolutionMode",
    "DataType",
    "DepthSpaceOrder",
    "FeatureLevel",
    "FusedActivation",
    "InterpolationMode",
    "IsInfinityMode",
    "MatrixTransform",
    "MultiheadAttentionMaskType",
    "OperatorMatch",
    "OperatorNotImplementedError",
    "PaddingMode",
    "QuantizationType",
    "RandomGeneratorType",
    "RecurrentNetworkDirection",
    "ReduceFunction",
    "RoundingMode",
    "ScalarUnion",
    "ScaleBias",
    "Size2D",
    "TensorDesc",
    "TensorFlags",
    "UnknownOperatorError",
    "ValidationError",
    "Violation",
    "__version__",
    "calc_buffer_tensor_size",
    "canonical_name",
    "catalog",
    "compile_operator",
    "dequantize_gemm",
    "feature_level",
    "find_operators",
    "get_operator",
    "packed_memory",
    "quantize_dequantize",
    "registry",
    "use_kernels",
]
__all__ = sorted([*_CORE, *_OPERATORS])
