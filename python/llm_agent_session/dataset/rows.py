"""One transcript's rows: every table's, chunk by chunk, and its ``sessions`` row.

The byte work is the core's ``dataset_pass`` (Rust, or its pure twin): one lenient read of
every line, folded as ``history.History`` folds them. Around it, this module decides what
``Session.load`` would do, read-only: the tail check first (where a load would cut a torn
tail, the rows stop there), and a transcript whose pass found nothing a load refuses
loads (a load refuses exactly the lines the lenient read skips and the envelopes the fold
refuses); any other gets the exact verdict of ``llm-agent-session check``
(``llm_agent_session.verdict``), its rows still exported, none of them live.
"""

from __future__ import annotations

import json
import os
import shutil
import stat as stat_module
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, Iterator, List, Optional, Tuple

from .. import _backend, _platform
from .._core import DatasetPass, DatasetSummary, TableChunk
from .._files import open_to_read
from .._pure.columns import ts_micros
from ..errors import CoreFailure
from ..verdict import Kind, verdict
from . import grow
from .batches import chunk_batches, grants_dictionary
from .manifest import GrowState, OpenOperation, SessionRow
from .sessions import Totals, with_totals
from .sources import Head, Source, bucket_of, session_id_of

#: Bytes of lines per chunk of rows: what bounds the memory an export holds at once.
CHUNK = 8 << 20
#: A first line longer than this is not read as a session-meta line.
HEAD_LIMIT = 64 << 20
NO_DATE = "1970-01-01"

# sessions.verdict: the library's verdict kinds, by the names they give the data
CLEAN, TORN, FAILS = Kind.CLEAN.value, Kind.WOULD_REPAIR.value, Kind.WOULD_FAIL.value


class NotATranscript(Exception):
    """A file under SRC that is not a transcript: skipped, and counted."""


def _open(path: str) -> Tuple[int, os.stat_result]:
    fd = open_to_read(path)
    st = os.fstat(fd)
    if not stat_module.S_ISREG(st.st_mode):
        os.close(fd)
        raise NotATranscript("not a regular file")
    return fd, st


def _first_line_end(fd: int, size: int) -> int:
    """Where the first non-blank line ends (its ``\\n`` or the file's end)."""
    at = 0
    started = False
    while at < size:
        block = _platform.pread(fd, min(1 << 16, size - at), at)
        if not block:
            break
        if not started:
            body = block.lstrip(b" \t\r\n")
            if body:
                if body[:1] != b"{":
                    raise NotATranscript("its first line is not a JSON object")
                started = True
                block_start = len(block) - len(body)
            else:
                block_start = len(block)
        else:
            block_start = 0
        if started:
            nl = block.find(b"\n", block_start)
            if nl >= 0:
                return at + nl
        at += len(block)
        if at > HEAD_LIMIT:
            raise NotATranscript(f"its first line is longer than {HEAD_LIMIT >> 20} MiB")
    if not started:
        raise NotATranscript("it is empty" if size == 0 else "it holds only blank lines")
    return size


def read_head(source: Source) -> Head:
    """The session id and date of `source` from its first line (``NotATranscript`` where it
    plainly is none: not a regular file, empty, or not starting with a JSON object)."""
    fd, st = _open(source.path)
    try:
        end = _first_line_end(fd, st.st_size)
        found = _backend.core.scan(fd, 0, end, True)
    finally:
        os.close(fd)
    return _head(source, found.events[0] if found.events and not found.problems else None)


def _head(source: Source, first: Any) -> Head:
    sid = session_id_of(source)
    meta = first is not None and first.type == "session-meta" and ts_micros(first.ts) is not None
    return Head(sid, first.ts[:10] if meta else NO_DATE, bucket_of(sid))


def _reason_of_torn(line: int, cut: int, removed: int) -> str:
    return f"a torn last line of {removed} bytes (line {line}, from byte {cut}); a load removes it"


