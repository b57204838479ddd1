"""float64 references of the element_wise_math family: one module per module of
dmljax/_src/ops/element_wise_math/, of the same name, holding the REFERENCES of that module's
operators."""
