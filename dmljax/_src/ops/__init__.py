"""Operator families, one module or more each, named after what they hold (the family of each
operator is its catalog entry's: element_wise_clamp.py and value_scale.py are parts of
element_wise_arithmetic; arg_extreme.py, cumulative.py, reduce.py and top_k.py of reduction;
gather.py, scatter.py and one_hot.py of indexing; cast.py, fold.py, join_split.py,
padding.py, sequences.py, slicing.py and space_depth.py of data_movement; generator.py of generator; gemm.py of matrix; resample.py of resample; convolution.py of convolution; training.py of training; normalization.py and normalization_batch.py of normalization; pooling.py, pooling_average.py and roi.py of pooling). Importing this package registers
every operator; ``OPERATORS`` maps each registered operator's Python names (its aliases' too) to its function."""

from dmljax._src.ops import (  # noqa: F401  (importing a family registers its operators)
    activation,
    activation_gated,
    activation_smooth,
    activation_softmax,
    arg_extreme,
    cast,
    convolution,
    cumulative,
    element_wise_arithmetic,
    element_wise_bitwise,
    element_wise_clamp,
    element_wise_logical,
    element_wise_math,
    element_wise_rounding,
    element_wise_trigonometry,
    fold,
    gather,
    gemm,
    generator,
    join_split,
    normalization,
    normalization_batch,
    one_hot,
    padding,
    pooling,
    pooling_average,
    reduce,
    resample,
    roi,
    scatter,
    sequences,
    slicing,
    space_depth,
    top_k,
    training,
    value_scale,
)
from dmljax._src.registry import registry

OPERATORS = {op.__name__: op for op in registry().values()}
OPERATORS.update({alias.lower(): op for op in registry().values() for alias in op.spec.entry.aliases})
"""Each operator under its Python name, and under its DirectML aliases' (``scatter``, the
alias of ``scatter_elements``): the same function."""
