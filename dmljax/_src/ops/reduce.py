"""REDUCE (every DML_REDUCE_FUNCTION), of the reduction family."""
