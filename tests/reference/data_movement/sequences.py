"""References of REVERSE_SUBSEQUENCES, FOLD and UNFOLD, of the data_movement family."""

REFERENCES: dict = {}
