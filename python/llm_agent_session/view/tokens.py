"""The tokens a transcript's provider responses used, as its page shows them: the session's
totals (its header) and each message's usage, with whether that message is the line its
response is counted at (``usage``'s rule: Claude Code writes one line per streamed block,
each repeating the response's id and usage; the response is counted once, at the last).

``usage.read`` (one pass of the core over the file) is kept per transcript file while the
file is unchanged (its inode, size and modification time), so the windows of a page cost
nothing more; a file that grew is read again on the next ask.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Dict, Iterable, Optional, Tuple

from .. import usage
from ..usage import TranscriptUsage
from ..visible import visible
from .shelf_row import tokens_fields

_Key = Tuple[str, int, int, int]
_KEEP = 8  # the transcripts whose reading is kept (the viewer keeps 3 open)
_readings: Dict[str, Tuple[_Key, TranscriptUsage]] = {}
_lock = threading.Lock()


def reading(path: str) -> Optional[TranscriptUsage]:
    """The usage of the transcript at `path` as it is now (None where it cannot be read)."""
    try:
        st = os.stat(path)
        key = (path, st.st_ino, st.st_size, st.st_mtime_ns)
        with _lock:
            kept = _readings.get(path)
        if kept is not None and kept[0] == key:
            return kept[1]
        found = usage.read(path)
    except (OSError, ValueError):
        return None
    with _lock:
        _readings.pop(path, None)
        _readings[path] = (key, found)
        while len(_readings) > _KEEP:
            _readings.pop(next(iter(_readings)))
    return found


def of_session(path: str) -> Optional[Dict[str, Any]]:
    """``/api/transcript``'s ``tokens``: as a shelf row has them (``tokens``, ``usage``)."""
    found = reading(path)
    return None if found is None else tokens_fields(found.totals)


def mark(path: str, items: Iterable[Dict[str, Any]], event_at: Any) -> None:
    """Add ``tokens`` to each message item of a window whose line records usage
    (`event_at(i)`: the envelope at position i): its figures (None where not stated), and
    ``counted`` (this line is where its response is counted) or ``counted_at`` (the id of
    the later line of the same response that is)."""
    found: Optional[TranscriptUsage] = None
    at: Optional[Dict[str, str]] = None
    for item in items:
        if item.get("type") != "message" or not isinstance(item.get("i"), int):
            continue
        event = event_at(item["i"])
        payload = event.payload
        stated = usage.of_message(payload) if isinstance(payload, dict) else None
        if stated is None:
            continue
        if found is None:
            found = reading(path)
            if found is None:
                return
            at = found.counted_at()
        figures = {name: getattr(stated, name) for _, name in usage.FIGURES}
        counted = event.id in found.counted
        where = at.get(stated.response_id) if at is not None and stated.response_id is not None else None
        item["tokens"] = {**figures, "counted": counted,
                          "counted_at": None if counted or where is None else visible(where)}
