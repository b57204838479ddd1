"""Operator families. Importing this package registers every operator."""

from dmljax._src.ops import activation, element_wise  # noqa: F401
