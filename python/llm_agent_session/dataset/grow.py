"""A transcript that grew: only the bytes it grew by are read, when nothing before them changes.

A running agent appends; re-reading a 1 GB transcript for the last megabyte costs seconds.
So a whole export of a big clean transcript keeps, in its manifest entry, what the next
run needs to go on from its end (the grow state): its ``sessions`` row, where its lines
and message ordinals stopped, its open operations (not settled, or not answered by a tool
message), the grants in force, a digest of both ends of the bytes read, and a side file
of the hashes of its envelope ids and response ids (``DatasetPass.id_digest``).

The next run reads only the new bytes (the core's dataset pass from ``start``) and takes
that path only where it gives the rows a whole export would: the exported bytes' ends are
unchanged (same file, same first and last 64 KiB), the new lines load cleanly (the core's
fold refuses only settles of open operations, which ``FoldState.check``, load's own rule,
then accepts) and reuse no earlier id, envelope id or response id (a new line of a response
seen before would move the line its usage is counted at, ``usage.py``: the side file keeps
both kinds), and the only rows written before that they change are those of open
operations (settled, answered: patched where they are). So the token totals of the new
lines add to the sessions row's without a response counted twice. A new line that
would change another (a compaction, a rewind, an elision of an earlier message, grants
after earlier ones, a first model) sends the transcript back to a whole export, as does
growth past ``GROW_MAX`` since the last whole one. The new rows go to the partition's
appendix bucket (``layout.py``); the ``sessions`` row is replaced where it is.
"""

from __future__ import annotations

import array
import bisect
import dataclasses
import hashlib
import os
import sys
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, Iterator, List, Optional, Tuple, cast

from .. import _backend, _platform
from .._core import DatasetSummary
from .._files import open_to_read
from ..errors import CoreFailure
from .batches import chunk_batches, grants_dictionary
from .layout import APPENDIX, VERSIONS, bucket_key, ids_path
from .manifest import Exported, GrowState, OpenOperation, SessionRow
from .sessions import Totals, session_batch, with_totals
from .sources import Head, Source

#: A transcript this big or bigger keeps its state for a later run (smaller ones are cheap
#: to export again whole, and a fleet of them would leave a side file each).
GROW_MIN = 8 << 20
#: Growth past this since the last whole export: the transcript is exported whole again
#: (what the appendix holds of one transcript stays bounded).
GROW_MAX = 32 << 20
#: Open operations beyond this: no state is kept (each is carried from run to run).
OPEN_MAX = 10_000
#: The tool_calls columns a later settle or tool message changes.
PATCHED = ("outcome", "settled_id", "settled_at", "duration", "error", "reason", "answered", "answered_by")
PENDING = ("dispatched", "result-recorded")
#: Bytes digested at each end of the exported prefix.
ENDS = 64 << 10


def ends_digest(fd: int, size: int) -> str:
    """SHA-256 of the first and the last ``ENDS`` bytes of ``[0, size)``: what a re-run
    compares to see that the exported bytes are still there, without reading them all."""
    h = hashlib.sha256()
    for at in (0, max(0, size - ENDS)):
        want = min(ENDS, size - at)
        data = _platform.pread(fd, want, at)
        if len(data) != want:
            raise OSError(f"the file is shorter than {size} bytes")
        h.update(data)
    return h.hexdigest()


def _hashes(digest: bytes) -> "array.array[int]":
    """An id digest (8 bytes little-endian per hash) as integers."""
    ids = array.array("Q")
    ids.frombytes(digest)
    if sys.byteorder != "little":
        ids.byteswap()
    return ids


def read_ids(path: str) -> "array.array[int]":
    with open(path, "rb") as f:
        return _hashes(f.read())


def merge_ids(old: "array.array[int]", new: "array.array[int]") -> Optional[bytes]:
    """The sorted union of two sorted digests (``id_digest``), or None where a new hash is
    among the old ones: an id repeated, or (rarely) two ids with one hash; either way the
    transcript is exported whole, which decides."""
    out = array.array("Q")
    at = 0
    for h in new:
        i = bisect.bisect_left(old, h, at)
        if i < len(old) and old[i] == h:
            return None
        out.extend(old[at:i])
        out.append(h)
        at = i
    out.extend(old[at:])
    if sys.byteorder != "little":
        out.byteswap()
    return out.tobytes()


@dataclass(frozen=True)
class Settle:
    """A settle among the new lines of an operation open before: the tool_calls columns it sets."""

    outcome: str
    settled_id: str
    settled_at: Optional[int]
    duration: Optional[float]
    error: Optional[str]
    reason: Optional[str]


