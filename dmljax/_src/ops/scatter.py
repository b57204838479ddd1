"""SCATTER_ELEMENTS (alias SCATTER) and SCATTER_ND, of the indexing family."""
