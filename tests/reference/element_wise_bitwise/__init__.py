"""float64 references of the element_wise_bitwise family: one module per module of
dmljax/_src/ops/element_wise_bitwise/, of the same name, holding the REFERENCES of that module's
operators."""
