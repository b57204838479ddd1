"""Activation operators GELU, SWISH, HARD_SWISH, PARAMETERIZED_RELU and RELU_GRAD: each page's record, with its formula right below it."""

from __future__ import annotations
