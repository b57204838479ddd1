"""References of TOP_K and TOP_K1, of the reduction family."""

REFERENCES: dict = {}
