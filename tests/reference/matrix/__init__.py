"""float64 references of the matrix family: one module per module of dmljax/_src/ops/matrix/, of the
same name, holding the REFERENCES of that module's operators."""
