"""DirectML's operator catalog: every DML_OPERATOR_TYPE of DirectML.h at DML_TARGET_VERSION 0x6400
(177 operators, values 1 to 177), whether dmljax implements it or not.

Each row is (name without ``DML_OPERATOR_``, enum value, introducing feature level, family,
reference page, aliases). The introducing level is the ``#if DML_TARGET_VERSION`` block that
declares the enumerator (it agrees with the feature-level history; where a page's Availability
section disagrees, the header wins: TOP_K 1.0, MAX_UNPOOLING 2.0, SCATTER_ELEMENTS 2.0,
LOGICAL_LESS_THAN_OR_EQUAL 3.0). The family is dmljax's grouping: the module of ``dmljax/_src/ops``
an operator's record lives in, a ``*_GRAD`` operator beside its forward operator.

Each entry's ``known_names`` are the names it goes by in ONNX, PyTorch, JAX and WebNN
(known_names.py, the table beside this one).

This module is data: it imports nothing but the feature levels and that table.
"""

from __future__ import annotations

import dataclasses

from dmljax._src.feature_level import FeatureLevel
from dmljax._src.known_names import KNOWN_NAMES, KnownNames

__all__ = ["CatalogEntry", "CATALOG", "BY_NAME", "BY_VALUE", "FAMILIES", "PREFIX"]

PREFIX = "DML_OPERATOR_"

FAMILIES = (
    "element_wise_arithmetic", "element_wise_math", "element_wise_logical", "element_wise_bitwise",
    "activation", "reduction", "indexing", "data_movement", "generator", "matrix", "convolution",
    "pooling", "normalization", "resample", "quantization", "recurrent", "attention", "training",
)


@dataclasses.dataclass(frozen=True)
class CatalogEntry:
    """One DML_OPERATOR_TYPE enumerator."""

    short_name: str  # ``ELEMENT_WISE_IF``
    value: int
    introduced: FeatureLevel
    family: str
    page: str  # the reference page's file name
    aliases: tuple[str, ...] = ()  # other enumerator names with the same value (short form)
    implemented: bool = False  # set in the copies ``dmljax.catalog()`` returns

    @property
    def enum_name(self) -> str:
        """``DML_OPERATOR_ELEMENT_WISE_IF``."""
        return PREFIX + self.short_name

    @property
    def python_name(self) -> str:
        """``element_wise_if``: the function dmljax names the operator by."""
        return self.short_name.lower()

    @property
    def known_names(self) -> KnownNames:
        """The names the operator goes by in ONNX, PyTorch, JAX and WebNN (known_names.py)."""
        return KNOWN_NAMES[self.short_name]


