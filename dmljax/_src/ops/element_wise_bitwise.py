"""Element-wise bitwise operators (AND, OR, XOR, NOT, shifts, population count) on integer
tensors: each page's record, with its formula right below it."""

from __future__ import annotations
