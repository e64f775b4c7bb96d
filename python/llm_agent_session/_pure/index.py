"""A load's replay through a side index, in pure Python: the twin of ``rust/index/``
(``track``, ``build``, ``check``, ``resume``, ``replay``), result for result and byte
for byte (``tests/test_index_differential.py``).

The index is checked (it names this file, unchanged in place since; its head, last line
and sampled lines hash as they did), the fold's state is rebuilt from its checkpoint
(the few lines it names read back), and only the bytes after its end are folded, as
``_pure/replay.py`` folds every line; an appended id is looked for among the indexed
ones by fingerprint, each match confirmed by reading its line. Without a usable index
the whole file is read. Either way the state, the events and any failure are those of
a whole read, and the index of the file as read is made when asked for.
"""

from __future__ import annotations

import io
import os
import struct
import sys
from array import array
from typing import Any, Dict, Iterator, List, Mapping, MutableMapping, Optional, Sequence, Set, Tuple, cast

from .. import _platform
from .._compaction import compacted
from .._core import IndexedReplay, IndexTable, SurveyCounts
from .._events import LazyTexts, _copy, _ListLike
from .._fold import FoldProblem, FoldState, dispatched_operation, duplicate_reason, message_from_payload
from .._times import TIME_BLOCK, blocks_of, merged_blocks, time_key
from ..errors import CoreFailure
from ..messages import Event, Message, freeze
from .index_format import (
    HEAD_BYTES,
    MAX_KIND_TEXT,
    MAX_KINDS,
    OTHER_KIND,
    Checkpoint,
    bitmap,
    bits_of,
    Identity,
    IndexData,
    Invalid,
    LineRef,
    crc32,
    decode,
    encode,
    fingerprint,
    random_key,
    sample_events,
)
from .lines import LineProblem, is_blank, parse_envelope
from .tail_check import read_span

Stat = Tuple[int, int, int, int, int]


class _Unusable(Exception):
    """Why an index cannot serve: the file is then read whole."""


# --- the indexed envelopes, read back on demand ---------------------------------------


class _Reader:
    """A read-only descriptor of the transcript of its own (never the session's, whose
    lock it would keep alive after ``close``), and the lines of every envelope."""

    def __init__(self, file: io.FileIO, lines: List[LineRef]) -> None:
        self.file = file
        self.lines = lines

    def line(self, e: int) -> bytes:
        offset, length = self.lines[e]
        raw = _platform.pread(self.file.fileno(), length, offset)
        if len(raw) < length:
            raise ValueError("the transcript is shorter than when it was read (truncated under a lazy read)")
        return raw

    def envelope(self, e: int) -> Tuple[str, str, str, Dict[str, Any]]:
        try:
            return parse_envelope(self.line(e), self.lines[e][0])
        except LineProblem as p:
            raise ValueError(
                f"the transcript changed under a lazy read: the line at byte {self.lines[e][0]} is no longer "
                f"an envelope ({p.reason})"
            ) from None


def _reopen(fd: int, path: Optional[str]) -> Optional[io.FileIO]:
    """The file `fd` is open on, opened again read-only (as the native core's
    ``lazy::reopen``): by ``/proc/self/fd`` or by path, kept only if it is the same inode."""
    where = _platform.reopen_path(path) or f"/proc/self/fd/{fd}"
    try:
        file = io.FileIO(where, "rb")
    except OSError:
        if path is not None:
            return None
        # No path to reopen by and no /proc (unmounted): a duplicate of `fd` reads the
        # same file (the reader only preads), as the native core reads it then.
        try:
            file = io.FileIO(os.dup(fd), "rb")
        except OSError:
            return None
    try:
        mine, theirs = os.fstat(fd), os.fstat(file.fileno())
    except OSError:
        file.close()
        return None
    if (mine.st_dev, mine.st_ino) != (theirs.st_dev, theirs.st_ino):
        file.close()
        return None
    return file


