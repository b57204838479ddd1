"""float64 references of the resample family: one module per module of dmljax/_src/ops/resample/, of
the same name, holding the REFERENCES of that module's operators."""
