"""The float64 reference for DML_OPERATOR_VALUE_SCALE_2D, transcribed from its page
(dml_value_scale_2d_operator_desc.md in ../shared/spec/operators/) and SEMANTICS.md; part of the
element_wise_arithmetic family's references."""

REFERENCES: dict = {}