@dataclass(frozen=True)
class Patch:
    """What the new lines do to the tool_calls row of an operation open before."""

    outcome: Optional[str] = None  # its outcome now, where it changed
    settle: Optional[Settle] = None
    answered_by: Optional[str] = None  # the tool message that answered it, where one did

    def columns(self) -> Dict[str, object]:
        """The columns its row gets instead (``PATCHED``, those that change)."""
        out: Dict[str, object] = {}
        if self.outcome is not None:
            out["outcome"] = self.outcome
        if self.settle is not None:
            out.update(settled_id=self.settle.settled_id, settled_at=self.settle.settled_at,
                       duration=self.settle.duration, error=self.settle.error, reason=self.settle.reason)
        if self.answered_by is not None:
            out.update(answered=True, answered_by=self.answered_by)
        return out


@dataclass(frozen=True)
class Growth:
    """What reading a transcript's new bytes found, before any row is written."""

    start: int  # the bytes exported before
    stop: int  # the file's size now: the new bytes are [start, stop)
    session: SessionRow  # the new sessions row
    state: GrowState  # the new grow state (its `ids` name set by the caller)
    ids: bytes  # the new id digest
    rows: Dict[str, int]  # new rows per table
    grants_fill: Optional[Tuple[str, str]]  # (id, snapshot) in force for new dispatches, if any
    patches: Dict[str, Patch]  # op id -> what its tool_calls row gets instead
    patch_home: bool  # some of them are in the transcript's home bucket (else in the appendix)


@dataclass
class _Counted:
    """The new rows counted, the operations they leave open, the grants line in force among
    them, and whether a tool message among them names an open operation's call."""

    totals: Totals = field(default_factory=Totals)
    opened: List[OpenOperation] = field(default_factory=list)
    in_force: Optional[Tuple[str, str]] = None
    answers_open: bool = False


@dataclass(frozen=True)
class _NewLines:
    """The new bytes read, and found to give the rows a whole export would."""

    size: int
    summary: DatasetSummary
    ids: bytes  # the id digest, the new ids merged in
    counted: _Counted
    patches: Dict[str, Patch]
    ends: str  # ``ends_digest`` of the file now


def _eligible(entry: Exported, source: Source, extras: bool) -> Optional[GrowState]:
    state = entry.grow
    if state is None or entry.extras != extras or entry.verdict != "clean":
        return None
    if (entry.stamp.dev, entry.stamp.ino) != (source.dev, source.ino):
        return None  # another file now (a repair renames its copy into place)
    if not state.size < source.size <= state.base + GROW_MAX:
        return None
    return state


def read_growth(source: Source, entry: Exported, out: str, extras: bool, chunk: int, redact: bool = False
                ) -> Optional[Growth]:
    """The growth of `source` since `entry` (its manifest entry) was exported, checked as
    the module doc says; None where it must be exported whole. `redact`: also where the
    new bytes hold what the secret rules would mask (a whole export masks it)."""
    state = _eligible(entry, source, extras)
    if state is None:
        return None
    try:
        fd = open_to_read(source.path)
    except OSError:
        return None
    try:
        if redact and not _clean_growth(fd, state.size):
            return None
        new = _new_lines(fd, state, out, extras, chunk)
    finally:
        os.close(fd)
    return None if new is None else _grown(state, new)


def _clean_growth(fd: int, start: int) -> bool:
    """Whether what `fd` holds from `start` has nothing the secret rules would mask."""
    from ..secrets import Redactor

    return Redactor().clean(fd, start, os.fstat(fd).st_size)


def _new_lines(fd: int, state: GrowState, out: str, extras: bool, chunk: int) -> Optional[_NewLines]:
    """The bytes `fd` grew by since `state`, read and checked (module doc); None where the
    transcript must be exported whole."""
    size = os.fstat(fd).st_size
    start = state.size
    if size <= start or size > state.base + GROW_MAX:
        return None
    if _platform.pread(fd, 1, start - 1) != b"\n" or ends_digest(fd, start) != state.ends:
        return None
    core = _backend.core
    try:
        tail = core.tail_check(fd, size)
    except CoreFailure:
        return None
    if tail[0] != "clean":
        return None
    found = core.dataset_pass(fd, size, True, extras, chunk, start)
    summary = found.summary
    if summary.skipped or summary.first_type in (None, "session-meta"):
        return None
    if summary.grants and state.grants_count:
        return None  # the grants line in force until now would stop being so
    if summary.model is not None and state.session.model is None:
        return None  # every row's `model` would change
    if state.ids is None:
        return None
    try:
        old_ids = read_ids(ids_path(os.path.join(out, VERSIONS), state.ids))
    except OSError:
        return None
    ids = merge_ids(old_ids, _hashes(found.id_digest()))
    counted = _count(found, state, summary) if ids is not None else None
    if ids is None or counted is None:
        return None
    patches: Optional[Dict[str, Patch]] = {}
    if summary.refused or counted.answers_open:
        patches = _open_operations(core.scan(fd, start, size, True).events, state, summary.refused)
    if patches is None:
        return None
    return _NewLines(size, summary, ids, counted, patches, ends_digest(fd, size))


