"""A transcript that grew: only the bytes it grew by are read, when nothing before them changes.

A running agent appends; re-reading a 1 GB transcript for the last megabyte costs seconds.
So a whole export of a big clean transcript keeps, in its manifest entry, what the next
run needs to go on from its end (``GrowState``): its ``sessions`` row, where its lines and
message ordinals stopped, the calls no tool message answered yet, the grants in force, a
digest of both ends of the bytes read, and a side file of its envelope ids' hashes.

The next run reads only the new bytes (the core's dataset pass from ``start``) and takes
that path only where it gives the rows a whole export would: the exported bytes' ends are
unchanged (same file, same first and last 64 KiB), the new lines load cleanly on their own
and reuse no earlier id, and none of them changes a row already written. A new line that
would change one (a settle or tool message for an earlier call, a compaction, a rewind, an
elision or grants after earlier ones, a first model) sends the transcript back to a whole
export, as does growth past ``GROW_MAX`` since the last whole one. The new rows go to the
partition's appendix bucket (``write.py``); the ``sessions`` row is replaced where it is.
"""

from __future__ import annotations

import array
import bisect
import hashlib
import os
import sys
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional, Tuple

from .. import _backend, _platform
from ..errors import CoreFailure
from .batches import record_batch

#: A transcript this big or bigger keeps its state for a later run (smaller ones are cheap
#: to export again whole, and a fleet of them would leave a side file each).
GROW_MIN = 8 << 20
#: Growth past this since the last whole export: the transcript is exported whole again
#: (what the appendix holds of one transcript stays bounded).
GROW_MAX = 32 << 20
#: Calls left unanswered beyond this: no state is kept (each new tool message is checked against them).
UNANSWERED_MAX = 10_000
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


def ids_path(directory: str, name: str) -> str:
    return os.path.join(directory, "_ids", name)


def read_ids(path: str) -> "array.array[int]":
    ids = array.array("Q")
    with open(path, "rb") as f:
        ids.frombytes(f.read())
    if sys.byteorder != "little":
        ids.byteswap()
    return ids


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


def _digest(found: Any) -> "array.array[int]":
    ids = array.array("Q")
    ids.frombytes(found.id_digest())
    if sys.byteorder != "little":
        ids.byteswap()
    return ids


@dataclass
class Growth:
    """What reading a transcript's new bytes found, before any row is written."""

    start: int  # the bytes exported before
    stop: int  # the file's size now: the new bytes are [start, stop)
    session: Dict[str, Any]  # the new sessions row
    state: Dict[str, Any]  # the new GrowState (its "ids" name set by the caller)
    ids: bytes  # the new id digest
    rows: Dict[str, int]  # new rows per table
    grants_fill: Optional[Tuple[str, str]]  # (id, snapshot) in force for new dispatches, if any


def _eligible(entry: Dict[str, Any], source: Any, extras: bool) -> Optional[Dict[str, Any]]:
    state: Optional[Dict[str, Any]] = entry.get("grow")
    if not state or entry.get("extras") != extras or entry.get("verdict") != "clean":
        return None
    if (entry.get("dev"), entry.get("ino")) != (source.dev, source.ino):
        return None  # another file now (a repair renames its copy into place)
    if not state["size"] < source.size <= state["base"] + GROW_MAX:
        return None
    return state


def read_growth(source: Any, entry: Dict[str, Any], out: str, extras: bool, chunk: int) -> Optional[Growth]:
    """The growth of `source` since `entry` (its manifest entry) was exported, checked as
    the module doc says; None where it must be exported whole."""
    state = _eligible(entry, source, extras)
    if state is None:
        return None
    try:
        fd = os.open(source.path, os.O_RDONLY | _platform.O_CLOEXEC | _platform.O_NONBLOCK | _platform.O_BINARY)
    except OSError:
        return None
    try:
        size = os.fstat(fd).st_size
        start = state["size"]
        if size <= start or size > state["base"] + GROW_MAX:
            return None
        if _platform.pread(fd, 1, start - 1) != b"\n" or ends_digest(fd, start) != state["ends"]:
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
        if summary.skipped or summary.refused or summary.first_type in (None, "session-meta"):
            return None
        if summary.grants and state["grants_count"]:
            return None  # the grants line in force until now would stop being so
        if summary.model is not None and state["session"]["model"] is None:
            return None  # every row's `model` would change
        try:
            old_ids = read_ids(ids_path(os.path.join(out, "_versions"), state["ids"]))
        except OSError:
            return None
        ids = merge_ids(old_ids, _digest(found))
        if ids is None:
            return None
        counted = _count(found, state, summary)
        if counted is None:
            return None
        rows, live, outcomes, unanswered, in_force = counted
        new_ends = ends_digest(fd, size)
    finally:
        os.close(fd)
    s = dict(state["session"])
    first_ts = [t for t in (s["first_ts"], summary.first_ts) if t is not None]
    last_ts = [t for t in (s["last_ts"], summary.last_ts) if t is not None]
    s.update(bytes=size, envelopes=s["envelopes"] + summary.envelopes, elisions=s["elisions"] + summary.elisions,
             first_ts=min(first_ts) if first_ts else None, last_ts=max(last_ts) if last_ts else None,
             messages=s["messages"] + rows["messages"], live_messages=s["live_messages"] + live,
             tool_calls=s["tool_calls"] + rows["tool_calls"], grants=s["grants"] + rows["grants"])
    for outcome in ("completed", "failed", "outcome_unknown", "dispatched", "result_recorded"):
        s[outcome] += outcomes.get(outcome.replace("_", "-"), 0)
    s["pending_operations"] = s["dispatched"] + s["result_recorded"]
    fill = None
    if not summary.grants and state["in_force"] is not None:
        fill = (state["in_force"][0], state["in_force"][1])
    new_state = dict(state, size=size, ends=new_ends, lines=state["lines"] + summary.lines,
                     messages=state["messages"] + rows["messages"], session=s,
                     unanswered=state["unanswered"] + unanswered,
                     in_force=in_force if in_force is not None else state["in_force"],
                     grants_count=state["grants_count"] + rows["grants"])
    if len(new_state["unanswered"]) > UNANSWERED_MAX:
        return None
    return Growth(start, size, s, new_state, ids, rows, fill)


