"""float64 references for the quantization family, one module per module of
dmljax/_src/ops/quantization/."""
