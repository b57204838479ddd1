"""float64 references of the training family: one module per module of dmljax/_src/ops/training/, of
the same name, holding the REFERENCES of that module's operators."""
