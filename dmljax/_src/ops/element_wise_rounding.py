"""Element-wise sign and rounding operators (ABS, SIGN, CEIL, FLOOR, ROUND), of the
element_wise_arithmetic family: each page's record, with its formula right below it."""

from __future__ import annotations
