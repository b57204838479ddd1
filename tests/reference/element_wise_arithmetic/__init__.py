"""float64 references of the element_wise_arithmetic family: one module per module of
dmljax/_src/ops/element_wise_arithmetic/, of the same name, holding the REFERENCES of that
module's operators; _common.py holds what they share."""