def _grown(state: GrowState, new: _NewLines) -> Optional[Growth]:
    """The growth the new lines make of `state`: the new sessions row and grow state."""
    totals, summary = new.counted.totals, new.summary
    open_now = []
    for op in state.open:
        outcome, answered = op.outcome, op.answered
        patch = new.patches.get(op.op_id)
        if patch is not None:
            outcome = patch.outcome or outcome
            totals.moved(op.outcome, outcome)
            answered = answered or patch.answered_by is not None
        if outcome in PENDING or not answered:
            open_now.append(dataclasses.replace(op, outcome=outcome, answered=answered))
    s = state.session
    first_ts = [t for t in (s.first_ts, summary.first_ts) if t is not None]
    last_ts = [t for t in (s.last_ts, summary.last_ts) if t is not None]
    session = with_totals(dataclasses.replace(
        s, bytes=new.size, envelopes=s.envelopes + summary.envelopes, elisions=s.elisions + summary.elisions,
        first_ts=min(first_ts) if first_ts else None, last_ts=max(last_ts) if last_ts else None), totals)
    rows = totals.rows
    in_force = new.counted.in_force
    grown = dataclasses.replace(
        state, size=new.size, ends=new.ends, lines=state.lines + summary.lines,
        messages=state.messages + rows["messages"], session=session, open=tuple(open_now + new.counted.opened),
        in_force=in_force if in_force is not None else state.in_force, grants_count=state.grants_count + rows["grants"])
    if len(grown.open) > OPEN_MAX:
        return None
    fill = state.in_force if not summary.grants else None
    home = {op.op_id for op in state.open if op.home}
    return Growth(state.size, new.size, session, grown, new.ids, rows, fill, new.patches,
                  any(op_id in home for op_id in new.patches))


def _open_operations(events: Any, state: GrowState, refused: int) -> Optional[Dict[str, Patch]]:
    """What the new lines do to the operations open at the last export: per operation, the
    patch its tool_calls row gets. The core's fold over the new lines alone refused every
    settle of one of them (it never saw the dispatch); each is checked here by load's own
    rule as the whole fold would check it, and it must account for every refusal (None
    where another line was refused: that line would fail a load)."""
    from .._fold import FoldProblem, FoldState
    from .._pure.columns import float64, string, ts_micros
    from ..messages import PendingToolOperation

    fold = FoldState()
    ops = {op.op_id: op for op in state.open}
    # FoldState.check reads only which op ids are pending: the keys.
    fold.pending = cast(Dict[str, PendingToolOperation], {op_id: op for op_id, op in ops.items() if op.outcome in PENDING})
    waiting: Dict[str, List[str]] = {}
    for op in state.open:
        if not op.answered and op.call_id is not None:
            waiting.setdefault(op.call_id, []).append(op.op_id)
    patches: Dict[str, Patch] = {}
    accepted = 0
    for event in events:
        payload = event.payload
        if event.type == "tool-settled":
            op_id = payload.get("op-id")
            if not isinstance(op_id, str) or op_id not in fold.pending:
                continue
            try:
                fold.check("tool-settled", payload)
            except FoldProblem:
                continue  # refused by the whole fold too
            del fold.pending[op_id]
            fold.settled.add(op_id)
            accepted += 1
            settle = Settle(payload["outcome"], event.id, ts_micros(event.ts), float64(payload.get("duration")),
                            string(payload.get("error")), string(payload.get("reason")))
            patches[op_id] = dataclasses.replace(patches.get(op_id, Patch()), outcome=settle.outcome, settle=settle)
        elif event.type == "message" and payload.get("role") == "tool":
            call_id = payload.get("tool_call_id")
            for op_id in waiting.pop(call_id, ()) if isinstance(call_id, str) else ():
                patch = patches.get(op_id, Patch())
                answered_outcome = "result-recorded" if (patch.outcome or ops[op_id].outcome) == "dispatched" else None
                patches[op_id] = dataclasses.replace(patch, answered_by=event.id,
                                                     outcome=answered_outcome or patch.outcome)
    return patches if accepted == refused else None


