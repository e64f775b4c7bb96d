"""A search of one open transcript's whole file, streamed as the file is read
(docs/viewer.md, ``/api/search``).

The library's ``search.find_hits`` finds the lines that hold the text and says, for each,
in which groups of its envelope (content, tool arguments, tool results, extras) the text
is, while the line is in memory. It runs in a thread of its own (the core releases the
GIL), a range of bytes at a time, and hands each range's lines over a bounded queue; the
stream places them on their envelopes (by the transcript's index of byte offsets) and
reports once a range: the hits found so far, how far the scan is.
"""

from __future__ import annotations

import os
import queue
import threading
from typing import Any, Callable, Dict, Generator, List, Optional, Sequence

from .. import search
from ..visible import visible
from . import background
from .problems import Problem

# Bytes scanned between two reports of a search's progress: 1 MiB first (the first hits
# show at once), doubling to 64 MiB (a report per ~50 ms of scan on a 1 GB file).
FIRST_CHUNK = 1 << 20
SEARCH_CHUNK = 64 << 20
#: The names of the groups whose bits are set, for each set of bits (sorted, as sent).
GROUP_NAMES = [sorted(search.groups_named(bits)) for bits in range(16)]
MAX_HITS = 100_000  # hits sent for one search (the count goes on)
#: The groups a search looks in (bits of ``search.GROUPS``): all but extras, or all of them.
WITHOUT_EXTRAS, WITH_EXTRAS = 0b0111, 0b1111

#: A search's reports, as they come; closing it stops the scan.
Reports = Generator[Dict[str, Any], None, None]
#: Where the envelopes whose lines start at these byte offsets are (None: not an envelope).
Placer = Callable[[Sequence[int]], List[Optional[int]]]


def needle_of(text: str, ignore_case: bool) -> bytes:
    """`text` as the file writes it (``search.needle``); Problem 400 where no line can hold it."""
    if not text:
        raise Problem(400, "q (the text to search for) is empty")
    try:
        needle = search.needle(text, ignore_case)
    except ValueError as e:
        raise Problem(400, str(e))
    if b"\n" in needle:
        raise Problem(400, "q holds a newline, which no line holds")
    return needle


def stream(path: str, end: int, place: Placer, needle: bytes, ignore_case: bool, want: int,
           start: int) -> "Reports":
    """The reports of a search of ``[start, end)`` of the file at `path`: ``{"hits": [[i,
    [groups]], ...], "total", "lines", "scanned", "size"}`` as ranges are scanned, then
    ``{"done": true, ...}`` (or ``{"error": ...}``). Only the groups in `want` count. The
    scan stops when the stream is closed (the client went away)."""
    found: "queue.Queue[Any]" = queue.Queue(maxsize=64)
    stop = threading.Event()
    threading.Thread(target=_scan, args=(path, needle, ignore_case, start, end, found, stop), name="view-search",
                     daemon=True).start()
    total = sent = candidates = scanned = 0
    size = end
    try:
        while True:
            item = found.get()
            if item is None:
                break
            if isinstance(item, Exception):
                yield {"error": visible(str(item))}
                return
            lines, line_groups, scanned, size = item
            candidates += len(lines)
            hits: List[Any] = []
            for i, found_in in zip(place(lines), line_groups):
                groups = found_in & want if found_in > 0 else 0
                if groups and i is not None:
                    total += 1
                    if sent < MAX_HITS:
                        hits.append([i, GROUP_NAMES[groups]])
                        sent += 1
            yield {"hits": hits, "total": total, "lines": candidates, "scanned": scanned, "size": size}
        yield {"done": True, "total": total, "lines": candidates, "scanned": size, "size": size}
    finally:
        stop.set()


def _scan(path: str, needle: bytes, ignore_case: bool, start: int, end: int, found: "queue.Queue[Any]",
          stop: threading.Event) -> None:
    """The scan, in its own thread: the core finds the lines and says where in each
    envelope the text is while the line is in memory; each range's answer goes to `found`,
    then None (or the exception that stopped it)."""
    with background.searching():  # the secret count waits meanwhile
        _scan_range(path, needle, ignore_case, start, end, found, stop)


def _scan_range(path: str, needle: bytes, ignore_case: bool, start: int, end: int, found: "queue.Queue[Any]",
                stop: threading.Event) -> None:
    def hand_over(item: Any) -> bool:
        """Put `item` in `found` unless the stream was closed (nobody would take it)."""
        while not stop.is_set():
            try:
                found.put(item, timeout=0.1)
                return True
            except queue.Full:
                pass
        return False

    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as e:
        hand_over(e)
        return
    try:
        at, chunk = start, FIRST_CHUNK
        while at < end:
            lines, groups, at = search.find_hits(fd, needle, at, min(at + chunk, end), ignore_case)
            chunk = min(chunk * 2, SEARCH_CHUNK)
            if not hand_over((lines, groups, at, end)):
                return
        hand_over(None)
    except Exception as e:  # reported in the stream
        hand_over(e)
    finally:
        os.close(fd)
