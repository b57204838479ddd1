"""The names each DirectML operator goes by elsewhere: in ONNX (ai.onnx operator types), PyTorch,
JAX (jax.numpy, jax.nn, jax.lax) and WebNN (MLGraphBuilder methods).

One row per DML_OPERATOR_TYPE, in enum-value order: (name without ``DML_OPERATOR_``, ONNX, PyTorch,
JAX, WebNN), each a space-separated list, empty where the framework has no operator that DirectML's
computes. A name means "the operator a converter or a port would map this one to", not "the same
defaults": ``jax.nn.gelu`` approximates with tanh by default and ACTIVATION_GELU does not. Where a
framework's operator maps to several DirectML operators (ONNX Softmax to ACTIVATION_SOFTMAX before
opset 13 and ACTIVATION_SOFTMAX1 from it) each row lists it. ``dmljax ops NAME`` and
``dmljax.get_operator`` search these names (registry.find_operators); docs/operators.md shows them.

This module is data: it imports nothing.
"""

from __future__ import annotations

import dataclasses

__all__ = ["KnownNames", "KNOWN_NAMES", "FRAMEWORKS"]

FRAMEWORKS = ("ONNX", "PyTorch", "JAX", "WebNN")


@dataclasses.dataclass(frozen=True)
class KnownNames:
    """What one DirectML operator is called in each framework (empty tuples where it has none)."""

    onnx: tuple[str, ...] = ()
    pytorch: tuple[str, ...] = ()
    jax: tuple[str, ...] = ()
    webnn: tuple[str, ...] = ()

    def by_framework(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        """(framework, names) for each framework with at least one name, in FRAMEWORKS' order."""
        return tuple((f, n) for f, n in zip(FRAMEWORKS, (self.onnx, self.pytorch, self.jax, self.webnn)) if n)

    def __iter__(self):
        """Every name, framework by framework."""
        return iter(self.onnx + self.pytorch + self.jax + self.webnn)


_ROWS = (
    ('ELEMENT_WISE_IDENTITY', 'Identity', 'torch.clone', 'jax.numpy.copy', 'identity'),
    ('ELEMENT_WISE_ABS', 'Abs', 'torch.abs', 'jax.numpy.abs', 'abs'),
    ('ELEMENT_WISE_ACOS', 'Acos', 'torch.acos', 'jax.numpy.arccos', ''),
    ('ELEMENT_WISE_ADD', 'Add', 'torch.add', 'jax.numpy.add', 'add'),
    ('ELEMENT_WISE_ASIN', 'Asin', 'torch.asin', 'jax.numpy.arcsin', ''),
    ('ELEMENT_WISE_ATAN', 'Atan', 'torch.atan', 'jax.numpy.arctan', ''),
    ('ELEMENT_WISE_CEIL', 'Ceil', 'torch.ceil', 'jax.numpy.ceil', 'ceil'),
    ('ELEMENT_WISE_CLIP', 'Clip', 'torch.clamp torch.clip', 'jax.numpy.clip', 'clamp'),
    ('ELEMENT_WISE_COS', 'Cos', 'torch.cos', 'jax.numpy.cos', 'cos'),
    ('ELEMENT_WISE_DIVIDE', 'Div', 'torch.div', 'jax.numpy.divide', 'div'),
    ('ELEMENT_WISE_EXP', 'Exp', 'torch.exp', 'jax.numpy.exp', 'exp'),
    ('ELEMENT_WISE_FLOOR', 'Floor', 'torch.floor', 'jax.numpy.floor', 'floor'),
    ('ELEMENT_WISE_LOG', 'Log', 'torch.log', 'jax.numpy.log', 'log'),
    ('ELEMENT_WISE_LOGICAL_AND', 'And', 'torch.logical_and', 'jax.numpy.logical_and', 'logicalAnd'),
    ('ELEMENT_WISE_LOGICAL_EQUALS', 'Equal', 'torch.eq', 'jax.numpy.equal', 'equal'),
    ('ELEMENT_WISE_LOGICAL_GREATER_THAN', 'Greater', 'torch.gt', 'jax.numpy.greater', 'greater'),
    ('ELEMENT_WISE_LOGICAL_LESS_THAN', 'Less', 'torch.lt', 'jax.numpy.less', 'lesser'),
    ('ELEMENT_WISE_LOGICAL_NOT', 'Not', 'torch.logical_not', 'jax.numpy.logical_not', 'logicalNot'),
    ('ELEMENT_WISE_LOGICAL_OR', 'Or', 'torch.logical_or', 'jax.numpy.logical_or', 'logicalOr'),
    ('ELEMENT_WISE_LOGICAL_XOR', 'Xor', 'torch.logical_xor', 'jax.numpy.logical_xor', 'logicalXor'),
    ('ELEMENT_WISE_MAX', 'Max', 'torch.fmax torch.maximum', 'jax.numpy.fmax jax.numpy.maximum', 'max'),
    ('ELEMENT_WISE_MEAN', 'Mean', '', '', ''),
    ('ELEMENT_WISE_MIN', 'Min', 'torch.fmin torch.minimum', 'jax.numpy.fmin jax.numpy.minimum', 'min'),
    ('ELEMENT_WISE_MULTIPLY', 'Mul', 'torch.mul', 'jax.numpy.multiply', 'mul'),
    ('ELEMENT_WISE_POW', 'Pow', 'torch.pow', 'jax.numpy.power', 'pow'),
    ('ELEMENT_WISE_CONSTANT_POW', '', '', 'jax.lax.integer_pow', ''),
    ('ELEMENT_WISE_RECIP', 'Reciprocal', 'torch.reciprocal', 'jax.numpy.reciprocal', 'reciprocal'),
    ('ELEMENT_WISE_SIN', 'Sin', 'torch.sin', 'jax.numpy.sin', 'sin'),
    ('ELEMENT_WISE_SQRT', 'Sqrt', 'torch.sqrt', 'jax.numpy.sqrt', 'sqrt'),
    ('ELEMENT_WISE_SUBTRACT', 'Sub', 'torch.sub', 'jax.numpy.subtract', 'sub'),
    ('ELEMENT_WISE_TAN', 'Tan', 'torch.tan', 'jax.numpy.tan', 'tan'),
    ('ELEMENT_WISE_THRESHOLD', '', '', '', ''),
    ('ELEMENT_WISE_QUANTIZE_LINEAR', 'QuantizeLinear', 'torch.quantize_per_tensor', '', 'quantizeLinear'),
    ('ELEMENT_WISE_DEQUANTIZE_LINEAR', 'DequantizeLinear', 'torch.dequantize', '', 'dequantizeLinear'),
    ('ACTIVATION_ELU', 'Elu', 'torch.nn.functional.elu', 'jax.nn.elu', 'elu'),
    ('ACTIVATION_HARDMAX', 'Hardmax', '', '', ''),
    ('ACTIVATION_HARD_SIGMOID', 'HardSigmoid', 'torch.nn.functional.hardsigmoid', 'jax.nn.hard_sigmoid', 'hardSigmoid'),
    ('ACTIVATION_IDENTITY', 'Identity', 'torch.nn.Identity', '', 'identity'),
    ('ACTIVATION_LEAKY_RELU', 'LeakyRelu', 'torch.nn.functional.leaky_relu', 'jax.nn.leaky_relu', 'leakyRelu'),
    ('ACTIVATION_LINEAR', '', '', '', 'linear'),
    ('ACTIVATION_LOG_SOFTMAX', 'LogSoftmax', '', '', ''),
    ('ACTIVATION_PARAMETERIZED_RELU', 'PRelu', 'torch.nn.functional.prelu', '', 'prelu'),
    ('ACTIVATION_PARAMETRIC_SOFTPLUS', '', '', '', ''),
    ('ACTIVATION_RELU', 'Relu', 'torch.relu torch.nn.functional.relu', 'jax.nn.relu', 'relu'),
    ('ACTIVATION_SCALED_ELU', 'Selu', 'torch.nn.functional.selu', 'jax.nn.selu', ''),
    ('ACTIVATION_SCALED_TANH', '', '', '', ''),
    ('ACTIVATION_SIGMOID', 'Sigmoid', 'torch.sigmoid', 'jax.nn.sigmoid', 'sigmoid'),
    ('ACTIVATION_SOFTMAX', 'Softmax', '', '', ''),
    ('ACTIVATION_SOFTPLUS', 'Softplus', 'torch.nn.functional.softplus', 'jax.nn.softplus', 'softplus'),
    ('ACTIVATION_SOFTSIGN', 'Softsign', 'torch.nn.functional.softsign', 'jax.nn.soft_sign', 'softsign'),
    ('ACTIVATION_TANH', 'Tanh', 'torch.tanh', 'jax.numpy.tanh', 'tanh'),
    ('ACTIVATION_THRESHOLDED_RELU', 'ThresholdedRelu', '', '', ''),
    ('CONVOLUTION', 'Conv ConvTranspose', 'torch.nn.functional.conv1d torch.nn.functional.conv2d torch.nn.functional.conv3d torch.nn.functional.conv_transpose1d torch.nn.functional.conv_transpose2d torch.nn.functional.conv_transpose3d', 'jax.lax.conv_general_dilated jax.lax.conv_transpose', 'conv2d convTranspose2d'),
    ('GEMM', 'Gemm MatMul', 'torch.matmul torch.mm torch.bmm torch.addmm torch.nn.functional.linear torch.nn.Linear', 'jax.numpy.matmul jax.numpy.dot', 'gemm matmul'),
    ('REDUCE', 'ReduceSum ReduceMean ReduceMax ReduceMin ReduceProd ReduceL1 ReduceL2 ReduceLogSum ReduceLogSumExp ReduceSumSquare', 'torch.sum torch.mean torch.amax torch.amin torch.prod torch.logsumexp torch.linalg.vector_norm', 'jax.numpy.sum jax.numpy.mean jax.numpy.max jax.numpy.min jax.numpy.prod jax.nn.logsumexp', 'reduceSum reduceMean reduceMax reduceMin reduceProduct reduceL1 reduceL2 reduceLogSum reduceLogSumExp reduceSumSquare'),
    ('AVERAGE_POOLING', 'AveragePool GlobalAveragePool', 'torch.nn.functional.avg_pool1d torch.nn.functional.avg_pool2d torch.nn.functional.avg_pool3d', '', 'averagePool2d'),
    ('LP_POOLING', 'LpPool GlobalLpPool', 'torch.nn.functional.lp_pool1d torch.nn.functional.lp_pool2d', '', 'l2Pool2d'),
    ('MAX_POOLING', 'MaxPool GlobalMaxPool', 'torch.nn.functional.max_pool1d torch.nn.functional.max_pool2d torch.nn.functional.max_pool3d', '', 'maxPool2d'),
    ('ROI_POOLING', 'MaxRoiPool', 'torchvision.ops.roi_pool', '', ''),
    ('SLICE', 'Slice', 'torch.narrow', 'jax.lax.slice', 'slice'),
    ('CAST', 'Cast', 'torch.Tensor.to', 'jax.numpy.astype', 'cast'),
    ('SPLIT', 'Split', 'torch.split', 'jax.numpy.split', 'split'),
    ('JOIN', 'Concat', 'torch.cat', 'jax.numpy.concatenate', 'concat'),
    ('PADDING', 'Pad', 'torch.nn.functional.pad', 'jax.numpy.pad', 'pad'),
    ('VALUE_SCALE_2D', '', '', '', ''),
    ('UPSAMPLE_2D', 'Upsample', 'torch.nn.Upsample', '', 'resample2d'),
    ('GATHER', 'Gather', 'torch.index_select torch.nn.functional.embedding torch.nn.Embedding', 'jax.numpy.take', 'gather'),
    ('SPACE_TO_DEPTH', 'SpaceToDepth', 'torch.nn.functional.pixel_unshuffle', '', ''),
    ('DEPTH_TO_SPACE', 'DepthToSpace', 'torch.nn.functional.pixel_shuffle', '', ''),
    ('TILE', 'Tile', 'torch.tile', 'jax.numpy.tile', 'tile'),
    ('TOP_K', 'TopK', 'torch.topk', 'jax.lax.top_k', ''),
    ('BATCH_NORMALIZATION', 'BatchNormalization', 'torch.nn.functional.batch_norm torch.nn.BatchNorm2d', '', 'batchNormalization'),
    ('MEAN_VARIANCE_NORMALIZATION', 'MeanVarianceNormalization InstanceNormalization', 'torch.nn.functional.instance_norm', '', 'instanceNormalization'),
    ('LOCAL_RESPONSE_NORMALIZATION', 'LRN', 'torch.nn.functional.local_response_norm', '', ''),
    ('LP_NORMALIZATION', 'LpNormalization', 'torch.nn.functional.normalize', '', ''),
    ('RNN', 'RNN', 'torch.nn.RNN', '', ''),
    ('LSTM', 'LSTM', 'torch.nn.LSTM', '', 'lstm lstmCell'),
    ('GRU', 'GRU', 'torch.nn.GRU', '', 'gru gruCell'),
    ('ELEMENT_WISE_SIGN', 'Sign', 'torch.sign', 'jax.numpy.sign', 'sign'),
    ('ELEMENT_WISE_IS_NAN', 'IsNaN', 'torch.isnan', 'jax.numpy.isnan', 'isNaN'),
    ('ELEMENT_WISE_ERF', 'Erf', 'torch.erf', 'jax.scipy.special.erf', 'erf'),
    ('ELEMENT_WISE_SINH', 'Sinh', 'torch.sinh', 'jax.numpy.sinh', ''),
    ('ELEMENT_WISE_COSH', 'Cosh', 'torch.cosh', 'jax.numpy.cosh', ''),
    ('ELEMENT_WISE_TANH', 'Tanh', 'torch.tanh', 'jax.numpy.tanh', 'tanh'),
    ('ELEMENT_WISE_ASINH', 'Asinh', 'torch.asinh', 'jax.numpy.arcsinh', ''),
    ('ELEMENT_WISE_ACOSH', 'Acosh', 'torch.acosh', 'jax.numpy.arccosh', ''),
    ('ELEMENT_WISE_ATANH', 'Atanh', 'torch.atanh', 'jax.numpy.arctanh', ''),
    ('ELEMENT_WISE_IF', 'Where', 'torch.where', 'jax.numpy.where', 'where'),
    ('ELEMENT_WISE_ADD1', 'Add', '', '', ''),
    ('ACTIVATION_SHRINK', 'Shrink', 'torch.nn.functional.hardshrink torch.nn.functional.softshrink', '', ''),
    ('MAX_POOLING1', 'MaxPool', 'torch.nn.functional.max_pool2d', '', 'maxPool2d'),
    ('MAX_UNPOOLING', 'MaxUnpool', 'torch.nn.functional.max_unpool2d', '', ''),
    ('DIAGONAL_MATRIX', 'EyeLike', 'torch.eye', 'jax.numpy.eye', ''),
    ('SCATTER_ELEMENTS', 'ScatterElements Scatter', 'torch.scatter', '', 'scatterElements'),
    ('ONE_HOT', 'OneHot', 'torch.nn.functional.one_hot', 'jax.nn.one_hot', ''),
    ('RESAMPLE', 'Resize Upsample', 'torch.nn.functional.interpolate', 'jax.image.resize', 'resample2d'),
    ('ELEMENT_WISE_BIT_SHIFT_LEFT', 'BitShift', 'torch.bitwise_left_shift', 'jax.numpy.left_shift', ''),
    ('ELEMENT_WISE_BIT_SHIFT_RIGHT', 'BitShift', 'torch.bitwise_right_shift', 'jax.numpy.right_shift', ''),
    ('ELEMENT_WISE_ROUND', 'Round', 'torch.round', 'jax.numpy.round', 'roundEven'),
    ('ELEMENT_WISE_IS_INFINITY', 'IsInf', 'torch.isinf', 'jax.numpy.isinf', 'isInfinite'),
    ('ELEMENT_WISE_MODULUS_TRUNCATE', 'Mod', 'torch.fmod', 'jax.numpy.fmod', ''),
    ('ELEMENT_WISE_MODULUS_FLOOR', 'Mod', 'torch.remainder', 'jax.numpy.remainder jax.numpy.mod', ''),
    ('FILL_VALUE_CONSTANT', 'ConstantOfShape', 'torch.full', 'jax.numpy.full', ''),
    ('FILL_VALUE_SEQUENCE', 'Range', 'torch.arange', 'jax.numpy.arange', ''),
    ('CUMULATIVE_SUMMATION', 'CumSum', 'torch.cumsum', 'jax.numpy.cumsum', 'cumulativeSum'),
    ('REVERSE_SUBSEQUENCES', 'ReverseSequence', '', '', ''),
    ('GATHER_ELEMENTS', 'GatherElements', 'torch.gather', 'jax.numpy.take_along_axis', 'gatherElements'),
    ('GATHER_ND', 'GatherND', '', '', 'gatherND'),
    ('SCATTER_ND', 'ScatterND', '', '', 'scatterND'),
    ('MAX_POOLING2', 'MaxPool', 'torch.nn.functional.max_pool2d', '', 'maxPool2d'),
    ('SLICE1', 'Slice', 'torch.narrow', 'jax.lax.slice', 'slice'),
    ('TOP_K1', 'TopK', 'torch.topk', 'jax.lax.top_k', ''),
    ('DEPTH_TO_SPACE1', 'DepthToSpace', 'torch.nn.functional.pixel_shuffle', '', ''),
    ('SPACE_TO_DEPTH1', 'SpaceToDepth', 'torch.nn.functional.pixel_unshuffle', '', ''),
    ('MEAN_VARIANCE_NORMALIZATION1', 'MeanVarianceNormalization InstanceNormalization LayerNormalization GroupNormalization', 'torch.nn.functional.layer_norm torch.nn.LayerNorm torch.nn.functional.instance_norm torch.nn.functional.group_norm', 'jax.nn.standardize', 'layerNormalization instanceNormalization'),
    ('RESAMPLE1', 'Resize', 'torch.nn.functional.interpolate', 'jax.image.resize', 'resample2d'),
    ('MATRIX_MULTIPLY_INTEGER', 'MatMulInteger', '', '', ''),
    ('QUANTIZED_LINEAR_MATRIX_MULTIPLY', 'QLinearMatMul', '', '', ''),
    ('CONVOLUTION_INTEGER', 'ConvInteger', '', '', ''),
    ('QUANTIZED_LINEAR_CONVOLUTION', 'QLinearConv', '', '', ''),
    ('ELEMENT_WISE_BIT_AND', 'BitwiseAnd', 'torch.bitwise_and', 'jax.numpy.bitwise_and', ''),
    ('ELEMENT_WISE_BIT_OR', 'BitwiseOr', 'torch.bitwise_or', 'jax.numpy.bitwise_or', ''),
    ('ELEMENT_WISE_BIT_XOR', 'BitwiseXor', 'torch.bitwise_xor', 'jax.numpy.bitwise_xor', ''),
    ('ELEMENT_WISE_BIT_NOT', 'BitwiseNot', 'torch.bitwise_not', 'jax.numpy.bitwise_not', ''),
    ('ELEMENT_WISE_BIT_COUNT', '', '', 'jax.lax.population_count', ''),
    ('ELEMENT_WISE_LOGICAL_GREATER_THAN_OR_EQUAL', 'GreaterOrEqual', 'torch.ge', 'jax.numpy.greater_equal', 'greaterOrEqual'),
    ('ELEMENT_WISE_LOGICAL_LESS_THAN_OR_EQUAL', 'LessOrEqual', 'torch.le', 'jax.numpy.less_equal', 'lesserOrEqual'),
    ('ACTIVATION_CELU', 'Celu', 'torch.nn.functional.celu', 'jax.nn.celu', ''),
    ('ACTIVATION_RELU_GRAD', '', '', '', ''),
    ('AVERAGE_POOLING_GRAD', '', '', '', ''),
    ('MAX_POOLING_GRAD', '', '', '', ''),
    ('RANDOM_GENERATOR', '', '', 'jax.random.bits', ''),
    ('NONZERO_COORDINATES', 'NonZero', 'torch.nonzero', 'jax.numpy.nonzero', ''),
    ('RESAMPLE_GRAD', '', '', '', ''),
    ('SLICE_GRAD', '', '', '', ''),
    ('ADAM_OPTIMIZER', '', 'torch.optim.Adam', '', ''),
    ('ARGMIN', 'ArgMin', 'torch.argmin', 'jax.numpy.argmin', 'argMin'),
    ('ARGMAX', 'ArgMax', 'torch.argmax', 'jax.numpy.argmax', 'argMax'),
    ('ROI_ALIGN', 'RoiAlign', 'torchvision.ops.roi_align', '', ''),
    ('GATHER_ND1', 'GatherND', '', '', 'gatherND'),
    ('ELEMENT_WISE_ATAN_YX', '', 'torch.atan2', 'jax.numpy.arctan2', ''),
    ('ELEMENT_WISE_CLIP_GRAD', '', '', '', ''),
    ('ELEMENT_WISE_DIFFERENCE_SQUARE', '', '', '', ''),
    ('LOCAL_RESPONSE_NORMALIZATION_GRAD', '', '', '', ''),
    ('CUMULATIVE_PRODUCT', '', 'torch.cumprod', 'jax.numpy.cumprod', ''),
    ('BATCH_NORMALIZATION_GRAD', '', '', '', ''),
    ('ELEMENT_WISE_QUANTIZED_LINEAR_ADD', '', '', '', ''),
    ('DYNAMIC_QUANTIZE_LINEAR', 'DynamicQuantizeLinear', '', '', ''),
    ('ROI_ALIGN1', 'RoiAlign', 'torchvision.ops.roi_align', '', ''),
    ('ROI_ALIGN_GRAD', '', '', '', ''),
    ('BATCH_NORMALIZATION_TRAINING', 'BatchNormalization', 'torch.nn.functional.batch_norm', '', ''),
    ('BATCH_NORMALIZATION_TRAINING_GRAD', '', '', '', ''),
    ('ELEMENT_WISE_CLIP1', 'Clip', 'torch.clamp torch.clip', 'jax.numpy.clip', 'clamp'),
    ('ELEMENT_WISE_CLIP_GRAD1', '', '', '', ''),
    ('PADDING1', 'Pad', 'torch.nn.functional.pad', 'jax.numpy.pad', 'pad'),
    ('ELEMENT_WISE_NEGATE', 'Neg', 'torch.neg', 'jax.numpy.negative', 'neg'),
    ('ACTIVATION_GELU', 'Gelu', 'torch.nn.functional.gelu', 'jax.nn.gelu', 'gelu'),
    ('ACTIVATION_SOFTMAX1', 'Softmax', 'torch.softmax torch.nn.functional.softmax', 'jax.nn.softmax', 'softmax'),
    ('ACTIVATION_LOG_SOFTMAX1', 'LogSoftmax', 'torch.log_softmax torch.nn.functional.log_softmax', 'jax.nn.log_softmax', ''),
    ('ACTIVATION_HARDMAX1', 'Hardmax', '', '', ''),
    ('RESAMPLE2', 'Resize', 'torch.nn.functional.interpolate', 'jax.image.resize', 'resample2d'),
    ('RESAMPLE_GRAD1', '', '', '', ''),
    ('DIAGONAL_MATRIX1', 'EyeLike', 'torch.eye', 'jax.numpy.eye', ''),
    ('MULTIHEAD_ATTENTION', 'Attention', 'torch.nn.functional.scaled_dot_product_attention torch.nn.MultiheadAttention', 'jax.nn.dot_product_attention', ''),
    ('LP_POOLING1', 'LpPool GlobalLpPool', 'torch.nn.functional.lp_pool1d torch.nn.functional.lp_pool2d', '', 'l2Pool2d'),
    ('AVERAGE_POOLING1', 'AveragePool GlobalAveragePool', 'torch.nn.functional.avg_pool1d torch.nn.functional.avg_pool2d torch.nn.functional.avg_pool3d', '', 'averagePool2d'),
    ('ACTIVATION_SWISH', '', 'torch.nn.functional.silu', 'jax.nn.silu jax.nn.swish', ''),
    ('ACTIVATION_HARD_SWISH', 'HardSwish', 'torch.nn.functional.hardswish', 'jax.nn.hard_swish', 'hardSwish'),
    ('QUANTIZED_LINEAR_AVERAGE_POOLING', '', '', '', ''),
    ('MATRIX_MULTIPLY_INTEGER_TO_FLOAT', '', '', '', ''),
    ('MEAN_VARIANCE_NORMALIZATION2', 'MeanVarianceNormalization InstanceNormalization LayerNormalization GroupNormalization RMSNormalization', 'torch.nn.functional.layer_norm torch.nn.LayerNorm torch.nn.functional.instance_norm torch.nn.functional.group_norm torch.nn.functional.rms_norm', 'jax.nn.standardize', 'layerNormalization instanceNormalization'),
    ('MULTIHEAD_ATTENTION1', 'Attention', 'torch.nn.functional.scaled_dot_product_attention', 'jax.nn.dot_product_attention', ''),
    ('QUANTIZE', 'QuantizeLinear', '', '', 'quantizeLinear'),
    ('DEQUANTIZE', 'DequantizeLinear', '', '', 'dequantizeLinear'),
    ('RESAMPLE3', 'Resize', 'torch.nn.functional.interpolate', 'jax.image.resize', 'resample2d'),
    ('FOLD', 'Col2Im', 'torch.nn.functional.fold', '', ''),
    ('UNFOLD', '', 'torch.nn.functional.unfold', '', ''),
)

KNOWN_NAMES: dict[str, KnownNames] = {
    short: KnownNames(*(tuple(column.split()) for column in columns)) for short, *columns in _ROWS
}
"""Short operator name (``GEMM``) to the names it goes by elsewhere."""