def read_ahead(chunks: Iterable[TableChunk]) -> Iterator[TableChunk]:
    """`chunks`, the next one made on a thread of its own while the caller writes this one:
    the native core makes a chunk without the GIL, and the Parquet writer writes one without
    it, so on a machine with two cores free both work at once. Never more than two chunks
    are alive (the one written, the one made): what an export holds stays bounded."""
    it = iter(chunks)
    with ThreadPoolExecutor(1, thread_name_prefix="dataset-rows") as maker:
        coming = maker.submit(next, it, None)
        while True:
            chunk: Optional[TableChunk] = coming.result()
            if chunk is None:
                return
            coming = maker.submit(next, it, None)
            yield chunk


@dataclass
class Transcript:
    """One transcript's rows. Iterate ``batches()`` (table, RecordBatch) to the end; then
    ``session`` is its complete ``sessions`` row."""

    source: Source
    head: Head
    session: SessionRow
    _fd: int
    # The pass's rows are made on a thread of their own (`read_ahead`): what this object
    # needs besides them is its summary, taken once before, never the pass meanwhile.
    _pass: DatasetPass
    _summary: DatasetSummary
    _loads: bool
    counts: Dict[str, int] = field(default_factory=dict)
    # What a later run needs to go on from the end (``grow.py``), gathered from the rows:
    # each operation not settled or not answered (what a later settle or tool message may
    # change; its row in the home bucket), and the grants line in force.
    open: List[OpenOperation] = field(default_factory=list)
    in_force: Optional[Tuple[str, str]] = None  # (id, snapshot)
    lines: int = 0
    grow: Optional[GrowState] = None  # grow.new_state, once read to the end (big clean ones)
    masked: Optional[int] = None  # secrets masked (its rows read from a masked copy where > 0); None: not redacted
    ids: bytes = b""  # with `grow`: the envelope ids' digest

    def batches(self) -> Iterator[Tuple[str, Any]]:
        common = (self.head.session_id, self.session.agent, self.session.model)
        snapshots = grants_dictionary(self._summary.grants)
        totals = Totals()
        # What grow.new_state needs is gathered; never for rows read from a masked copy (its
        # offsets are not the file's): such a file is read whole again when it changes.
        keeps_state = self._loads and self.source.size >= grow.GROW_MIN and not self.masked
        try:
            # A small transcript is one run of rows: nothing to overlap, no thread.
            chunks = read_ahead(self._pass) if self.source.size > 2 * CHUNK else self._pass
            for table, batch in chunk_batches(chunks, common, self._loads, snapshots):
                totals.add(table, batch)
                if table == "tool_calls" and keeps_state:
                    self.open.extend(grow.open_operations(batch, home=True))
                elif table == "grants" and keeps_state:
                    self.in_force = grow.grants_in_force(batch, self._summary.grants) or self.in_force
                yield table, batch
            self.lines = self._summary.lines
            totals.usage = self._summary.usage
            self.session = with_totals(self.session, totals)
            self.counts = dict(totals.rows, sessions=1)
            if keeps_state:
                self.grow = grow.new_state(self.session, self.lines, self.open, self.in_force, self._fd)
                if self.grow is not None:
                    self.ids = self._pass.id_digest()
        finally:
            os.close(self._fd)

    def close(self) -> None:
        """Release the file without reading its rows (``batches`` closes it itself)."""
        try:
            os.close(self._fd)
        except OSError:
            pass


def _masked(fd: int, size: int, path: str, made: List[str]) -> Tuple[int, int, str, int]:
    """Where the rows of `fd`'s first `size` bytes are read from: (fd, size, its path, secrets
    masked): `fd` itself where the secret rules mask nothing in it, else a masked copy
    (``secrets.Redactor``) in a new private directory (added to `made`), `fd` closed."""
    from ..secrets import Redactor

    redactor = Redactor()
    if redactor.clean(fd, 0, size):
        return fd, size, path, 0
    made.append(tempfile.mkdtemp(prefix="llm-agent-session-redacted-"))
    copy = os.path.join(made[-1], "masked.jsonl")
    out = os.open(copy, os.O_RDWR | os.O_CREAT | os.O_EXCL | _platform.O_CLOEXEC | _platform.O_BINARY, 0o600)
    try:
        redactor.copy(fd, size, out)
    except BaseException:
        os.close(out)
        raise
    os.close(fd)
    return out, os.fstat(out).st_size, copy, redactor.masked


