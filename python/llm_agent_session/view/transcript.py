"""One transcript open in the viewer: its envelopes in file order, and what became of each.

Opening a transcript with a side index that still describes it (docs/FORMAT.md, "The
side index"; kept in the user's cache, never beside the transcript) reads the index and
only the bytes appended after it: the envelopes' places, kinds, times (per block of 64)
and failed operations are the index's, so the first screen, a jump to a time, an id or
the next tool call, and the placing of a search's hits read a few lines of the file,
not the file. Without one, ``Session.peek`` reads the file once (the scan keeps every
envelope's id, type and ts packed, and the lazy list builds an envelope, payload and
all, only when asked); a file of ``PREVIEW_FROM`` bytes or more shows its last
``PREVIEW_BYTES`` first (a *preview*: positions counted from there, no jumps yet) while
a background thread builds its index in the cache and reads it through that, then
starts again under a new ``generation``. Then, in a background thread, so they never
block a screen:

1. the index of what no side index holds: each envelope's byte offset (for the
   search's hits), its time (for "jump to time") and the positions of the envelopes a
   reader jumps between;
2. load's verdict (``llm_agent_session.verdict``): clean, torn tail, or would fail and why;
3. the ``History`` (without payloads: the values stay in the file): what removed or
   elided each message, each tool operation's state and its call and result, and the live
   conversation;
4. where the viewer masks secrets (``redactor``, docs/secrets.md), how many the file holds
   (``secrets``: ``secrets.scan_file``'s findings), for the page's status.

Following a file being written: :meth:`Transcript.refresh` peeks from the last end with
the file's identity and adds what was appended (to the index and the history alike); a
repair that renamed a new file over it (or a file that shrank) starts everything again
under a new ``generation``.
"""

from __future__ import annotations

import bisect
import os
import stat
import threading
from array import array
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from .. import indexed as side_index
from .. import search
from ..indexed import Indexed, time_key
from ..history import History
from ..messages import Event
from ..secrets import Redactor
from ..session import Session
from ..verdict import Verdict, verdict
from . import background, transcript_search
from .problems import Problem

# The kinds of envelope a reader jumps to ("next tool call" ...): from their types at
# once, and from the history once it is there.
TYPE_JUMPS = {"tool-call": "tool-dispatched", "compaction": "compaction", "rewind": "rewind"}
HISTORY_JUMPS = ("failed", "pending")
JUMPS = tuple(TYPE_JUMPS) + HISTORY_JUMPS


# A file this big without a side index shows its end first (a whole peek of it takes a
# second or more), and this much of it.
PREVIEW_FROM = 256 << 20
PREVIEW_BYTES = 4 << 20


class Segment:
    """What one peek read: envelopes from ``base`` (their index in the whole file) on."""

    def __init__(self, base: int, envelopes: Sequence[Event], spans: Sequence[Tuple[int, int, int]]) -> None:
        self.base = base
        self.envelopes = envelopes
        self.spans = spans


