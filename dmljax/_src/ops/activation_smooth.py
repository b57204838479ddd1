"""Activation operators SIGMOID, TANH, SCALED_TANH, SOFTPLUS, PARAMETRIC_SOFTPLUS, CELU: each page's record, with its formula right below it."""

from __future__ import annotations