_ROWS = (
    ('ELEMENT_WISE_IDENTITY', 1, '1.0', 'element_wise_arithmetic', 'dml_element_wise_identity_operator_desc.md', ()),
    ('ELEMENT_WISE_ABS', 2, '1.0', 'element_wise_arithmetic', 'dml_element_wise_abs_operator_desc.md', ()),
    ('ELEMENT_WISE_ACOS', 3, '1.0', 'element_wise_math', 'dml_element_wise_acos_operator_desc.md', ()),
    ('ELEMENT_WISE_ADD', 4, '1.0', 'element_wise_arithmetic', 'dml_element_wise_add_operator_desc.md', ()),
    ('ELEMENT_WISE_ASIN', 5, '1.0', 'element_wise_math', 'dml_element_wise_asin_operator_desc.md', ()),
    ('ELEMENT_WISE_ATAN', 6, '1.0', 'element_wise_math', 'dml_element_wise_atan_operator_desc.md', ()),
    ('ELEMENT_WISE_CEIL', 7, '1.0', 'element_wise_arithmetic', 'dml_element_wise_ceil_operator_desc.md', ()),
    ('ELEMENT_WISE_CLIP', 8, '1.0', 'element_wise_arithmetic', 'dml_element_wise_clip_operator_desc.md', ()),
    ('ELEMENT_WISE_COS', 9, '1.0', 'element_wise_math', 'dml_element_wise_cos_operator_desc.md', ()),
    ('ELEMENT_WISE_DIVIDE', 10, '1.0', 'element_wise_arithmetic', 'dml_element_wise_divide_operator_desc.md', ()),
    ('ELEMENT_WISE_EXP', 11, '1.0', 'element_wise_math', 'dml_element_wise_exp_operator_desc.md', ()),
    ('ELEMENT_WISE_FLOOR', 12, '1.0', 'element_wise_arithmetic', 'dml_element_wise_floor_operator_desc.md', ()),
    ('ELEMENT_WISE_LOG', 13, '1.0', 'element_wise_math', 'dml_element_wise_log_operator_desc.md', ()),
    ('ELEMENT_WISE_LOGICAL_AND', 14, '1.0', 'element_wise_logical', 'dml_element_wise_logical_and_operator_desc.md', ()),
    ('ELEMENT_WISE_LOGICAL_EQUALS', 15, '1.0', 'element_wise_logical', 'dml_element_wise_logical_equals_operator_desc.md', ()),
    ('ELEMENT_WISE_LOGICAL_GREATER_THAN', 16, '1.0', 'element_wise_logical', 'dml_element_wise_logical_greater_than_operator_desc.md', ()),
    ('ELEMENT_WISE_LOGICAL_LESS_THAN', 17, '1.0', 'element_wise_logical', 'dml_element_wise_logical_less_than_operator_desc.md', ()),
    ('ELEMENT_WISE_LOGICAL_NOT', 18, '1.0', 'element_wise_logical', 'dml_element_wise_logical_not_operator_desc.md', ()),
    ('ELEMENT_WISE_LOGICAL_OR', 19, '1.0', 'element_wise_logical', 'dml_element_wise_logical_or_operator_desc.md', ()),
    ('ELEMENT_WISE_LOGICAL_XOR', 20, '1.0', 'element_wise_logical', 'dml_element_wise_logical_xor_operator_desc.md', ()),
    ('ELEMENT_WISE_MAX', 21, '1.0', 'element_wise_arithmetic', 'dml_element_wise_max_operator_desc.md', ()),
    ('ELEMENT_WISE_MEAN', 22, '1.0', 'element_wise_arithmetic', 'dml_element_wise_mean_operator_desc.md', ()),
    ('ELEMENT_WISE_MIN', 23, '1.0', 'element_wise_arithmetic', 'dml_element_wise_min_operator_desc.md', ()),
    ('ELEMENT_WISE_MULTIPLY', 24, '1.0', 'element_wise_arithmetic', 'dml_element_wise_multiply_operator_desc.md', ()),
    ('ELEMENT_WISE_POW', 25, '1.0', 'element_wise_math', 'dml_element_wise_pow_operator_desc.md', ()),
    ('ELEMENT_WISE_CONSTANT_POW', 26, '1.0', 'element_wise_math', 'dml_element_wise_constant_pow_operator_desc.md', ()),
    ('ELEMENT_WISE_RECIP', 27, '1.0', 'element_wise_arithmetic', 'dml_element_wise_recip_operator_desc.md', ()),
    ('ELEMENT_WISE_SIN', 28, '1.0', 'element_wise_math', 'dml_element_wise_sin_operator_desc.md', ()),
    ('ELEMENT_WISE_SQRT', 29, '1.0', 'element_wise_math', 'dml_element_wise_sqrt_operator_desc.md', ()),
    ('ELEMENT_WISE_SUBTRACT', 30, '1.0', 'element_wise_arithmetic', 'dml_element_wise_subtract_operator_desc.md', ()),
    ('ELEMENT_WISE_TAN', 31, '1.0', 'element_wise_math', 'dml_element_wise_tan_operator_desc.md', ()),
    ('ELEMENT_WISE_THRESHOLD', 32, '1.0', 'element_wise_arithmetic', 'dml_element_wise_threshold_operator_desc.md', ()),
    ('ELEMENT_WISE_QUANTIZE_LINEAR', 33, '1.0', 'quantization', 'dml_element_wise_quantize_linear_operator_desc.md', ()),
    ('ELEMENT_WISE_DEQUANTIZE_LINEAR', 34, '1.0', 'quantization', 'dml_element_wise_dequantize_linear_operator_desc.md', ()),
    ('ACTIVATION_ELU', 35, '1.0', 'activation', 'dml_activation_elu_operator_desc.md', ()),
    ('ACTIVATION_HARDMAX', 36, '1.0', 'activation', 'dml_activation_hardmax_operator_desc.md', ()),
    ('ACTIVATION_HARD_SIGMOID', 37, '1.0', 'activation', 'dml_activation_hard_sigmoid_operator_desc.md', ()),
    ('ACTIVATION_IDENTITY', 38, '1.0', 'activation', 'dml_activation_identity_operator_desc.md', ()),
    ('ACTIVATION_LEAKY_RELU', 39, '1.0', 'activation', 'dml_activation_leaky_relu_operator_desc.md', ()),
    ('ACTIVATION_LINEAR', 40, '1.0', 'activation', 'dml_activation_linear_operator_desc.md', ()),
    ('ACTIVATION_LOG_SOFTMAX', 41, '1.0', 'activation', 'dml_activation_log_softmax_operator_desc.md', ()),
    ('ACTIVATION_PARAMETERIZED_RELU', 42, '1.0', 'activation', 'dml_activation_parameterized_relu_operator_desc.md', ()),
    ('ACTIVATION_PARAMETRIC_SOFTPLUS', 43, '1.0', 'activation', 'dml_activation_parametric_softplus_operator_desc.md', ()),
    ('ACTIVATION_RELU', 44, '1.0', 'activation', 'dml_activation_relu_operator_desc.md', ()),
    ('ACTIVATION_SCALED_ELU', 45, '1.0', 'activation', 'dml_activation_scaled_elu_operator_desc.md', ()),
    ('ACTIVATION_SCALED_TANH', 46, '1.0', 'activation', 'dml_activation_scaled_tanh_operator_desc.md', ()),
    ('ACTIVATION_SIGMOID', 47, '1.0', 'activation', 'dml_activation_sigmoid_operator_desc.md', ()),
    ('ACTIVATION_SOFTMAX', 48, '1.0', 'activation', 'dml_activation_softmax_operator_desc.md', ()),
    ('ACTIVATION_SOFTPLUS', 49, '1.0', 'activation', 'dml_activation_softplus_operator_desc.md', ()),
    ('ACTIVATION_SOFTSIGN', 50, '1.0', 'activation', 'dml_activation_softsign_operator_desc.md', ()),
    ('ACTIVATION_TANH', 51, '1.0', 'activation', 'dml_activation_tanh_operator_desc.md', ()),
    ('ACTIVATION_THRESHOLDED_RELU', 52, '1.0', 'activation', 'dml_activation_thresholded_relu_operator_desc.md', ()),
    ('CONVOLUTION', 53, '1.0', 'convolution', 'dml_convolution_operator_desc.md', ()),
    ('GEMM', 54, '1.0', 'matrix', 'dml_gemm_operator_desc.md', ()),
    ('REDUCE', 55, '1.0', 'reduction', 'dml_reduce_operator_desc.md', ()),
    ('AVERAGE_POOLING', 56, '1.0', 'pooling', 'dml_average_pooling_operator_desc.md', ()),
    ('LP_POOLING', 57, '1.0', 'pooling', 'dml_lp_pooling_operator_desc.md', ()),
    ('MAX_POOLING', 58, '1.0', 'pooling', 'dml_max_pooling_operator_desc.md', ()),
    ('ROI_POOLING', 59, '1.0', 'pooling', 'dml_roi_pooling_operator_desc.md', ()),
    ('SLICE', 60, '1.0', 'data_movement', 'dml_slice_operator_desc.md', ()),
    ('CAST', 61, '1.0', 'data_movement', 'dml_cast_operator_desc.md', ()),
    ('SPLIT', 62, '1.0', 'data_movement', 'dml_split_operator_desc.md', ()),
    ('JOIN', 63, '1.0', 'data_movement', 'dml_join_operator_desc.md', ()),
    ('PADDING', 64, '1.0', 'data_movement', 'dml_padding_operator_desc.md', ()),
    ('VALUE_SCALE_2D', 65, '1.0', 'element_wise_arithmetic', 'dml_value_scale_2d_operator_desc.md', ()),
    ('UPSAMPLE_2D', 66, '1.0', 'resample', 'dml_upsample_2d_operator_desc.md', ()),
    ('GATHER', 67, '1.0', 'indexing', 'dml_gather_operator_desc.md', ()),
    ('SPACE_TO_DEPTH', 68, '1.0', 'data_movement', 'dml_space_to_depth_operator_desc.md', ()),
    ('DEPTH_TO_SPACE', 69, '1.0', 'data_movement', 'dml_depth_to_space_operator_desc.md', ()),
    ('TILE', 70, '1.0', 'data_movement', 'dml_tile_operator_desc.md', ()),
    ('TOP_K', 71, '1.0', 'reduction', 'dml_top_k_operator_desc.md', ()),
    ('BATCH_NORMALIZATION', 72, '1.0', 'normalization', 'dml_batch_normalization_operator_desc.md', ()),
    ('MEAN_VARIANCE_NORMALIZATION', 73, '1.0', 'normalization', 'dml_mean_variance_normalization_operator_desc.md', ()),
    ('LOCAL_RESPONSE_NORMALIZATION', 74, '1.0', 'normalization', 'dml_local_response_normalization_operator_desc.md', ()),
    ('LP_NORMALIZATION', 75, '1.0', 'normalization', 'dml_lp_normalization_operator_desc.md', ()),
    ('RNN', 76, '1.0', 'recurrent', 'dml_rnn_operator_desc.md', ()),
    ('LSTM', 77, '1.0', 'recurrent', 'dml_lstm_operator_desc.md', ()),
    ('GRU', 78, '1.0', 'recurrent', 'dml_gru_operator_desc.md', ()),
    ('ELEMENT_WISE_SIGN', 79, '2.0', 'element_wise_arithmetic', 'dml_element_wise_sign_operator_desc.md', ()),
    ('ELEMENT_WISE_IS_NAN', 80, '2.0', 'element_wise_logical', 'dml_element_wise_is_nan_operator_desc.md', ()),
    ('ELEMENT_WISE_ERF', 81, '2.0', 'element_wise_math', 'dml_element_wise_erf_operator_desc.md', ()),
    ('ELEMENT_WISE_SINH', 82, '2.0', 'element_wise_math', 'dml_element_wise_sinh_operator_desc.md', ()),
    ('ELEMENT_WISE_COSH', 83, '2.0', 'element_wise_math', 'dml_element_wise_cosh_operator_desc.md', ()),
    ('ELEMENT_WISE_TANH', 84, '2.0', 'element_wise_math', 'dml_element_wise_tanh_operator_desc.md', ()),
    ('ELEMENT_WISE_ASINH', 85, '2.0', 'element_wise_math', 'dml_element_wise_asinh_operator_desc.md', ()),
    ('ELEMENT_WISE_ACOSH', 86, '2.0', 'element_wise_math', 'dml_element_wise_acosh_operator_desc.md', ()),
    ('ELEMENT_WISE_ATANH', 87, '2.0', 'element_wise_math', 'dml_element_wise_atanh_operator_desc.md', ()),
    ('ELEMENT_WISE_IF', 88, '2.0', 'element_wise_logical', 'dml_element_wise_if_operator_desc.md', ()),
    ('ELEMENT_WISE_ADD1', 89, '2.0', 'element_wise_arithmetic', 'dml_element_wise_add1_operator_desc.md', ()),
    ('ACTIVATION_SHRINK', 90, '2.0', 'activation', 'dml_activation_shrink_operator_desc.md', ()),
    ('MAX_POOLING1', 91, '2.0', 'pooling', 'dml_max_pooling1_operator_desc.md', ()),
    ('MAX_UNPOOLING', 92, '2.0', 'pooling', 'dml_max_unpooling_operator_desc.md', ()),
    ('DIAGONAL_MATRIX', 93, '2.0', 'generator', 'dml_diagonal_matrix_operator_desc.md', ()),
    ('SCATTER_ELEMENTS', 94, '2.0', 'indexing', 'dml_scatter_operator_desc.md', ('SCATTER',)),
    ('ONE_HOT', 95, '2.0', 'indexing', 'dml_one_hot_operator_desc.md', ()),
    ('RESAMPLE', 96, '2.0', 'resample', 'dml_resample_operator_desc.md', ()),
    ('ELEMENT_WISE_BIT_SHIFT_LEFT', 97, '2.1', 'element_wise_bitwise', 'dml_element_wise_bit_shift_left_operator_desc.md', ()),
    ('ELEMENT_WISE_BIT_SHIFT_RIGHT', 98, '2.1', 'element_wise_bitwise', 'dml_element_wise_bit_shift_right_operator_desc.md', ()),
    ('ELEMENT_WISE_ROUND', 99, '2.1', 'element_wise_arithmetic', 'dml_element_wise_round_operator_desc.md', ()),
    ('ELEMENT_WISE_IS_INFINITY', 100, '2.1', 'element_wise_logical', 'dml_element_wise_is_infinity_operator_desc.md', ()),
    ('ELEMENT_WISE_MODULUS_TRUNCATE', 101, '2.1', 'element_wise_arithmetic', 'dml_element_wise_modulus_truncate_operator_desc.md', ()),
    ('ELEMENT_WISE_MODULUS_FLOOR', 102, '2.1', 'element_wise_arithmetic', 'dml_element_wise_modulus_floor_operator_desc.md', ()),
    ('FILL_VALUE_CONSTANT', 103, '2.1', 'generator', 'dml_fill_value_constant_operator_desc.md', ()),
    ('FILL_VALUE_SEQUENCE', 104, '2.1', 'generator', 'dml_fill_value_sequence_operator_desc.md', ()),
    ('CUMULATIVE_SUMMATION', 105, '2.1', 'reduction', 'dml_cumulative_summation_operator_desc.md', ()),
    ('REVERSE_SUBSEQUENCES', 106, '2.1', 'data_movement', 'dml_reverse_subsequences_operator_desc.md', ()),
    ('GATHER_ELEMENTS', 107, '2.1', 'indexing', 'dml_gather_elements_operator_desc.md', ()),
    ('GATHER_ND', 108, '2.1', 'indexing', 'dml_gather_nd_operator_desc.md', ()),
    ('SCATTER_ND', 109, '2.1', 'indexing', 'dml_scatter_nd_operator_desc.md', ()),
    ('MAX_POOLING2', 110, '2.1', 'pooling', 'dml_max_pooling2_operator_desc.md', ()),
    ('SLICE1', 111, '2.1', 'data_movement', 'dml_slice1_operator_desc.md', ()),
    ('TOP_K1', 112, '2.1', 'reduction', 'dml_top_k1_operator_desc.md', ()),
    ('DEPTH_TO_SPACE1', 113, '2.1', 'data_movement', 'dml_depth_to_space1_operator_desc.md', ()),
    ('SPACE_TO_DEPTH1', 114, '2.1', 'data_movement', 'dml_space_to_depth1_operator_desc.md', ()),
    ('MEAN_VARIANCE_NORMALIZATION1', 115, '2.1', 'normalization', 'dml_mean_variance_normalization1_operator_desc.md', ()),
    ('RESAMPLE1', 116, '2.1', 'resample', 'dml_resample1_operator_desc.md', ()),
    ('MATRIX_MULTIPLY_INTEGER', 117, '2.1', 'matrix', 'dml_matrix_multiply_integer_operator_desc.md', ()),
    ('QUANTIZED_LINEAR_MATRIX_MULTIPLY', 118, '2.1', 'matrix', 'dml_quantized_linear_matrix_multiply_operator_desc.md', ()),
    ('CONVOLUTION_INTEGER', 119, '2.1', 'convolution', 'dml_convolution_integer_operator_desc.md', ()),
    ('QUANTIZED_LINEAR_CONVOLUTION', 120, '2.1', 'convolution', 'dml_quantized_linear_convolution_operator_desc.md', ()),
    ('ELEMENT_WISE_BIT_AND', 121, '3.0', 'element_wise_bitwise', 'dml_element_wise_bit_and_operator_desc.md', ()),
    ('ELEMENT_WISE_BIT_OR', 122, '3.0', 'element_wise_bitwise', 'dml_element_wise_bit_or_operator_desc.md', ()),
    ('ELEMENT_WISE_BIT_XOR', 123, '3.0', 'element_wise_bitwise', 'dml_element_wise_bit_xor_operator_desc.md', ()),
    ('ELEMENT_WISE_BIT_NOT', 124, '3.0', 'element_wise_bitwise', 'dml_element_wise_bit_not_operator_desc.md', ()),
    ('ELEMENT_WISE_BIT_COUNT', 125, '3.0', 'element_wise_bitwise', 'dml_element_wise_bit_count_operator_desc.md', ()),
    ('ELEMENT_WISE_LOGICAL_GREATER_THAN_OR_EQUAL', 126, '3.0', 'element_wise_logical', 'dml_element_wise_logical_greater_than_or_equal_operator_desc.md', ()),
    ('ELEMENT_WISE_LOGICAL_LESS_THAN_OR_EQUAL', 127, '3.0', 'element_wise_logical', 'dml_element_wise_logical_less_than_or_equal_operator_desc.md', ()),
    ('ACTIVATION_CELU', 128, '3.0', 'activation', 'dml_activation_celu_operator_desc.md', ()),
    ('ACTIVATION_RELU_GRAD', 129, '3.0', 'activation', 'dml_activation_relu_grad_operator_desc.md', ()),
    ('AVERAGE_POOLING_GRAD', 130, '3.0', 'pooling', 'dml_average_pooling_grad_operator_desc.md', ()),
    ('MAX_POOLING_GRAD', 131, '3.0', 'pooling', 'dml_max_pooling_grad_operator_desc.md', ()),
    ('RANDOM_GENERATOR', 132, '3.0', 'generator', 'dml_random_generator_operator_desc.md', ()),
    ('NONZERO_COORDINATES', 133, '3.0', 'indexing', 'dml_nonzero_coordinates_operator_desc.md', ()),
    ('RESAMPLE_GRAD', 134, '3.0', 'resample', 'dml_resample_grad_operator_desc.md', ()),
    ('SLICE_GRAD', 135, '3.0', 'data_movement', 'dml_slice_grad_operator_desc.md', ()),
    ('ADAM_OPTIMIZER', 136, '3.0', 'training', 'dml_adam_optimizer_operator_desc.md', ()),
    ('ARGMIN', 137, '3.0', 'reduction', 'dml_argmin_operator_desc.md', ()),
    ('ARGMAX', 138, '3.0', 'reduction', 'dml_argmax_operator_desc.md', ()),
    ('ROI_ALIGN', 139, '3.0', 'pooling', 'dml_roi_align_operator_desc.md', ()),
    ('GATHER_ND1', 140, '3.0', 'indexing', 'dml_gather_nd1_operator_desc.md', ()),
    ('ELEMENT_WISE_ATAN_YX', 141, '3.1', 'element_wise_math', 'dml_element_wise_atan_yx_operator_desc.md', ()),
    ('ELEMENT_WISE_CLIP_GRAD', 142, '3.1', 'element_wise_arithmetic', 'dml_element_wise_clip_grad_operator_desc.md', ()),
    ('ELEMENT_WISE_DIFFERENCE_SQUARE', 143, '3.1', 'element_wise_arithmetic', 'dml_element_wise_difference_square_operator_desc.md', ()),
    ('LOCAL_RESPONSE_NORMALIZATION_GRAD', 144, '3.1', 'normalization', 'dml_local_response_normalization_grad_operator_desc.md', ()),
    ('CUMULATIVE_PRODUCT', 145, '3.1', 'reduction', 'dml_cumulative_product_operator_desc.md', ()),
    ('BATCH_NORMALIZATION_GRAD', 146, '3.1', 'normalization', 'dml_batch_normalization_grad_operator_desc.md', ()),
    ('ELEMENT_WISE_QUANTIZED_LINEAR_ADD', 147, '4.0', 'quantization', 'dml_element_wise_quantized_linear_add_operator_desc.md', ()),
    ('DYNAMIC_QUANTIZE_LINEAR', 148, '4.0', 'quantization', 'dml_dynamic_quantize_linear_operator_desc.md', ()),
    ('ROI_ALIGN1', 149, '4.0', 'pooling', 'dml_roi_align1_operator_desc.md', ()),
    ('ROI_ALIGN_GRAD', 150, '4.1', 'pooling', 'dml_roi_align_grad_operator_desc.md', ()),
    ('BATCH_NORMALIZATION_TRAINING', 151, '4.1', 'normalization', 'dml_batch_normalization_training_operator_desc.md', ()),
    ('BATCH_NORMALIZATION_TRAINING_GRAD', 152, '4.1', 'normalization', 'dml_batch_normalization_training_grad_operator_desc.md', ()),
    ('ELEMENT_WISE_CLIP1', 153, '5.0', 'element_wise_arithmetic', 'dml_element_wise_clip1_operator_desc.md', ()),
    ('ELEMENT_WISE_CLIP_GRAD1', 154, '5.0', 'element_wise_arithmetic', 'dml_element_wise_clip_grad1_operator_desc.md', ()),
    ('PADDING1', 155, '5.0', 'data_movement', 'dml_padding1_operator_desc.md', ()),
    ('ELEMENT_WISE_NEGATE', 156, '5.0', 'element_wise_arithmetic', 'dml_element_wise_negate_operator_desc.md', ()),
    ('ACTIVATION_GELU', 157, '5.1', 'activation', 'dml_activation_gelu_operator_desc.md', ()),
    ('ACTIVATION_SOFTMAX1', 158, '5.1', 'activation', 'dml_activation_softmax1_operator_desc.md', ()),
    ('ACTIVATION_LOG_SOFTMAX1', 159, '5.1', 'activation', 'dml_activation_log_softmax1_operator_desc.md', ()),
    ('ACTIVATION_HARDMAX1', 160, '5.1', 'activation', 'dml_activation_hardmax1_operator_desc.md', ()),
    ('RESAMPLE2', 161, '5.1', 'resample', 'dml_resample2_operator_desc.md', ()),
    ('RESAMPLE_GRAD1', 162, '5.1', 'resample', 'dml_resample_grad1_operator_desc.md', ()),
    ('DIAGONAL_MATRIX1', 163, '5.1', 'generator', 'dml_diagonal_matrix1_operator_desc.md', ()),
    ('MULTIHEAD_ATTENTION', 164, '6.1', 'attention', 'dml_multihead_attention_operator_desc.md', ()),
    ('LP_POOLING1', 165, '6.2', 'pooling', 'dml_lp_pooling1_operator_desc.md', ()),
    ('AVERAGE_POOLING1', 166, '6.2', 'pooling', 'dml_average_pooling1_operator_desc.md', ()),
    ('ACTIVATION_SWISH', 167, '6.2', 'activation', 'dml_activation_swish_operator_desc.md', ()),
    ('ACTIVATION_HARD_SWISH', 168, '6.2', 'activation', 'dml_activation_hard_swish_operator_desc.md', ()),
    ('QUANTIZED_LINEAR_AVERAGE_POOLING', 169, '6.2', 'pooling', 'dml_quantized_linear_average_pooling_operator_desc.md', ()),
    ('MATRIX_MULTIPLY_INTEGER_TO_FLOAT', 170, '6.2', 'matrix', 'dml_matrix_multiply_integer_to_float_operator_desc.md', ()),
    ('MEAN_VARIANCE_NORMALIZATION2', 171, '6.3', 'normalization', 'dml_mean_variance_normalization2_operator_desc.md', ()),
    ('MULTIHEAD_ATTENTION1', 172, '6.3', 'attention', 'dml_multihead_attention1_operator_desc.md', ()),
    ('QUANTIZE', 173, '6.3', 'quantization', 'dml_quantize_operator_desc.md', ()),
    ('DEQUANTIZE', 174, '6.3', 'quantization', 'dml_dequantize_operator_desc.md', ()),
    ('RESAMPLE3', 175, '6.4', 'resample', 'dml_resample3_operator_desc.md', ()),
    ('FOLD', 176, '6.4', 'data_movement', 'dml_fold_operator_desc.md', ()),
    ('UNFOLD', 177, '6.4', 'data_movement', 'dml_unfold_operator_desc.md', ()),
)

CATALOG: tuple[CatalogEntry, ...] = tuple(
    CatalogEntry(name, value, FeatureLevel.parse(level), family, page, aliases)
    for name, value, level, family, page, aliases in _ROWS
)
BY_NAME: dict[str, CatalogEntry] = {
    **{PREFIX + a: e for e in CATALOG for a in e.aliases},
    **{e.enum_name: e for e in CATALOG},
}
"""Every enumerator name (full form, aliases included) to its entry."""
BY_VALUE: dict[int, CatalogEntry] = {e.value: e for e in CATALOG}

assert len(CATALOG) == 177 and sorted(BY_VALUE) == list(range(1, 178))
assert all(e.family in FAMILIES for e in CATALOG)
assert list(KNOWN_NAMES) == [e.short_name for e in CATALOG]