class _Base:
    """What a resumed fold knows of the indexed envelopes beyond its checkpoint."""

    def __init__(self, index: IndexData, reader: _Reader, known: Dict[str, int]) -> None:
        self.count = len(index.events)
        self.key = index.key
        self.fingerprints = index.fingerprints
        self.settled = index.fold.settled  # a bit an envelope
        self.sections = list(index.fold.sections)
        self.known = known  # the ids of the indexed live messages and pending operations
        self.reader = reader
        self._by_fp: Optional[Dict[int, List[int]]] = None

    def find(self, id_: str) -> Optional[int]:
        """The indexed envelope with this id, by fingerprint, confirmed by its line."""
        e = self.known.get(id_)
        if e is not None:
            return e
        if self._by_fp is None:
            by_fp: Dict[int, List[int]] = {}
            for i, f in enumerate(self.fingerprints):
                by_fp.setdefault(f, []).append(i)
            self._by_fp = by_fp
        for e in self._by_fp.get(fingerprint(self.key, id_), ()):
            if self.reader.envelope(e)[0] == id_:
                return e
        return None

    def section(self, digest: str) -> Optional[Tuple[int, str, str]]:
        """(envelope, text, line id) of the indexed line that carries `digest`'s text first."""
        fp = fingerprint(self.key, digest)
        for f, e in self.sections:
            if f != fp:
                continue
            id_, _, _, payload = self.reader.envelope(e)
            for section in _sections(payload):
                if section[0] == digest:
                    return e, section[1], id_
        return None

    def digests(self) -> List[str]:
        out: Dict[str, None] = {}
        for fp, e in self.sections:
            for digest, _ in _sections(self.reader.envelope(e)[3]):
                if fingerprint(self.key, digest) == fp and digest not in out:
                    out[digest] = None
                    break
        return list(out)


def _sections(payload: Dict[str, Any]) -> Iterator[Tuple[str, str]]:
    """The (digest, text) of a run-context payload's sections that carry their text."""
    sections = payload.get("sections")
    for s in sections if isinstance(sections, list) else ():
        if isinstance(s, dict) and isinstance(s.get("digest"), str) and isinstance(s.get("text"), str):
            yield s["digest"], s["text"]


class _EnvelopeAt(Mapping[str, int]):
    """``FoldState.envelope_at`` after a load through an index: the ids read since, then
    the indexed ones by fingerprint (``Session.message_extra`` and the tool bookkeeping
    ask it for a few ids)."""

    def __init__(self, seen: Dict[str, int], base: _Base) -> None:
        self._seen = seen
        self._base = base

    def get(self, id_: str, default: Any = None) -> Any:
        if not isinstance(id_, str):
            return default
        e = self._seen.get(id_)
        if e is None:
            e = self._base.find(id_)
        return default if e is None else e

    def __getitem__(self, id_: str) -> int:
        e = self.get(id_)
        if e is None:
            raise KeyError(id_)
        return int(e)

    def __iter__(self) -> Iterator[str]:
        for e in range(self._base.count):
            yield self._base.reader.envelope(e)[0]
        yield from self._seen

    def __len__(self) -> int:
        return self._base.count + len(self._seen)


