"""float64 references of the pooling family: one module per module of dmljax/_src/ops/pooling/, of
the same name, holding the REFERENCES of that module's operators; _common.py holds what they
share."""
