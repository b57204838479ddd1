"""References of CAST, of the data_movement family."""

REFERENCES: dict = {}
