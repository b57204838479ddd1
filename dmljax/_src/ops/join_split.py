"""JOIN and SPLIT, of the data_movement family."""
