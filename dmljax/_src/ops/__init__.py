"""Operator families, one module each. Importing this package registers every operator;
``OPERATORS`` maps each registered operator's Python name to its function."""

from dmljax._src.ops import (  # noqa: F401  (importing a family registers its operators)
    activation,
    element_wise_arithmetic,
    element_wise_bitwise,
    element_wise_logical,
    element_wise_math,
    element_wise_rounding,
    element_wise_trigonometry,
    value_scale,
)
from dmljax._src.registry import registry

OPERATORS = {op.__name__: op for op in registry().values()}
