"""The tokens a transcript's provider responses used, as its page shows them: the session's
totals (its header) and each message's usage, with whether that message is the line its
response is counted at (``usage``'s rule: Claude Code writes one line per streamed block,
each repeating the response's id and usage; the response is counted once, at the last).

``usage.read`` (the core's usage pass over the file: about 0.8 s for 1 GB) is kept per
transcript file while the file is unchanged (its inode, size and modification time), so
the windows of a page cost nothing more. A file up to ``ON_THE_ASK`` bytes is read on the
ask; a bigger one (or one that grew past it) in a thread, so that its first screen does
not wait for it (nor beside the transcript's own reads: one pass at a time,
``background.py``): until that is done, the answers say so (``ready`` false, the figures of
the last reading, if any), and a message's ``counted`` is null (not known yet).
"""

from __future__ import annotations

import os
import threading
from typing import Any, Dict, Iterable, Optional, Set, Tuple

from .. import usage
from ..usage import TranscriptUsage
from ..visible import visible
from . import background
from .shelf_row import tokens_fields

#: The largest file read on the ask (about 40 ms); a bigger one is read in the background.
ON_THE_ASK = 32 << 20
_Key = Tuple[str, int, int, int]
_KEEP = 8  # the transcripts whose reading is kept (the viewer keeps 3 open)
_readings: Dict[str, Tuple[_Key, TranscriptUsage]] = {}
_reading: Set[str] = set()  # the paths being read in the background (one read a path at a time)
_lock = threading.Lock()


def _keep(path: str, key: _Key, found: TranscriptUsage) -> None:
    with _lock:
        _readings.pop(path, None)
        _readings[path] = (key, found)
        while len(_readings) > _KEEP:
            _readings.pop(next(iter(_readings)))


def _read_in_background(path: str, key: _Key) -> None:
    try:
        # After (or before) the transcript's own passes, not beside them (background.py);
        # the core's usage pass over a 1 GB file peaks at about 65 MB, handed back after it.
        with background.turn(key[2]):
            found = usage.read(path)
            background.release_freed_memory()
        _keep(path, key, found)
    except (OSError, ValueError):
        pass  # asked again, it is tried again
    finally:
        with _lock:
            _reading.discard(path)


def reading(path: str) -> Tuple[Optional[TranscriptUsage], bool]:
    """The usage of the transcript at `path`, and whether it is of the file as it is now
    (False: being read in the background; the reading is then the last one, or None).
    ``(None, True)`` where the file cannot be read."""
    try:
        st = os.stat(path)
    except OSError:
        return None, True
    key = (path, st.st_ino, st.st_size, st.st_mtime_ns)
    with _lock:
        kept = _readings.get(path)
    if kept is not None and kept[0] == key:
        return kept[1], True
    if st.st_size <= ON_THE_ASK:
        try:
            found = usage.read(path)
        except (OSError, ValueError):
            return None, True
        _keep(path, key, found)
        return found, True
    with _lock:
        if path not in _reading:  # (a file growing as it is read: read again on a later ask)
            _reading.add(path)
            threading.Thread(target=_read_in_background, args=(path, key), name="view-tokens", daemon=True).start()
    return (kept[1] if kept is not None else None), False


def of_session(path: str) -> Optional[Dict[str, Any]]:
    """``/api/transcript``'s ``tokens``: as a shelf row has them (``tokens``, ``usage``),
    with ``ready`` (false while a big file is read: the last reading's figures, or none)."""
    found, current = reading(path)
    if found is None:
        return None if current else {"ready": False, "tokens": None, "usage": None}
    return dict(tokens_fields(found.totals), ready=current)


def mark(path: str, items: Iterable[Dict[str, Any]], event_at: Any) -> None:
    """Add ``tokens`` to each message item of a window whose line records usage
    (`event_at(i)`: the envelope at position i): its figures (None where not stated), and
    ``counted`` (this line is where its response is counted; None: not known yet) or
    ``counted_at`` (the id of the later line of the same response that is)."""
    found: Optional[TranscriptUsage] = None
    at: Dict[str, str] = {}
    looked = False
    for item in items:
        if item.get("type") != "message" or not isinstance(item.get("i"), int):
            continue
        event = event_at(item["i"])
        payload = event.payload
        stated = usage.of_message(payload) if isinstance(payload, dict) else None
        if stated is None:
            continue
        if not looked:
            looked = True
            found, current = reading(path)
            found = found if current else None
            at = found.counted_at() if found is not None else {}
        figures = {name: getattr(stated, name) for _, name in usage.FIGURES}
        counted = None if found is None else event.id in found.counted
        where = at.get(stated.response_id) if stated.response_id is not None else None
        item["tokens"] = {**figures, "counted": counted,
                          "counted_at": None if counted is not False or where is None else visible(where)}
