"""References of SPACE_TO_DEPTH, SPACE_TO_DEPTH1, DEPTH_TO_SPACE and DEPTH_TO_SPACE1, of the data_movement family."""

REFERENCES: dict = {}
