"""Activation operators SOFTMAX, SOFTMAX1, LOG_SOFTMAX, LOG_SOFTMAX1, HARDMAX and HARDMAX1 (over the last dimension or Axes): each page's record, with its formula right below it."""

from __future__ import annotations
