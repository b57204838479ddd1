"""float64 references for the element-wise sign and rounding operators (ABS, SIGN, CEIL, FLOOR,
ROUND), transcribed from the pages (dml_element_wise_*_operator_desc.md in
../shared/spec/operators/) and SEMANTICS.md; part of the element_wise_arithmetic family's
references."""

REFERENCES: dict = {}
