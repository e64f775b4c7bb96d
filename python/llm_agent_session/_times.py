"""Envelope times as the side index keeps them (docs/FORMAT.md, "The side index"): each
envelope's ``ts`` as a number in time order (``time_key``), and per block of
``TIME_BLOCK`` envelopes the largest of them. The twin of ``rust/index/times.rs``."""

from __future__ import annotations

import re
from typing import List, Sequence

#: Envelopes a block of the index's ``TIME`` section covers.
TIME_BLOCK = 64
#: What ``time_key`` gives a ``ts`` that is not a time.
NOT_A_TIME = -1

_TIME = re.compile(r"(\d{4})-(\d\d)-(\d\d)[Tt ](\d\d):(\d\d):(\d\d)(?:\.(\d{0,6}))?", re.ASCII)


def time_key(ts: str) -> int:
    """`ts` as a number in time order: for a `ts` whose first 19 characters are
    ``YYYY-MM-DDTHH:MM:SS`` (ASCII digits; ``T``, ``t`` or a space between date and
    time), ``((((Y * 13 + M) * 32 + D) * 24 + h) * 3600 + m * 60 + s) * 1_000_000 +
    micro``, where ``micro`` is the first six ASCII digits after a ``.`` that follows
    them (padded with zeros; none: 0); whatever follows is not read. ``NOT_A_TIME`` (-1)
    for any other `ts`. Not a count of microseconds: only the order counts (no
    calendar is consulted)."""
    m = _TIME.match(ts) if isinstance(ts, str) else None
    if m is None:
        return NOT_A_TIME
    y, mo, d, h, mi, s, fraction = m.groups()
    micro = int(fraction.ljust(6, "0")) if fraction else 0
    seconds = (((int(y) * 13 + int(mo)) * 32 + int(d)) * 24 + int(h)) * 3600 + int(mi) * 60 + int(s)
    return seconds * 1_000_000 + micro


def blocks_of(n: int) -> int:
    """How many blocks `n` envelopes take."""
    return -(-n // TIME_BLOCK)


def merged_blocks(prior: Sequence[int], first: int, new: Sequence[int]) -> List[int]:
    """The blocks of an index resumed after `first` envelopes: `prior`'s (the blocks of
    those envelopes) and `new`'s (from the block envelope `first` is in); a block both
    hold part of takes the larger key."""
    out = list(prior)
    new = list(new)
    if new and first % TIME_BLOCK and out:
        out[-1] = max(out[-1], new.pop(0))
    return out + new