def _count(found: Any, state: GrowState, summary: DatasetSummary) -> Optional[_Counted]:
    """The new rows counted (``_Counted``); None where one of them would change a row
    written before other than an open operation's."""
    counted = _Counted()
    counted.totals.usage = summary.usage  # no response of them is one of before: the id digest says so
    waiting = {op.call_id for op in state.open if not op.answered}
    for table, batch in chunk_batches(found, (None, None, None), True, grants_dictionary(summary.grants)):
        if table in ("compactions", "rewinds"):
            return None
        counted.totals.add(table, batch)
        if table == "messages":
            if waiting and any(c in waiting for c in batch.column("tool_call_id").to_pylist() if c is not None):
                counted.answers_open = True
        elif table == "tool_calls":
            counted.opened.extend(open_operations(batch, home=False))
        elif table == "grants":
            counted.in_force = grants_in_force(batch, summary.grants) or counted.in_force
    return counted


def open_operations(batch: Any, home: bool) -> List[OpenOperation]:
    """Each operation of a tool_calls batch not settled or not answered: the rows a later
    settle or tool message may change (`home`: they are written to the transcript's own
    bucket, else to the appendix)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    is_open = pc.or_(pc.is_in(batch.column("outcome"), value_set=pa.array(PENDING)), pc.invert(batch.column("answered")))
    rows = batch.select(["op_id", "call_id", "outcome", "answered"]).filter(is_open).to_pylist()
    return [OpenOperation(r["op_id"], r["call_id"], r["outcome"], r["answered"], home) for r in rows]


def grants_in_force(batch: Any, grants: List[str]) -> Optional[Tuple[str, str]]:
    """(id, snapshot) of the grants line in force if it is in this grants batch: the last
    of the pass (`grants`), with its snapshot as dispatches carry it."""
    import pyarrow.compute as pc

    force = pc.filter(batch.column("id"), batch.column("in_force"))
    return (force[0].as_py(), grants[-1]) if len(force) else None


def growth_batches(source: Source, growth: Growth, state_before: GrowState, common: Tuple[Optional[str], ...],
                   extras: bool, chunk: int) -> Iterator[Tuple[str, Any]]:
    """The new rows of `growth` as batches of each table's write schema: the core's pass
    over the new bytes again (bounded by ``GROW_MAX``), its line numbers and ordinals
    moved on past the rows exported before."""
    import pyarrow as pa
    import pyarrow.compute as pc

    fd = open_to_read(source.path)
    try:
        found = _backend.core.dataset_pass(fd, growth.stop, True, extras, chunk, growth.start)
        seen = {t: 0 for t in growth.rows}
        for table, batch in chunk_batches(found, common, True, grants_dictionary(found.summary.grants)):
            names = batch.schema.names
            cols = list(batch.columns)
            cols[names.index("line")] = pc.add(cols[names.index("line")], state_before.lines)
            if table == "messages":
                cols[names.index("ordinal")] = pc.add(cols[names.index("ordinal")], state_before.messages)
            if table == "tool_calls" and growth.grants_fill is not None:
                gid, snapshot = growth.grants_fill
                n = batch.num_rows
                cols[names.index("grants_id")] = pa.repeat(pa.scalar(gid, batch.schema.field("grants_id").type), n)
                g = batch.schema.field("grants").type
                cols[names.index("grants")] = pa.DictionaryArray.from_arrays(
                    pa.repeat(pa.scalar(0, g.index_type), n), pa.array([snapshot], g.value_type))
            seen[table] += batch.num_rows
            yield table, pa.RecordBatch.from_arrays(cols, schema=batch.schema)
    finally:
        os.close(fd)
    if seen != growth.rows:
        raise ValueError("its new lines changed between two reads")


def new_state(session: SessionRow, lines: int, open_now: List[OpenOperation], in_force: Optional[Tuple[str, str]],
              fd: int) -> Optional[GrowState]:
    """The grow state of a transcript just exported whole (its sessions row, lines, open
    operations and grants in force, read to the end), or None where a later run could not
    go on from it."""
    size = session.bytes
    if session.verdict != "clean" or size < GROW_MIN or len(open_now) > OPEN_MAX:
        return None
    if _platform.pread(fd, 1, size - 1) != b"\n":
        return None
    return GrowState(size=size, base=size, ends=ends_digest(fd, size), lines=lines, messages=session.messages,
                     open=tuple(open_now), in_force=in_force, grants_count=session.grants, session=session, ids=None)


def patched(batch: Any, patches: Dict[str, Patch]) -> Any:
    """A tool_calls batch with the rows of `patches`' operations changed as they say."""
    import pyarrow as pa
    import pyarrow.compute as pc

    ids = batch.column("op_id")
    cols = list(batch.columns)
    changes = {op_id: patch.columns() for op_id, patch in patches.items()}
    for name in PATCHED:
        wanted = [op_id for op_id, columns in changes.items() if name in columns]
        if not wanted:
            continue
        mask = pc.is_in(ids, value_set=pa.array(wanted, ids.type))
        hit = pc.filter(ids, mask).to_pylist()
        if not hit:
            continue
        at = batch.schema.get_field_index(name)
        values = pa.array([changes[op_id][name] for op_id in hit], batch.schema.field(name).type)
        cols[at] = pc.replace_with_mask(cols[at], mask, values)
    return pa.RecordBatch.from_arrays(cols, schema=batch.schema)


