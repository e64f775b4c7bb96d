"""A source record's own time as the line format's ``ts``: UTC, ``YYYY-MM-DDTHH:MM:SS.ffffffZ``.

Claude Code and Codex write ISO 8601 times with a ``Z`` and milliseconds
(``2025-08-20T09:00:01.250Z``). Accepted here: a date, ``T`` (or ``t`` or a space), a
time with seconds, an optional fraction (more than six digits are cut, not rounded, so
a time never moves into the next second), and a zone: ``Z``, ``+HH:MM``/``+HHMM``
(converted to UTC), or none (taken as UTC). Anything else is not a time: the envelope
gets the import's own time instead, and the import says so (see ``Planner``).
"""

from __future__ import annotations

import functools
import re
from datetime import date, datetime, timedelta, timezone
from typing import Any, Optional

_TIME = re.compile(
    r"(\d{4})-(\d\d)-(\d\d)[Tt ](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,12}))?(?:([Zz])|([+-])(\d\d):?(\d\d))?\Z"
)


@functools.lru_cache(maxsize=4096)
def _real_date(year: str, month: str, day: str) -> bool:
    try:
        date(int(year), int(month), int(day))
    except ValueError:
        return False
    return True


def source_time(value: Any) -> Optional[str]:
    """``value`` as the line format's ``ts``, or None when it is not a time this reads."""
    if not isinstance(value, str):
        return None
    m = _TIME.match(value)
    if m is None:
        return None
    year, month, day, hour, minute, second, fraction, _, sign, off_h, off_m = m.groups()
    if not _real_date(year, month, day) or hour > "23" or minute > "59" or second > "59":
        return None
    micros = (fraction or "")[:6].ljust(6, "0")
    if sign is None or off_h + off_m == "0000":
        return f"{year}-{month}-{day}T{hour}:{minute}:{second}.{micros}Z"
    if off_h > "23" or off_m > "59":
        return None
    offset = timedelta(hours=int(off_h), minutes=int(off_m))
    try:
        local = datetime(int(year), int(month), int(day), int(hour), int(minute), int(second), int(micros),
                         tzinfo=timezone(offset if sign == "+" else -offset))
        utc = local.astimezone(timezone.utc)
    except (ValueError, OverflowError):  # moved out of years 1..9999
        return None
    return (f"{utc.year:04d}-{utc.month:02d}-{utc.day:02d}T{utc.hour:02d}:{utc.minute:02d}:{utc.second:02d}"
            f".{utc.microsecond:06d}Z")
