"""float64 references of the attention family: one module per module of dmljax/_src/ops/attention/, of the
same name, holding the REFERENCES of that module's operators."""
