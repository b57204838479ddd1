"""References of SLICE, SLICE1 and SLICE_GRAD, of the data_movement family."""

REFERENCES: dict = {}
