"""Argument types the commands share (kept apart from ``cli/__init__``, which imports
every command's module to build the parser)."""

from __future__ import annotations

import argparse
from typing import Callable


def whole_number(minimum: int) -> Callable[[str], int]:
    """An argparse ``type``: a whole number of at least `minimum`, or a usage error."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, not {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected a number >= {minimum}, not {value}")
        return value

    return parse
