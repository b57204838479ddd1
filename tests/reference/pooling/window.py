"""float64 references of the windowed poolings (AVERAGE/LP/MAX_POOLING*, MAX_UNPOOLING and the
*_GRAD operators), from their pages."""

REFERENCES = {}