class Transcript:
    """A transcript file the viewer shows (see the module doc). Thread-safe."""

    def __init__(self, name: str, path: str, redactor: Optional[Redactor] = None) -> None:
        self.name = name
        self.path = path
        # What everything sent to the page is masked with (by default the rules'; one
        # that is not enabled masks nothing).
        self.redactor = redactor if redactor is not None else Redactor()
        self.lock = threading.RLock()
        self.generation = 0
        self._reset()
        self.error: Optional[str] = None
        self._read_all()

    # -- reading ------------------------------------------------------------------------

    def _reset(self) -> None:
        self.segments: List[Segment] = []
        self.count = 0
        self.end = 0
        self.size = 0
        self.identity: Optional[Tuple[int, int]] = None
        self.meta: Dict[str, Any] = {}
        self.warnings: List[str] = []
        # The side index's: envelopes [0, first) are placed, typed and timed by it.
        self.table: Optional[Indexed] = None
        self.first = 0
        self.table_offsets: Optional["array[int]"] = None  # its envelopes' offsets (read in the background)
        # Showing the file's last bytes only, while its index is built (positions from there).
        self.preview = False
        # Envelopes [first, indexed) by the viewer's own index (what no side index holds):
        self.offsets = array("q")  # each envelope's byte offset
        self.times = array("q")  # the running maximum of time_key(ts): bisectable
        self.id_hashes = array("q")  # hash(id) of each envelope: an id found with no dict of ids
        self.jumps: Dict[str, "array[int]"] = {kind: array("q") for kind in TYPE_JUMPS}
        self.settled_failed: List[str] = []  # the op-ids those envelopes settle as failed
        self.indexed = 0
        self.history: Optional[History] = None
        self.failed: List[int] = []  # positions of the failed operations' dispatches, in order
        self.verdict: Optional[Verdict] = None
        self.secrets: Optional[int] = None  # secrets the file holds, once counted (masked ones)
        self.pending_ids: Optional[List[str]] = None  # the verdict's pending operations
        self._verdict_count = -1  # the envelopes there were when the verdict was asked for
        self._found_by_id: Dict[str, Tuple[Tuple[int, int], List[int]]] = {}  # pending/failed positions
        self.card_homes: Dict[str, int] = {}  # op id -> the position of its card (view/cards.py)
        # What each compaction and rewind removed, counted for the history as it was then.
        self._removals: Tuple[Any, Dict[str, Tuple[int, str]]] = (None, {})

    def _read_all(self) -> None:
        # (An index far behind the file is extended in the background, the end shown first.)
        found = side_index.peek(self.path, unindexed_at_most=PREVIEW_FROM)
        if found is None and self._preview():
            return
        if found is None:
            found = Session.peek(self.path, spans=True)
        with self.lock:
            self._take(found)
        self._start_background()

    def _take(self, found: Dict[str, Any]) -> None:
        """Take in a peek of the whole file (through its side index when ``table``)."""
        self.error = found.get("error")
        self.meta = found["meta"]
        self.table = found.get("indexed")
        self.first = self.indexed = self.table.count if self.table is not None else 0
        self._add(found)

    def _preview(self) -> bool:
        """Show the last ``PREVIEW_BYTES`` of a big file without an index, and build its
        index in the background; False for a smaller file (read it whole)."""
        try:
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        except OSError:
            return False
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_size < PREVIEW_FROM:
                return False
            start = _line_start_after(fd, st.st_size - PREVIEW_BYTES)
        finally:
            os.close(fd)
        found = Session.peek(self.path, offset=start, spans=True, index=False)
        with self.lock:
            self.preview = True
            self._add(found)
        threading.Thread(target=self._index_then_read, args=(self.generation,), name=f"view-index-{self.name}",
                         daemon=True).start()
        return True

    def _index_then_read(self, generation: int) -> None:
        """Build the side index of a previewed file (in the cache, never beside it), then
        read the file through it (or whole, where it cannot have one) as a new generation."""
        try:
            with background.turn(self.size):  # one pass over a whole file at a time (background.py)
                side_index.update(self.path)
                found = side_index.peek(self.path) or Session.peek(self.path, spans=True)
        except Exception as e:  # shown on the page; the preview stays
            with self.lock:
                self.error = self.error or f"reading {self.name} failed: {e}"
            return
        with self.lock:
            if generation != self.generation:
                return
            self.generation += 1
            self._reset()
            self._take(found)
        self._start_background()

    def _add(self, found: Dict[str, Any]) -> int:
        """Take in what a peek read; the number of new envelopes."""
        envelopes = found["envelopes"]
        self.segments.append(Segment(self.count, envelopes, found["spans"]))
        self.count += len(envelopes)
        self.end, self.size, self.identity = found["end"], found["size"], found["identity"]
        self.warnings.extend(found["warnings"])
        return len(envelopes)

    def refresh(self) -> bool:
        """Read what was appended since the last read (everything again, under a new
        generation, if the file was replaced or shrank); True when anything changed.
        A preview waits for its whole read."""
        with self.lock:
            if self.preview:
                return False
            try:
                st = os.stat(self.path)
            except OSError:
                return False
            if self.identity == (st.st_dev, st.st_ino) and st.st_size == self.size:
                return False
            found = Session.peek(self.path, offset=self.end, identity=self.identity, spans=True)
            if found["restarted"] or found.get("error"):
                self.generation += 1
                self._reset()
                if not found["restarted"]:
                    found = Session.peek(self.path, spans=True)
                self._take(found)
                self._start_background()
                return True
            before = self.count
            caught_up = self.indexed == before
            added = self._add(found)
            if added and caught_up:  # else the background build is still at it
                self._build_index(self.generation)
            if added and self.history is not None:
                self._feed(self.history, self.failed, (self.envelope(i) for i in range(before, self.count)))
            return added > 0 or self.size != found["size"]

    # -- the background work --------------------------------------------------------------

    def _start_background(self) -> None:
        generation = self.generation
        threading.Thread(target=self._background, args=(generation,), name=f"view-index-{self.name}", daemon=True).start()

    def _background(self, generation: int) -> None:
        with background.turn(self.size):  # one pass over a whole file at a time (background.py)
            self._read_in_background(generation)
            background.release_freed_memory()  # the secret count's too (9 of its 26 MB at 1 GB)

    def _read_in_background(self, generation: int) -> None:
        try:
            with self.lock:
                table = self.table if generation == self.generation else None
            if table is not None:  # 8 bytes an envelope: a search's hits placed at C speed
                offsets = table.offsets()
                with self.lock:
                    if generation == self.generation:
                        self.table_offsets = offsets
            self._build_index(generation)
            if generation != self.generation:
                return
            count = self.count
            found = verdict(self.path)
            # Its replay's state is load's live conversation, which the history holds too:
            # kept until the history was read, the two doubled the peak (1.30 GB against
            # 0.83 GB for 1,000,000 one-line messages, measured); the events, the peek has.
            found.replayed = None
            pending = [op.op_id for op in found.pending]
            background.release_freed_memory()
            with self.lock:
                if generation == self.generation:
                    self.verdict, self.pending_ids, self._verdict_count = found, pending, count
            self._build_history(generation)
            # Counted here, not on the page's first ask after the history: a look at every
            # entry removed (the pure core's way) held that answer 0.4 s at 1 GB.
            self.removals()
            background.keep_for_good()  # what the server now holds, out of the collector's walks
            self._count_secrets(generation)
        except Exception as e:  # shown on the page; the viewer goes on without it
            with self.lock:
                if generation == self.generation:
                    self.error = self.error or f"reading {self.name} failed: {e}"

    def _build_index(self, generation: int) -> None:
        while True:
            with self.lock:
                if generation != self.generation or self.indexed >= self.count:
                    return
                start, stop = self.indexed, self.count
                parts = [(s, max(start - s.base, 0), min(stop - s.base, len(s.envelopes)))
                         for s in self.segments if s.base + len(s.envelopes) > start and s.base < stop]
            offsets, times, hashes = array("q"), array("q"), array("q")
            jumps: Dict[str, "array[int]"] = {k: array("q") for k in TYPE_JUMPS}
            settled_failed: List[str] = []
            latest = self.times[-1] if self.times else -1
            kinds = {t: k for k, t in TYPE_JUMPS.items()}
            index = start
            for segment, lo, hi in parts:
                for (_, offset, _), event in zip(_slice(segment.spans, lo, hi), _slice(segment.envelopes, lo, hi)):
                    offsets.append(offset)
                    hashes.append(hash(event.id))
                    latest = max(latest, time_key(event.ts))
                    times.append(latest)
                    kind = kinds.get(event.type)
                    if kind is not None:
                        jumps[kind].append(index)
                    elif event.type == "tool-settled" and self.table is not None:
                        op_id = event.payload.get("op-id")
                        if event.payload.get("outcome") == "failed" and isinstance(op_id, str):
                            settled_failed.append(op_id)
                    index += 1
            with self.lock:
                if generation != self.generation or self.indexed != start:
                    return
                self.offsets.extend(offsets)
                self.times.extend(times)
                self.id_hashes.extend(hashes)
                for kind, found in jumps.items():
                    self.jumps[kind].extend(found)
                self.settled_failed.extend(settled_failed)
                self.indexed = stop

    def _count_secrets(self, generation: int) -> None:
        """How many secrets the file holds, up to what was read (the page's status)."""
        from ..secrets.scan import TRANSCRIPT, scan_file

        if not self.redactor.enabled:
            return
        found = scan_file(self.path, self.redactor.rules, self.redactor.fingerprints, TRANSCRIPT,
                          between=background.give_way)
        with self.lock:
            if generation == self.generation:
                self.secrets = sum(1 for f in found.findings if f.offset < self.end)

    def _build_history(self, generation: int) -> None:
        # Read by the core (History.read's way, up to the bytes peek read), not fed the
        # peek's envelopes here: on the 1 GB transcript viewer_speed.py's "server RSS,
        # history read too" went 413 -> 249 MB (every payload parsed in Python had left
        # the heap fragmented around the ids, times and Operations it kept), and the
        # history was there 0.0 s after the first screen instead of 5.3 s (measured).
        with self.lock:
            if generation != self.generation:
                return
            count, end, identity, in_table = self.count, self.end, self.identity, self.table is not None
        history = read_history(self.path, end, identity) if count else None
        fed = count
        if history is None or history.count != count:  # another file by now: fold what peek holds
            history, fed = History(keep_payloads=False), 0
        # The failed ones once, each operation built for this look alone (a native read
        # builds one when asked for: all kept, they were 90 MB at 1 GB); _feed notes the
        # ones settled later. Not where a side index has them (next_of): that look holds
        # the GIL for most of its 0.9 s at 1 GB, and the page's answers waited on it.
        failed = [] if in_table else [op.index for op in history.each_operation() if op.state == "failed"]
        while True:
            with self.lock:
                if generation != self.generation:
                    return
                if fed >= self.count:
                    self.history, self.failed = history, failed  # from now on refresh() feeds it
                    break
                stop = self.count
                parts = [(s, max(fed - s.base, 0), min(stop - s.base, len(s.envelopes)))
                         for s in self.segments if s.base + len(s.envelopes) > fed and s.base < stop]
            for segment, lo, hi in parts:
                self._feed(history, failed, _slice(segment.envelopes, lo, hi))
            fed = stop
        background.release_freed_memory()

    @staticmethod
    def _feed(history: History, failed: List[int], events: Iterable[Event]) -> None:
        """Feed `events` to `history`, noting in `failed` the operations they settle as failed."""
        for event in events:
            history.feed(event)
            if event.type == "tool-settled":
                op_id = event.payload.get("op-id")
                op = history.operations.get(op_id) if isinstance(op_id, str) else None
                if op is not None and op.settled_id == event.id and op.state == "failed":
                    bisect.insort(failed, op.index)

    # -- answers ------------------------------------------------------------------------

    def envelope(self, index: int) -> Event:
        """The envelope at `index` (IndexError past the end)."""
        with self.lock:
            segments = self.segments
        for segment in reversed(segments):
            if index >= segment.base:
                return segment.envelopes[index - segment.base]
        raise IndexError(index)

    def window(self, start: int, count: int) -> List[Tuple[int, Event]]:
        """The envelopes ``[start, start + count)`` that exist, with their indexes."""
        start = max(start, 0)
        stop = min(start + max(count, 0), self.count)
        return [(i, self.envelope(i)) for i in range(start, stop)]

    def line(self, index: int) -> bytes:
        """The line of the envelope at `index`, as it is in the file (without its newline)."""
        with self.lock:
            segment = next(s for s in reversed(self.segments) if index >= s.base)
            _, offset, length = segment.spans[index - segment.base]
        fd = os.open(self.path, os.O_RDONLY)
        try:
            return os.pread(fd, length, offset)
        finally:
            os.close(fd)

    def index_of_id(self, envelope_id: str, scan: bool = True) -> Optional[int]:
        """The position of the envelope `envelope_id` (live or not): among the side
        index's envelopes by their ids' fingerprints (a C-speed pass over 4 bytes an
        envelope, each match confirmed by its line), among the others by the viewer's id
        hashes, or by the history's own table; before any, with `scan`, by a search of the
        file for the line that starts ``{"id":"<id>",`` (ids are the first key of every line)."""
        with self.lock:
            history, hashes, indexed, table, first = self.history, self.id_hashes, self.indexed, self.table, self.first
        if table is not None:
            found = table.find_id(envelope_id)
            if found is not None:
                return found
        if indexed > first:  # the viewer's own index of the envelopes after the side index's
            wanted_hash, at = hash(envelope_id), 0
            while True:
                try:
                    at = _find(hashes, wanted_hash, at)
                except ValueError:
                    break
                if self.envelope(first + at).id == envelope_id:
                    return first + at
                at += 1
        if indexed and indexed >= self.count:
            return None
        if history is not None:
            return history.index_of(envelope_id)
        if not scan or self.indexed < self.count or not envelope_id:
            return None
        wanted = b'{"id":"' + search.needle(envelope_id, ignore_case=False) + b'",'
        fd = os.open(self.path, os.O_RDONLY)
        try:
            at = 0
            while at < self.end:
                lines, at = search.find_lines(fd, wanted, at, self.end, ignore_case=False, limit=64)
                for offset in lines:
                    i = self.index_of_offset(offset)
                    if i is not None and self.envelope(i).id == envelope_id:
                        return i
        finally:
            os.close(fd)
        return None

    def index_of_offset(self, offset: int) -> Optional[int]:
        """The envelope whose line starts at `offset` (None: not an envelope, or not indexed yet)."""
        return self.indexes_of_offsets([offset])[0]

    def indexes_of_offsets(self, offsets: Sequence[int]) -> List[Optional[int]]:
        """The envelope whose line starts at each of `offsets` (in file order; None: not an
        envelope, or not indexed yet), under one lock."""
        out: List[Optional[int]] = []
        with self.lock:
            table, first = self.table, self.first
            indexed_end = table.end if table is not None else 0
            starts: Any = None  # an array, or the spans read one by one
            if table is not None:
                starts = self.table_offsets if self.table_offsets is not None else _Offsets(table.spans)
            index, n, lo, tlo = self.offsets, len(self.offsets), 0, 0
            for offset in offsets:
                if starts is not None and offset < indexed_end:
                    tlo = bisect.bisect_left(starts, offset, tlo)
                    out.append(tlo if tlo < first and starts[tlo] == offset else None)
                    continue
                lo = bisect.bisect_left(index, offset, lo)
                out.append(first + lo if lo < n and index[lo] == offset else None)
        return out

    def index_of_time(self, key: int) -> Optional[int]:
        """The first envelope in file order whose time is at or after `key` (see time_key):
        among the side index's envelopes by its times per block; else among the others, by
        the running maximum of their times."""
        with self.lock:
            table, first = self.table, self.first
        if table is not None:
            found = table.first_at_or_after(key)
            if found is not None:
                return found
        with self.lock:
            i = bisect.bisect_left(self.times, key)
            return first + i if i < len(self.times) else None

    def next_of(self, kind: str, after: int, backwards: bool = False) -> Optional[int]:
        """The first envelope of `kind` (see JUMPS) after `after` (before it, `backwards`):
        the nearer of the side index's (`in_table`, envelopes before ``first``) and the
        others' (`positions`, in order)."""
        in_table: Optional[side_index.Positions] = None
        with self.lock:
            first = self.first
            if kind in TYPE_JUMPS:
                positions: Sequence[int] = self.jumps[kind]
                in_table = self._table_positions(kind)
            elif kind == "failed" and self.table is not None:  # the history read or not
                positions, in_table = self._positions_of("failed", self.settled_failed), self.table.failed()
            elif self.history is not None:
                positions = self._history_positions(kind)
            elif kind == "pending" and self._jumps_without_history(kind):
                positions = self._positions_of("pending", self.pending_ids or [])
            else:
                return None
        if backwards:
            i = bisect.bisect_left(positions, after) - 1
            found: List[Optional[int]] = [positions[i]] if i >= 0 else []
            if in_table is not None:
                found.append(in_table.before(min(after, first)))
            return max((f for f in found if f is not None), default=None)
        i = bisect.bisect_right(positions, after)
        found = [positions[i]] if i < len(positions) else []
        if in_table is not None and after + 1 < first:
            found.append(in_table.after(max(after + 1, 0), first))
        return min((f for f in found if f is not None), default=None)

    def _table_positions(self, kind: str) -> Optional[side_index.Positions]:
        """The side index's envelopes of a type jump's kind (None: no index)."""
        return self.table.of_type(TYPE_JUMPS[kind]) if self.table is not None else None

    def _positions_of(self, kind: str, op_ids: List[str]) -> List[int]:
        """The dispatches of `op_ids` in order (failed ones settled after the side index's
        end; pending ones by load's verdict), found by id once for each count of them and
        of envelopes."""
        known = self._found_by_id.get(kind)
        if known is None or known[0] != (self.count, len(op_ids)):
            found = (self.index_of_id(op_id, scan=False) for op_id in op_ids)
            known = ((self.count, len(op_ids)), sorted(i for i in found if i is not None))
            self._found_by_id[kind] = known
        return known[1]

    def _history_positions(self, kind: str) -> Sequence[int]:
        """Not from every operation: on a native read each would be built (and kept)."""
        history = self.history
        assert history is not None
        if kind == "failed":
            return self.failed
        found = (history.index_of(op_id) for op_id in history.state.pending)  # the pending ones
        return sorted(i for i in found if i is not None)

    def removals(self) -> Dict[str, Tuple[int, str]]:
        """For each compaction and rewind: how many messages it removed, and the first of
        them (where its badge links); empty until the history is read. Counted once for
        each length of the history (``History.removal_counts``: after a native read the
        core's tally of the read, 15 ms for the 10 GB transcript, and what was fed since)."""
        with self.lock:
            history = self.history
            if history is None:
                return {}
            key = (id(history), history.count)
            if self._removals[0] != key:
                self._removals = (key, history.removal_counts())
            return self._removals[1]

    # -- locate and search: the jumps and the search box ----------------------------------

    def locate_id(self, envelope_id: str) -> Dict[str, Any]:
        """Where the envelope `envelope_id` is, live or not: ``{"i", "live"}`` (``live``:
        its position in the live conversation), or ``{"wait": true}`` while the offsets
        its line is placed by are being read (a moment)."""
        if self.history is None and not self.ready["index"]:
            return {"i": None, "wait": True}
        i = self.index_of_id(envelope_id)
        live = None
        state = self.live()
        if state is not None and i is not None:
            with self.lock:
                live = state.position(envelope_id)
        return {"i": i, "live": live}

    def locate_time(self, text: str) -> Dict[str, Any]:
        """``{"i"}``: the first envelope in file order at or after the time `text` (UTC,
        ``YYYY-MM-DD[THH:MM[:SS[.ffffff]]][Z]``; Problem 400 otherwise), or ``{"wait": true}``."""
        key = time_key(_normal_time(text))
        if key < 0:
            raise Problem(400, "time is YYYY-MM-DDTHH:MM[:SS[.ffffff]][Z] (UTC)")
        if not self.ready["index"]:
            return {"i": None, "wait": True}
        return {"i": self.index_of_time(key)}

    def locate_kind(self, kind: str, after: int, backwards: bool = False) -> Dict[str, Any]:
        """``{"i"}``: the first envelope of `kind` (one of ``JUMPS``; Problem 400 otherwise)
        after position `after` (the last before it, `backwards`), or ``{"wait": true}``
        while the index (or, for failed and pending calls without a side index, the
        history) is being read."""
        if kind not in JUMPS:
            raise Problem(400, f"kind is one of {', '.join(JUMPS)}")
        if not self.ready["index"]:
            return {"i": None, "wait": True}
        if kind not in TYPE_JUMPS and self.history is None and not self._jumps_without_history(kind):
            return {"i": None, "wait": True}
        return {"i": self.next_of(kind, after, backwards)}

    def _jumps_without_history(self, kind: str) -> bool:
        """Whether `kind`'s jumps are known before the history: failed calls from a side
        index, pending ones from load's verdict."""
        if kind == "pending":  # the verdict's, of the envelopes shown (a follow since: the history's)
            return self.pending_ids is not None and self._verdict_count == self.count
        return self.table is not None

    def search(self, text: str, ignore_case: bool = True, extras: bool = False,
               start: int = 0) -> Optional[transcript_search.Reports]:
        """The streamed reports of a search of the whole file from byte `start`
        (``transcript_search.stream``); None while the index that places the hits is
        being read (ask again in a moment). Problem 400 for a text no line can hold."""
        needle = transcript_search.needle_of(text, ignore_case)
        if not self.ready["index"]:
            return None
        want = transcript_search.WITH_EXTRAS if extras else transcript_search.WITHOUT_EXTRAS
        return transcript_search.stream(self.path, self.end, self.indexes_of_offsets, needle, ignore_case, want,
                                        max(start, 0))

    def live(self) -> Optional[Any]:
        """The live conversation's fold state (``.ids``, ``.messages``): the history's;
        None until the history is read."""
        return self.history.state if self.history is not None else None

    @property
    def ready(self) -> Dict[str, bool]:
        return {"index": not self.preview and self.indexed >= self.count, "verdict": self.verdict is not None,
                "history": self.history is not None,
                "secrets": self.secrets is not None or not self.redactor.enabled}


