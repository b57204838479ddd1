"""GATHER, GATHER_ELEMENTS, GATHER_ND and GATHER_ND1, of the indexing family."""
