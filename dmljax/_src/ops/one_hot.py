"""ONE_HOT and NONZERO_COORDINATES, of the indexing family."""
