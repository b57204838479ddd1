"""float64 references of the normalization family: one module per module of
dmljax/_src/ops/normalization/, of the same name, holding the REFERENCES of that module's
operators; _common.py holds what they share."""
