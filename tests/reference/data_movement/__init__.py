"""float64 references of the data_movement family: one module per module of
dmljax/_src/ops/data_movement/, of the same name, holding the REFERENCES of that module's
operators."""
