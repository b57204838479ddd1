"""float64 references of the recurrent family: one module per module of dmljax/_src/ops/recurrent/, of
the same name, holding the REFERENCES of that module's operators."""
