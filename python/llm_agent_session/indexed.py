"""A transcript read through its side index, for a reader that does not fold (the viewer).

``peek(path)`` is ``Session.peek(path, spans=True)`` when a side index still describes
the file (docs/FORMAT.md, "The side index"; kept in the user's cache), plus
``indexed``: what the index says of the envelopes it holds (an :class:`Indexed`), so
that a reader finds an id, a time, the next envelope of a kind or a failed tool call,
and places a byte offset, by reading a few lines instead of the file. Without such an
index it returns None, having read only the index and the bytes it checks. ``update``
makes or extends the index (in the cache, never beside the transcript), as
``llm-agent-session index`` does.
"""

from __future__ import annotations

import bisect
import re
import struct
from array import array
from itertools import accumulate
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import _index, _peek
from ._core import IndexTable
from ._pure.index_format import fingerprint
from ._times import TIME_BLOCK, time_key

__all__ = ["peek", "update", "Indexed", "time_key", "TIME_BLOCK"]

#: The kind code of an envelope whose kind an index does not hold (its line is read).
OTHER_KIND = 255


def peek(path: str, unindexed_at_most: Optional[int] = None) -> Optional[Dict[str, Any]]:
    """``Session.peek(path, spans=True)`` of the whole file through its side index, with
    ``indexed`` (an :class:`Indexed` of the envelopes the index holds: the first
    ``indexed.count``); None where no index describes the file, or (with
    `unindexed_at_most`) more bytes than that were appended after it (nothing else is read)."""
    found = _peek.peek_through_index(path, unindexed_at_most)
    if found is None:
        return None
    found["indexed"] = Indexed(found.pop("table"))
    return found


def update(path: str) -> Tuple[str, str]:
    """Make or extend the side index of the transcript at `path`, reading only what was
    appended since the index kept (``llm-agent-session index``): (what happened, a detail)."""
    return _index.update(path)


class Indexed:
    """What a side index says of the envelopes it holds (positions ``[0, count)``):
    their envelopes and spans (built on access), kinds, times by block, failed tool
    calls and ids' fingerprints. Every answer is checked against the envelope's line
    where the index cannot be exact (a fingerprint, a kind it does not hold)."""

    def __init__(self, table: IndexTable) -> None:
        self._table = table
        self.events = table.events
        self.spans = table.spans
        self.count = len(table.events)
        self.end = table.end  # the byte where the indexed part ends
        self._time_runs: Optional[List[int]] = None

    def offsets(self) -> "array[int]":
        """Every indexed envelope's byte offset, in order (8 bytes an envelope)."""
        return _peek.offsets_of(self._table.spans)

    def find_id(self, envelope_id: str) -> Optional[int]:
        """The position of the envelope `envelope_id` among the indexed ones, or None: a
        search of the fingerprints (4 bytes an envelope), each match confirmed by its line."""
        prints = self._table.fingerprints
        wanted = struct.pack("<I", fingerprint(self._table.id_key, envelope_id))
        at = prints.find(wanted)
        while at != -1:
            if at % 4 == 0 and self.events[at // 4].id == envelope_id:
                return at // 4
            at = prints.find(wanted, at + 1)
        return None

    def first_at_or_after(self, key: int) -> Optional[int]:
        """The first indexed envelope in file order whose time (``time_key``) is at or after
        `key`: in the first block of ``TIME_BLOCK`` whose largest time is (its lines read)."""
        if self._time_runs is None:
            blocks = struct.unpack(f"<{len(self._table.times) // 8}q", self._table.times)
            self._time_runs = list(accumulate(blocks, max))
        block = bisect.bisect_left(self._time_runs, key)
        for i in range(block * TIME_BLOCK, min((block + 1) * TIME_BLOCK, self.count)):
            if time_key(self.events[i].ts) >= key:
                return i
        return None

    def of_type(self, type_: str) -> "Positions":
        """The indexed envelopes of the type `type_`."""
        codes = [code for code, (t, _) in enumerate(self._table.kind_table) if t == type_]
        return _Kinds(self, codes, type_)

    def failed(self) -> "Positions":
        """The indexed ``tool-dispatched`` envelopes whose operation was settled failed
        before the index's end."""
        return _Bits(self._table.failed)


class Positions:
    """Positions among the indexed envelopes, searched forwards and backwards."""

    def after(self, start: int, stop: int) -> Optional[int]:
        """The first at or after `start`, before `stop`."""
        raise NotImplementedError

    def before(self, stop: int) -> Optional[int]:
        """The last before `stop`."""
        raise NotImplementedError


class _Kinds(Positions):
    """Found in the kinds (a byte an envelope) at C speed; an envelope of a kind the index
    does not hold (``OTHER_KIND``) is checked by its line."""

    def __init__(self, indexed: Indexed, codes: List[int], type_: str) -> None:
        self._kinds = indexed._table.kinds
        self._events = indexed.events
        self._codes = [*codes, OTHER_KIND]
        self._pattern = re.compile(b"[" + b"".join(re.escape(bytes([c])) for c in self._codes) + b"]")
        self._type = type_

    def _is(self, e: int) -> bool:
        return self._kinds[e] != OTHER_KIND or self._events[e].type == self._type

    def after(self, start: int, stop: int) -> Optional[int]:
        at = start
        while True:
            m = self._pattern.search(self._kinds, at, stop)
            if m is None:
                return None
            if self._is(m.start()):
                return m.start()
            at = m.start() + 1

    def before(self, stop: int) -> Optional[int]:
        while stop > 0:
            at = max(self._kinds.rfind(bytes([c]), 0, stop) for c in self._codes)
            if at < 0:
                return None
            if self._is(at):
                return at
            stop = at
        return None


class _Bits(Positions):
    """A bitmap of one bit an envelope, searched a byte at a time at C speed."""

    _SET = re.compile(b"[^\x00]")

    def __init__(self, bits: bytes) -> None:
        self._bits = bits

    def _set(self, e: int) -> bool:
        return bool(self._bits[e // 8] >> (e % 8) & 1)

    def after(self, start: int, stop: int) -> Optional[int]:
        at = start
        while at < stop:
            if at % 8:
                if self._set(at):
                    return at
                at += 1
                continue
            m = self._SET.search(self._bits, at // 8, (stop + 7) // 8)
            if m is None:
                return None
            at = max(at, m.start() * 8)
            for e in range(at, min(at + 8, stop)):
                if self._set(e):
                    return e
            at += 8
        return None

    def before(self, stop: int) -> Optional[int]:
        at = stop - 1
        while at >= 0:
            if at % 8 != 7:
                if self._set(at):
                    return at
                at -= 1
                continue
            nonzero = len(self._bits[: at // 8 + 1].rstrip(b"\x00"))
            if nonzero == 0:
                return None
            at = min(at, nonzero * 8 - 1)
            for e in range(at, at - 8, -1):
                if self._set(e):
                    return e
            at -= 8
        return None

