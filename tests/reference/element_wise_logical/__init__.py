"""float64 references of the element_wise_logical family: one module per module of
dmljax/_src/ops/element_wise_logical/, of the same name, holding the REFERENCES of that module's
operators."""
