"""CAST, of the data_movement family."""
