"""References of PADDING, PADDING1 and TILE, of the data_movement family."""

REFERENCES: dict = {}