class _Offsets:
    """The byte offsets of a side index's envelopes, bisectable (each read from its span)."""

    def __init__(self, spans: Sequence[Tuple[int, int, int]]) -> None:
        self._spans = spans

    def __len__(self) -> int:
        return len(self._spans)

    def __getitem__(self, i: int) -> int:
        return self._spans[i][1]


def _line_start_after(fd: int, at: int) -> int:
    """The start of the first line that starts at or after byte `at` (0 for `at` <= 0)."""
    if at <= 0:
        return 0
    while True:
        chunk = os.pread(fd, 64 << 10, at - 1)
        if not chunk:
            return at
        nl = chunk.find(b"\n")
        if nl != -1:
            return at + nl
        at += len(chunk)


def _normal_time(text: str) -> str:
    """A time as a person types it (a date alone, no seconds, a space) as an envelope's."""
    text = text.strip().replace(" ", "T")
    if len(text) == 10:
        text += "T00:00"
    if len(text) == 16:
        text += ":00"
    return text


def read_history(path: str, end: int, identity: Optional[Tuple[int, int]]) -> History:
    """The history, without payloads, of what the peek that ended at `end` read from the
    file `identity` (empty where the path names another file by now)."""
    return History.read(path, keep_payloads=False, end=end, identity=identity)


def _find(values: "array[int]", value: int, start: int) -> int:
    """``values.index(value, start)`` (its start parameter is Python 3.10's)."""
    try:
        return values.index(value, start)
    except TypeError:
        return start + values[start:].index(value)


def _slice(seq: Sequence[Any], lo: int, hi: int) -> Sequence[Any]:
    return seq[lo:hi] if (lo, hi) != (0, len(seq)) else seq

