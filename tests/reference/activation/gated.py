"""float64 references for the activations GELU, SWISH, HARD_SWISH, PARAMETERIZED_RELU, RELU_GRAD, transcribed from their pages and SEMANTICS.md."""

REFERENCES = {}
