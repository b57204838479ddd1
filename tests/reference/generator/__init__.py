"""float64 references of the generator family: one module per module of dmljax/_src/ops/generator/,
of the same name, holding the REFERENCES of that module's operators."""
