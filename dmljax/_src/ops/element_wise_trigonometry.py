"""Element-wise trigonometric and hyperbolic functions (SIN, COS, TAN, their inverses, ATAN_YX,
SINH, COSH, TANH and their inverses), of the element_wise_math family: each page's record, with
its formula right below it."""

from __future__ import annotations
