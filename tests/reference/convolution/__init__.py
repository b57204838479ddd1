"""float64 references of the convolution family: one module per module of
dmljax/_src/ops/convolution/, of the same name, holding the REFERENCES of that module's
operators."""
