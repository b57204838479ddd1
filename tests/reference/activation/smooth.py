"""float64 references for the activations SIGMOID, TANH, SCALED_TANH, SOFTPLUS, PARAMETRIC_SOFTPLUS, CELU, transcribed from their pages and SEMANTICS.md."""

REFERENCES = {}