class _Settled:
    """``FoldState.settled`` after a load through an index (``_fold.SettledOps``)."""

    def __init__(self, base: _Base) -> None:
        self._base = base
        self._later: Set[str] = set()

    def __contains__(self, op_id: object) -> bool:
        if not isinstance(op_id, str):
            return False
        if op_id in self._later:
            return True
        e = self._base.find(op_id)
        return e is not None and bool(self._base.settled[e // 8] & (1 << (e % 8)))

    def __iter__(self) -> Iterator[str]:
        for e in bits_of(self._base.settled):
            yield self._base.reader.envelope(e)[0]
        yield from self._later

    def __len__(self) -> int:
        return sum(bin(b).count("1") for b in self._base.settled) + len(self._later)

    def add(self, op_id: str) -> None:
        if op_id not in self:
            self._later.add(op_id)


class _SectionIndex:
    """The indexed section texts for ``LazyTexts`` (``_native.SectionTexts``'s twin)."""

    def __init__(self, base: _Base) -> None:
        self._base = base

    def __len__(self) -> int:
        return len(self._base.sections)

    def keys(self) -> List[str]:
        return self._base.digests()

    def text(self, digest: str) -> Optional[str]:
        found = self._base.section(digest)
        return None if found is None else found[1]

    def line_of(self, digest: str) -> Optional[str]:
        found = self._base.section(digest)
        return None if found is None else found[2]


class _Events(_ListLike[Event]):
    """``events`` after a load through an index: each indexed envelope built from its line
    on access, then the Events read since (copies: they are the session's)."""

    def __init__(self, reader: _Reader, count: int, read: List[Event]) -> None:
        self._reader = reader
        self._count = count
        self._read = read

    def __len__(self) -> int:
        return self._count + len(self._read)

    def _at(self, i: int) -> Event:
        if i >= self._count:
            return _copy(self._read[i - self._count])
        id_, type_, ts, payload = self._reader.envelope(i)
        return Event(id_, type_, ts, 1, payload)


# --- the fold, noting what an index needs -----------------------------------------------


class _Track:
    """What an index needs of each envelope beyond the fold (``rust/index/track.rs``)."""

    def __init__(self, kind_table: Sequence[Tuple[str, Optional[str]]], first: int, next_offset: int, next_line: int) -> None:
        self.kind_table = list(kind_table)
        self.codes = {k: i for i, k in enumerate(self.kind_table)}
        self.kinds = bytearray()
        self.gaps: List[Tuple[int, int, int]] = []
        self.fingerprints = array("I")
        self.rewound: List[Tuple[int, int]] = []
        # The largest time key of each block from the one `first` is in; the failed ones.
        self.times: List[int] = []
        self.failed: List[int] = []
        self.first = first
        self.next_offset = next_offset
        self.next_line = next_line
        self.first_line = next_line

    def note(
        self, key: Tuple[int, int], id_: str, type_: str, role: Optional[str], ts: str, offset: int, length: int,
        line: int,
    ) -> None:
        event = self.first + len(self.kinds)
        self.kinds.append(self._code(type_, role))
        if offset != self.next_offset or line != self.next_line:
            self.gaps.append((event, max(offset - self.next_offset, 0), max(line - self.next_line, 0)))
        self.next_offset = offset + length + 1
        self.next_line = line + 1
        self.fingerprints.append(fingerprint(key, id_))
        block = event // TIME_BLOCK - self.first // TIME_BLOCK
        time = time_key(ts)
        if block < len(self.times):
            self.times[block] = max(self.times[block], time)
        else:
            self.times.append(time)

    def _code(self, type_: str, role: Optional[str]) -> int:
        kind = (type_, role)
        code = self.codes.get(kind)
        if code is not None:
            return code
        fits = len(type_.encode("utf-8")) <= MAX_KIND_TEXT and (role is None or len(role.encode("utf-8")) <= MAX_KIND_TEXT)
        if len(self.kind_table) >= MAX_KINDS or not fits:
            return OTHER_KIND
        self.codes[kind] = len(self.kind_table)
        self.kind_table.append(kind)
        return len(self.kind_table) - 1

    def line_of(self, event: int) -> int:
        extra = sum(g[2] for g in self.gaps if g[0] <= event)
        return self.first_line + (event - self.first) + extra


class _Fold:
    """``_pure/replay._replay``'s loop over the lines of one range, from a given state
    (an index's, or a new one), noting what an index needs."""

    def __init__(self, key: Tuple[int, int], state: FoldState, base: Optional[_Base], track: Optional[_Track]) -> None:
        self.key = key
        self.state = state
        self.base = base
        self.first = 0 if base is None else base.count
        self.track = track
        self.seen: Dict[str, int] = {}  # id -> index in events, of the envelopes read
        self.events: List[Event] = []
        self.refs: List[LineRef] = []
        self.grants: Optional[int] = None
        self.stub_of: Dict[str, int] = {}  # live message id -> the elision whose stub it has
        self.settled: List[int] = []  # the dispatches settled since
        self.lines = 0

    def event_of(self, id_: str) -> Optional[int]:
        e = self.seen.get(id_)
        if e is None and self.base is not None:
            e = self.base.known.get(id_)
        return e

    def read(self, buf: bytes, base_offset: int, lines_before: int) -> None:
        """Fold every line of `buf` (file bytes from `base_offset`), numbered after `lines_before`."""
        state, seen, events, size = self.state, self.seen, self.events, len(buf)
        pos = 0
        line_no = lines_before
        find = buf.find
        while pos < size:
            nl = find(b"\n", pos)
            end = size if nl == -1 else nl
            line_no += 1
            raw = buf[pos:end]
            offset = base_offset + pos
            if not is_blank(raw):
                try:
                    id_, type_, ts, payload = parse_envelope(raw, offset)
                except LineProblem as p:
                    if not events and self.base is None and p.kind != "version":
                        raise CoreFailure(
                            "not-a-transcript", line_no, offset, f"the first line is not a session-meta envelope ({p.reason})"
                        ) from None
                    raise CoreFailure(p.kind, line_no, offset, p.reason) from None
                if not events and self.base is None:
                    if type_ != "session-meta":
                        raise CoreFailure(
                            "not-a-transcript", line_no, offset, f"the first line is a {type_[:40]} envelope, not a session-meta"
                        )
                    state.meta = payload
                if id_ in seen or (self.base is not None and self.base.find(id_) is not None):
                    raise CoreFailure("corrupt", line_no, offset, duplicate_reason(id_))
                event = self.first + len(events)
                seen[id_] = event
                try:
                    state.check(type_, payload)
                except FoldProblem as p:
                    raise CoreFailure(p.kind, line_no, offset, p.reason) from None
                self._note(event, id_, type_, payload)
                if self.track is not None:
                    role = payload["role"] if type_ == "message" else None
                    self.track.note(self.key, id_, type_, role, ts, offset, end - pos, line_no)
                state.apply(id_, type_, ts, payload)
                events.append(Event(id_, type_, ts, 1, payload))
                self.refs.append((offset, end - pos))
            pos = end + 1
        self.lines = line_no - lines_before

    def _note(self, event: int, id_: str, type_: str, payload: Dict[str, Any]) -> None:
        """What the fold's state does not keep of an envelope it is about to apply."""
        state = self.state
        if type_ == "grants":
            self.grants = event
        elif type_ == "elision":
            for item in payload["items"]:
                self.stub_of[item["id"]] = event
        elif type_ == "tool-settled":
            dispatched = self.event_of(payload["op-id"])
            if dispatched is not None:
                self.settled.append(dispatched)
                if self.track is not None and payload["outcome"] == "failed":
                    self.track.failed.append(dispatched)
        elif type_ == "rewind" and self.track is not None:
            to_id = payload["to-id"]
            keep = 0 if to_id is None else (state.position(to_id) or 0) + 1
            self.track.rewound.extend((self._live_event(i), event) for i in state.ids[keep:])

    def _live_event(self, id_: str) -> int:
        e = self.event_of(id_)
        return -1 if e is None else e


# --- an index of what a fold read ---------------------------------------------------------


def _crc_of(fd: int, start: int, end: int) -> Optional[int]:
    data = read_span(fd, start, end)
    return crc32(data) if len(data) == end - start else None


def _build(
    fold: _Fold, prior: Optional[IndexData], lines: List[LineRef], fd: int, size: int, now: Stat,
    secret: Tuple[int, int],
) -> Optional[bytes]:
    """``rust/index/build.rs``: the index of what `fold` read (after `prior`'s envelopes)."""
    track = fold.track
    if track is None or not lines:
        return None
    last_offset, last_len = lines[-1]
    after_last = last_offset + last_len
    tail = read_span(fd, after_last, size)
    newlines = tail.count(b"\n")
    if not newlines:
        return None
    end = after_last + tail.rfind(b"\n") + 1
    last_line = track.line_of(len(lines) - 1) if track.kinds else (prior.last_line() if prior else 0)
    samples = []
    for e in sample_events(len(lines)):
        offset, length = lines[e]
        crc = _crc_of(fd, offset, offset + length + 1)
        if crc is None:
            return None
        samples.append((e, crc))
    head, last = _crc_of(fd, 0, min(end, HEAD_BYTES)), _crc_of(fd, last_offset, end)
    if head is None or last is None:
        return None
    state = fold.state
    if prior is not None and fold.base is not None:
        kinds = bytearray(prior.kinds)
        gaps = list(prior.gaps)
        fingerprints = array("I", fold.base.fingerprints)
        sections = list(fold.base.sections)
        rewound = list(prior.fold.rewound)
        settled = bitmap(len(lines), iter(list(bits_of(prior.fold.settled)) + fold.settled))
        failed = bitmap(len(lines), iter(list(bits_of(prior.failed)) + track.failed))
        times = merged_blocks(prior.times, track.first, track.times)
        added = state.section_lines._added if isinstance(state.section_lines, LazyTexts) else {}
    else:
        kinds, gaps, fingerprints, sections, rewound = bytearray(), [], array("I"), [], []
        settled = bitmap(len(lines), iter(fold.settled))
        failed = bitmap(len(lines), iter(track.failed))
        times = list(track.times)
        added = dict(state.section_lines)
    kinds += track.kinds
    gaps += track.gaps
    fingerprints += track.fingerprints
    rewound += track.rewound
    for digest, line_id in added.items():
        sections.append((fingerprint(fold.key, digest), fold._live_event(line_id)))
    if len(kinds) != len(lines) or len(fingerprints) != len(lines) or len(times) != blocks_of(len(lines)):
        return None
    stub_of = fold.stub_of
    live = [(fold._live_event(id_), stub_of.get(id_)) for id_ in state.ids]
    pending = [(fold._live_event(op_id), op.state == "result-recorded") for op_id, op in state.pending.items()]
    index = IndexData(
        key=fold.key,
        identity=Identity(*now),
        end=end,
        lines=last_line + newlines - 1,
        head_crc=head,
        last_crc=last,
        kind_table=track.kind_table,
        kinds=kinds,
        events=lines,
        gaps=gaps,
        fingerprints=fingerprints,
        samples=samples,
        fold=Checkpoint(
            grants=fold.grants, live=live, pending=pending, settled=settled, sections=sections, rewound=rewound,
        ),
        times=times,
        failed=failed,
    )
    return encode(index, secret)


# --- is it still the file's? ----------------------------------------------------------------


def _identity_problem(index: IndexData, now: Stat) -> Optional[str]:
    """``rust/index/check.rs::identity_problem``."""
    then = index.identity
    dev, ino, size, mtime, ctime = now
    if (then.dev, then.ino) != (dev, ino):
        return "it describes another file"
    if size < index.end:
        return "the file is shorter than the part indexed"
    if size == then.size:
        if (mtime, ctime) != (then.mtime_ns, then.ctime_ns):
            return "the file was changed in place since it was indexed"
    elif size < then.size:
        return "the file shrank since it was indexed"
    return None


def _content_problem(index: IndexData, fd: int, size: int) -> Optional[str]:
    """``rust/index/check.rs::content_problem``."""
    if size < index.end:
        return "the file is shorter than the part indexed"
    if _crc_of(fd, 0, min(index.end, HEAD_BYTES)) != index.head_crc:
        return "the head of the file changed since it was indexed"
    if not index.events:
        return "it holds no envelope"
    if _crc_of(fd, index.events[-1][0], index.end) != index.last_crc:
        return "the last indexed line changed since it was indexed"
    for e, crc in index.samples:
        offset, length = index.events[e]
        if _crc_of(fd, offset, offset + length + 1) != crc:
            return "a sampled line changed since it was indexed"
    return None


# --- the fold rebuilt from an index's checkpoint ----------------------------------------------


def _rebuild(index: IndexData, reader: _Reader) -> Tuple[FoldState, _Base, Dict[str, int], Dict[str, int]]:
    """``rust/index/resume.rs::rebuild``: the state the checkpoint describes."""
    known: Dict[str, int] = {}
    stubs: Dict[str, int] = {}
    envelope = reader.envelope

    def read(e: int) -> Tuple[str, str, str, Dict[str, Any]]:
        try:
            return envelope(e)
        except ValueError:
            raise _Unusable("its checkpoint names a line that is no envelope") from None

    _, type_, _, meta = read(0)
    if type_ != "session-meta":
        raise _Unusable("its checkpoint names a first line that is not a session-meta")
    ids: List[str] = []
    messages: List[Message] = []
    for source, stub in index.fold.live:
        id_, type_, _, payload = read(source)
        if type_ == "message" and isinstance(payload.get("role"), str):
            message = message_from_payload(payload)._frozen()
        elif (
            type_ == "compaction"
            and isinstance(payload.get("summary"), str)
            and isinstance(payload.get("replaces-through-id"), str)
        ):
            message = Message("user", payload["summary"])
        else:
            raise _Unusable("its checkpoint names a live message that is neither a message nor a summary")
        if stub is not None:
            _, stub_type, _, stub_payload = read(stub)
            items = stub_payload.get("items") if stub_type == "elision" else None
            named = [
                item for item in (items if isinstance(items, list) else ())
                if isinstance(item, dict) and item.get("id") == id_ and "stub" in item
            ]
            if not named:
                raise _Unusable("its checkpoint names an elision that does not name the message")
            message = message.with_content(freeze(named[-1]["stub"]))
            stubs[id_] = stub
        if id_ in known:
            raise _Unusable("its checkpoint lists one live message twice")
        known[id_] = source
        ids.append(id_)
        messages.append(message)
    grants: Dict[str, Any] = {}
    if index.fold.grants is not None:
        _, type_, _, payload = read(index.fold.grants)
        if type_ != "grants" or not isinstance(payload.get("grants"), dict):
            raise _Unusable("its checkpoint names a grants line that is not one")
        grants = payload["grants"]
    pending = []
    for e, recorded in index.fold.pending:
        op_id, type_, ts, payload = read(e)
        if type_ != "tool-dispatched" or not isinstance(payload.get("call-id"), str) or not isinstance(payload.get("tool"), str):
            raise _Unusable("its checkpoint names a pending operation that is no dispatch")
        if op_id in known:
            raise _Unusable("its checkpoint lists one envelope twice")
        known[op_id] = e
        pending.append(dispatched_operation(op_id, ts, payload, "result-recorded" if recorded else "dispatched"))
    base = _Base(index, reader, known)
    seen: Dict[str, int] = {}
    sections = _SectionIndex(base)
    state = FoldState.from_parts(
        meta=meta,
        ids=ids,
        messages=messages,
        grants=grants,
        pending=pending,
        settled=_Settled(base),
        sections=cast(MutableMapping[str, str], LazyTexts(sections, sections.text)),
        section_lines=cast(MutableMapping[str, str], LazyTexts(sections, sections.line_of)),
        envelope_at=_EnvelopeAt(seen, base),
    )
    return state, base, seen, stubs


# --- the core's entry point -------------------------------------------------------------------


def make_index(
    fd: int,
    size: int,
    then: Stat,
    now: Stat,
    secret: Tuple[int, int],
    index_fd: Optional[int] = None,
    index_max: int = 0,
    key: Optional[Tuple[int, int]] = None,
) -> Tuple[Optional[bytes], str]:
    """``Core.make_index``: ``replay_indexed``'s index, its state left unused."""
    done = replay_indexed(fd, size, then, now, secret, index_fd, index_max, write=True, key=key)
    return done.index_bytes, done.used


def _read_index(fd: int, most: int) -> Optional[bytes]:
    """The bytes of the index file open at `fd`, None when it holds more than `most`."""
    size = os.fstat(fd).st_size
    if size > most:
        return None
    return read_span(fd, 0, size)


def replay_indexed(
    fd: int,
    size: int,
    then: Stat,
    now: Stat,
    secret: Tuple[int, int],
    index_fd: Optional[int] = None,
    index_max: int = 0,
    write: bool = False,
    extend: bool = True,
    key: Optional[Tuple[int, int]] = None,
    path: Optional[str] = None,
) -> IndexedReplay:
    """``Core.replay_indexed``: the pure twin of ``_native.replay_indexed``."""
    size = min(size, os.fstat(fd).st_size)
    file = _reopen(fd, path) if index_fd is not None else None
    index = _read_index(index_fd, index_max) if index_fd is not None and file is not None else None
    used = "none"
    if index is not None and file is not None:
        try:
            return _resumed(fd, size, index, then, now, write and extend, file, secret)
        except (Invalid, _Unusable) as why:
            used = f"ignored: {why}"
    fold_key = key if key is not None else random_key()
    state = FoldState()
    track = _Track([], 0, 0, 1) if write else None
    fold = _Fold(fold_key, state, None, track)
    buf = read_span(fd, 0, size)
    fold.read(buf, 0, 0)
    if not fold.events:
        reason = "the file is empty" if len(buf) == 0 else "the file holds only blank lines"
        raise CoreFailure("not-a-transcript", 0, 0, reason)
    state.envelope_at = fold.seen
    new_index = _build(fold, None, fold.refs, fd, size, now, secret) if write else None
    return IndexedReplay(state=state, events=fold.events, index_bytes=new_index, used=used, read=size)


def _resumed(
    fd: int, size: int, data: bytes, then: Stat, now: Stat, write: bool, file: io.FileIO, secret: Tuple[int, int]
) -> IndexedReplay:
    index = decode(data, secret)
    why = _identity_problem(index, then) or _content_problem(index, fd, size)
    if why is not None:
        raise _Unusable(why)
    reader = _Reader(file, index.events)
    state, base, seen, stubs = _rebuild(index, reader)
    last_offset, last_len = index.events[-1]
    track = _Track(index.kind_table, len(index.events), last_offset + last_len + 1, index.last_line() + 1)
    fold = _Fold(index.key, state, base, track)
    fold.seen = seen
    fold.stub_of = stubs
    fold.grants = index.fold.grants
    if size > index.end:
        fold.read(read_span(fd, index.end, size), index.end, index.lines)
    # Every envelope's line, the indexed ones first (shared with what reads them back).
    reader.lines = index.events + fold.refs
    events = _Events(reader, base.count, fold.events)
    grew = size > index.end or tuple(now) != index.identity.as_tuple()
    new_index = _build(fold, index, reader.lines, fd, size, now, secret) if write and grew else None
    return IndexedReplay(
        state=state, events=events, index_bytes=new_index, used="used", read=max(size - index.end, 0)
    )


# --- the table a reader that does not fold takes ---------------------------------------------


def index_table(
    fd: int,
    size: int,
    then: Stat,
    secret: Tuple[int, int],
    index_fd: int,
    index_max: int,
    want_survey: bool = False,
    path: Optional[str] = None,
) -> Optional[IndexTable]:
    """``Core.index_table``: the pure twin of ``_native.index_table``
    (``rust/index/table.rs``)."""
    file = _reopen(fd, path)
    data = _read_index(index_fd, index_max)
    if file is None or data is None:
        return None
    size = min(size, os.fstat(fd).st_size)
    try:
        index = decode(data, secret)
    except Invalid:
        return None
    if _identity_problem(index, then) or _content_problem(index, fd, size):
        return None
    reader = _Reader(file, index.events)
    kinds = bytes(index.kinds)
    table = index.kind_table
    types: Dict[str, List[int]] = {}
    roles: Dict[str, int] = {}
    messages: List[int] = []
    for e, code in enumerate(kinds):
        if code < len(table):
            type_, role = table[code]
        else:
            try:
                _, type_, _, payload = reader.envelope(e)
            except ValueError:
                return None
            role = payload.get("role") if type_ == "message" else None
            role = role if isinstance(role, str) else None
        if want_survey:
            tally = types.setdefault(type_, [0, 0])
            tally[0] += 1
            tally[1] += index.events[e][1] + 1
            if role is not None:
                roles[role] = roles.get(role, 0) + 1
        if role is not None:
            messages.append(e)
    _, type_, _, meta = reader.envelope(0)
    lines = index.line_numbers()
    survey = None
    if want_survey:
        survey = SurveyCounts(
            types=[(t, n, b) for t, (n, b) in types.items()],
            roles=list(roles.items()),
            live=len(index.fold.live),
            problem=None,
            open=list(index.fold.pending),
            rewound=list(index.fold.rewound),
        )
    return IndexTable(
        events=_Events(reader, len(index.events), []),
        spans=[(line, offset, length) for line, (offset, length) in zip(lines, index.events)],
        messages=_PeekMessages(reader, messages),
        kinds=kinds,
        kind_table=list(table),
        end=index.end,
        lines=index.lines,
        meta=meta,
        survey=survey,
        times=struct.pack(f"<{len(index.times)}q", *index.times),
        failed=bytes(index.failed),
        fingerprints=_little_endian(index.fingerprints),
        id_key=index.key,
    )


def _little_endian(values: "array[int]") -> bytes:
    if sys.byteorder == "little":
        return values.tobytes()
    swapped = array(values.typecode, values)
    swapped.byteswap()
    return swapped.tobytes()


class _PeekMessages(_ListLike[Message]):
    """Peek's messages of the indexed envelopes: each built from its line on access."""

    def __init__(self, reader: _Reader, events: List[int]) -> None:
        self._reader = reader
        self._events = events

    def __len__(self) -> int:
        return len(self._events)

    def _at(self, i: int) -> Message:
        return message_from_payload(self._reader.envelope(self._events[i])[3])
