"""VALUE_SCALE_2D (a per-channel scale and bias of an image tensor), of the
element_wise_arithmetic family: its page's record, with its formula right below it."""

from __future__ import annotations
