"""float64/exact-integer references for the element-wise bitwise family, transcribed from the
pages (dml_element_wise_bit_*_operator_desc.md in ../shared/spec/operators/) and SEMANTICS.md."""

from tests.reference.record import Reference  # noqa: F401

REFERENCES: dict = {}