def read_transcript(source: Source, head: Head, *, extras: bool = True, chunk: int = CHUNK,
                    redact: bool = False) -> Transcript:
    """`source`'s rows, read as described in the module doc; ``NotATranscript`` where a
    load would call it none (it is then skipped). ``OSError`` where it cannot be read.
    `redact`: what the secret rules find is masked (the rows read from a private masked
    copy, removed once open), and ``masked`` counts it."""
    fd, st = _open(source.path)
    made: List[str] = []
    try:
        return _read_transcript(source, head, fd, st, extras, chunk, made if redact else None)
    finally:
        for directory in made:  # the copy stays open for the rows; its name goes now
            shutil.rmtree(directory, ignore_errors=True)


def _read_transcript(source: Source, head: Head, fd: int, st: os.stat_result, extras: bool, chunk: int,
                     made: Optional[List[str]]) -> Transcript:
    path, masked = source.path, None
    try:
        core = _backend.core
        size = st.st_size
        if made is not None:
            fd, size, path, masked = _masked(fd, size, source.path, made)
        try:
            tail: Optional[Tuple[str, int, int, bytes]] = tuple(core.tail_check(fd, size))  # type: ignore[assignment]
        except CoreFailure:
            tail = None
        torn = tail is not None and tail[0] == "torn"
        # Every line, the last one even without its newline: a torn tail is then one line
        # that does not parse (a load removes it), and a file that would fail is read the
        # way salvage reads it.
        found = core.dataset_pass(fd, size, True, extras, chunk)
        summary: DatasetSummary = found.summary
        skipped = summary.skipped - (1 if torn else 0)
        loads = tail is not None and skipped == 0 and summary.refused == 0 and summary.first_type == "session-meta"
        reason: Optional[str] = None
        if loads:
            outcome = TORN if torn else CLEAN
            if torn:
                assert tail is not None
                reason = _reason_of_torn(tail[2], tail[1], size - tail[1])
        else:
            v = verdict(path)
            if v.kind is Kind.NOT_A_TRANSCRIPT:
                raise NotATranscript(str(v.error).replace(path, source.path) if v.error else "not a transcript")
            if v.kind is Kind.WOULD_FAIL:
                outcome, error = FAILS, v.error
                assert error is not None
                line, offset = getattr(error, "line", None), getattr(error, "offset", None)
                why = getattr(error, "reason", None) or str(error)
                where = f" at line {line}, byte {offset}" if line is not None else ""
                reason = f"{type(error).__name__}{where}: {why}"
            else:  # the verdict is load's own word; it wins
                loads = True
                outcome = TORN if v.torn else CLEAN
                if v.torn:
                    reason = _reason_of_torn(v.torn.line, v.torn.cut, v.torn.removed)
    except BaseException:
        os.close(fd)
        raise
    meta: Dict[str, Any] = {}
    if summary.meta is not None:
        try:
            parsed = json.loads(summary.meta)
            meta = parsed if isinstance(parsed, dict) else {}
        except ValueError:  # an integer beyond Python's digit limit, say: no agent or model from it
            meta = {}
    agent = next((meta[k] for k in ("agent", "imported-from", "app") if isinstance(meta.get(k), str)), None)
    model = meta["model"] if isinstance(meta.get("model"), str) else summary.model
    session = SessionRow(
        session_id=head.session_id, agent=agent, model=model, path=source.path, host=source.host,
        meta_id=summary.meta_id, meta=summary.meta, verdict=outcome, reason=reason, bytes=st.st_size,
        envelopes=summary.envelopes, skipped_lines=skipped if loads else summary.skipped, messages=0,
        live_messages=0 if loads else None, tool_calls=0, completed=0, failed=0, outcome_unknown=0, dispatched=0, result_recorded=0,
        pending_operations=0, compactions=0, rewinds=0, elisions=summary.elisions, grants=0, input_tokens=None,
        output_tokens=None, cache_read_tokens=None, cache_write_tokens=None, responses=0, unmeasured_responses=0,
        first_ts=summary.first_ts, last_ts=summary.last_ts)
    return Transcript(source, head, session, fd, found, summary, loads, masked=masked)

