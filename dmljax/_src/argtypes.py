"""argparse value types shared by the command lines (``dmljax run``, ``dmljax bench``)."""

from __future__ import annotations

import argparse
from typing import Callable

__all__ = ["int_at_least"]


def int_at_least(minimum: int) -> Callable[[str], int]:
    """An argparse ``type`` for a whole number of at least ``minimum`` (0 or 1), with a message
    that says what is wrong: not an integer, negative, or below the minimum."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text[:40]!r} is not an integer") from None
        if value < 0:
            raise argparse.ArgumentTypeError(f"{value} is negative")
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value} is not allowed; give {minimum} or more")
        return value

    parse.__name__ = f"int_at_least_{minimum}"
    return parse
