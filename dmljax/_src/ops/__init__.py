"""Operator families, one module or more each (a family's parts: element_wise_clamp.py,
element_wise_rounding.py, value_scale.py of element_wise_arithmetic; element_wise_trigonometry.py of
element_wise_math; activation_gated.py, activation_smooth.py, activation_softmax.py of activation). Importing this package registers every operator;
``OPERATORS`` maps each registered operator's Python name to its function."""

from dmljax._src.ops import (  # noqa: F401  (importing a family registers its operators)
    activation,
    activation_gated,
    activation_smooth,
    activation_softmax,
    arg_extreme,
    cumulative,
    element_wise_arithmetic,
    element_wise_bitwise,
    element_wise_clamp,
    element_wise_logical,
    element_wise_math,
    element_wise_rounding,
    element_wise_trigonometry,
    value_scale,
)
from dmljax._src.registry import registry

OPERATORS = {op.__name__: op for op in registry().values()}