# -- the seam: what grown transcripts change in each bucket --------------------------------------


@dataclass(frozen=True)
class Grown:
    """A transcript that grew and was read where it grew: its manifest entry before, and
    what its new bytes gave."""

    source: Source
    entry: Exported
    growth: Growth

    @property
    def head(self) -> Head:
        return Head(self.entry.session_id, self.entry.date, self.entry.bucket)

    @property
    def appendix(self) -> str:
        return bucket_key(self.entry.date, APPENDIX)

    def new_rows(self, extras: bool, chunk: int) -> Iterator[Tuple[str, Any]]:
        """Its new rows, as ``growth_batches`` gives them."""
        assert self.entry.grow is not None
        common = (self.entry.session_id, self.entry.grow.session.agent, self.entry.grow.session.model)
        return growth_batches(self.source, self.growth, self.entry.grow, common, extras, chunk)


@dataclass
class Amendment:
    """What grown transcripts change in one bucket, its other rows as published: in a
    transcript's home bucket, its ``sessions`` row (given instead of the one there) and the
    patches of its open operations' rows there; in the partition's appendix, the patches of
    those there, and its new rows after them (``grown``). ``applied`` is the one place the
    rows read back from a bucket's files are amended."""

    sessions: Dict[str, SessionRow] = field(default_factory=dict)  # source key -> its sessions row now
    patches: Dict[str, Dict[str, Patch]] = field(default_factory=dict)  # source key -> op id -> patch
    grown: List[Grown] = field(default_factory=list)  # in the appendix: the transcripts whose new rows it gets

    @property
    def tables(self) -> Tuple[str, ...]:
        """The tables it changes in a home bucket (the others can be the files before, linked)."""
        return ("sessions", "tool_calls") if self.patches else ("sessions",)

    def only(self, keys: Iterable[str]) -> "Amendment":
        """This amendment for the sources `keys` alone, without new rows."""
        wanted = set(keys)
        return Amendment({k: r for k, r in self.sessions.items() if k in wanted},
                         {k: p for k, p in self.patches.items() if k in wanted})

    def applied(self, rows: Iterable[Tuple[str, str, Any]]) -> Iterator[Tuple[str, str, Any]]:
        """`rows` (source key, table, batch) read back from a bucket's files, amended."""
        for key, table, batch in rows:
            if table == "sessions" and key in self.sessions and batch.num_rows:
                yield key, table, session_batch(self.sessions[key])
            elif table == "tool_calls" and self.patches.get(key) and batch.num_rows:
                yield key, table, patched(batch, self.patches[key])
            else:
                yield key, table, batch


def amendments(grown: Iterable[Grown]) -> Dict[str, Amendment]:
    """Per bucket, what the transcripts `grown` change in it: in each one's home bucket its
    sessions row (and its patches, where some of its open operations' rows are there); in
    its partition's appendix its patches and its new rows."""
    out: Dict[str, Amendment] = {}
    for g in grown:
        key = g.source.key
        home = out.setdefault(g.entry.home, Amendment())
        home.sessions[key] = g.growth.session
        if g.growth.patch_home:
            home.patches[key] = g.growth.patches
        appendix = out.setdefault(g.appendix, Amendment())
        appendix.patches[key] = g.growth.patches
        appendix.grown.append(g)
    return out