def _count(found: Any, state: Dict[str, Any], summary: Any) -> Optional[Tuple[Dict[str, int], int, Dict[str, int],
                                                                                List[str], Optional[List[str]]]]:
    """The new rows' counts, or None where one of them would change a row written before."""
    rows = {t: 0 for t in ("messages", "tool_calls", "compactions", "rewinds", "grants")}
    live = 0
    outcomes: Dict[str, int] = {}
    unanswered: List[str] = []
    in_force: Optional[List[str]] = None
    waiting = set(state["unanswered"])
    for chunk in found:
        for table, columns in chunk.items():
            if not columns or next(iter(columns.values())).length == 0:
                continue
            if table in ("compactions", "rewinds"):
                return None
            batch = record_batch(table, columns, (None, None, None), True, {"grants": _strings(summary.grants)})
            rows[table] += batch.num_rows
            if table == "messages":
                live += sum(1 for v in batch.column("live").to_pylist() if v)
                if waiting and any(c in waiting for c in batch.column("tool_call_id").to_pylist() if c is not None):
                    return None  # it answers a call exported unanswered
            elif table == "tool_calls":
                for outcome, answered, call in zip(batch.column("outcome").to_pylist(),
                                                   batch.column("answered").to_pylist(),
                                                   batch.column("call_id").to_pylist()):
                    outcomes[outcome] = outcomes.get(outcome, 0) + 1
                    if not answered and call is not None:
                        unanswered.append(call)
            elif table == "grants":
                for gid, force in zip(batch.column("id").to_pylist(), batch.column("in_force").to_pylist()):
                    if force:  # the last grants line: its snapshot as dispatches carry it
                        in_force = [gid, summary.grants[-1]]
    return rows, live, outcomes, unanswered, in_force


def _strings(values: List[str]) -> Any:
    import pyarrow as pa

    return pa.array(values, pa.large_string())


def growth_batches(source: Any, growth: Growth, state_before: Dict[str, Any], common: Tuple[Any, ...],
                   extras: bool, chunk: int) -> Iterator[Tuple[str, Any]]:
    """The new rows of `growth` as batches of each table's write schema: the core's pass
    over the new bytes again (bounded by ``GROW_MAX``), its line numbers and ordinals
    moved on past the rows exported before."""
    import pyarrow as pa
    import pyarrow.compute as pc

    fd = os.open(source.path, os.O_RDONLY | _platform.O_CLOEXEC | _platform.O_NONBLOCK | _platform.O_BINARY)
    try:
        found = _backend.core.dataset_pass(fd, growth.stop, True, extras, chunk, growth.start)
        snapshots = {"grants": _strings(found.summary.grants)}
        seen = {t: 0 for t in growth.rows}
        for piece in found:
            for table, columns in piece.items():
                if not columns or next(iter(columns.values())).length == 0:
                    continue
                batch = record_batch(table, columns, common, True, snapshots)
                names = batch.schema.names
                cols = list(batch.columns)
                cols[names.index("line")] = pc.add(cols[names.index("line")], state_before["lines"])
                if table == "messages":
                    cols[names.index("ordinal")] = pc.add(cols[names.index("ordinal")], state_before["messages"])
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


def new_state(t: Any, fd: int) -> Optional[Dict[str, Any]]:
    """The GrowState of a transcript just exported whole (`t`: its ``rows.Transcript``,
    read to the end), or None where a later run could not go on from it."""
    s = t.session
    size = s["bytes"]
    if s["verdict"] != "clean" or size < GROW_MIN or len(t.unanswered) > UNANSWERED_MAX:
        return None
    if _platform.pread(fd, 1, size - 1) != b"\n":
        return None
    return {"size": size, "base": size, "ends": ends_digest(fd, size), "lines": t.lines,
            "messages": s["messages"], "unanswered": list(t.unanswered), "in_force": t.in_force,
            "grants_count": s["grants"], "session": dict(s), "ids": None}
