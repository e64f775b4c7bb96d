"""The dataset pass in pure Python: the reference of ``rust/columns/``.

The rows of the dataset tables (``dataset/schema.py``) of one transcript: every envelope
that parses, in file order, a later line repeating an id left out (as ``Session.salvage``
reads a file), folded by ``history.History``'s fold (``_history_fold.HistoryFold``, the
fold load folds by), so ``live`` and what removed a message are load's own answers.
Values are read from the payload as the fold reads them (``dict.get``: the last member of
a key); a JSON column is the value's text exactly as it stands in the line (for a line
the library wrote, canonical JSON).

Every column is built in Arrow's layout (``_core.Column``): the native core builds the
same bytes, and ``tests/dataset/test_dataset_differential.py`` holds the two together.
"""

from __future__ import annotations

import json
import math
import re
import struct
from array import array
from datetime import datetime, timezone
from itertools import accumulate
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

from .._core import Column, DatasetSummary, TableChunk
from .._history_fold import HistoryFold
from ..messages import MESSAGE_KEYS, Event, model_named, payload_marks_sticky
from .._token_usage import Response, Usage, UsageTotals, count_lines, of_message
from . import replay as _replay
from .tail_check import read_span

_MESSAGE_KEYS = frozenset(MESSAGE_KEYS)
I64 = (-(1 << 63), 1 << 63)
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_TS = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})\.([0-9]{6})Z\Z")


# -- values, as both cores read them -------------------------------------------------------


def ts_micros(ts: Any) -> Optional[int]:
    """Microseconds since 1970 of a well-formed ``ts`` (``YYYY-MM-DDTHH:MM:SS.ffffffZ``, a
    real date and time), else None."""
    m = _TS.match(ts) if isinstance(ts, str) else None
    if m is None:
        return None
    y, mo, d, h, mi, s, us = (int(g) for g in m.groups())
    try:
        moment = datetime(y, mo, d, h, mi, s, us, tzinfo=timezone.utc)
    except ValueError:
        return None
    delta = moment - _EPOCH
    return (delta.days * 86400 + delta.seconds) * 1_000_000 + delta.microseconds


def int64(value: Any) -> Optional[int]:
    """A JSON integer that fits in 64 bits; None for anything else (a bool is not one)."""
    if isinstance(value, int) and not isinstance(value, bool) and I64[0] <= value < I64[1]:
        return value
    return None


def float64(value: Any) -> Optional[float]:
    """A JSON number as a finite double; None for anything else (a bool is not one)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return None
    try:
        f = float(value)
    except OverflowError:
        return None
    return f if math.isfinite(f) else None


def string(value: Any) -> Optional[str]:
    return value if isinstance(value, str) else None


def flatten_text(content: Any, raw: Optional[bytes]) -> Optional[str]:
    """A message's content as text: a string as it is; a list of parts, the string ``text``
    of each part that has one, joined by newlines; null or absent, None; any other value,
    its JSON text (`raw`)."""
    if content is None:
        return None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    assert raw is not None
    return raw.decode("utf-8")


# -- JSON text by span (the line validated already) -----------------------------------------

_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.S)
_STRUCTURE = re.compile(rb'["\[\]{}]')
_SCALAR = re.compile(rb"[^,\]} \t\r\n]+")
_WS = re.compile(rb"[ \t\r\n]*")


def _value_end(raw: bytes, i: int) -> int:
    """The index just past the JSON value that starts at `i`."""
    c = raw[i : i + 1]
    if c == b'"':
        m = _STRING.match(raw, i)
        assert m is not None
        return m.end()
    if c in (b"{", b"["):
        depth, at = 0, i
        while True:
            m = _STRUCTURE.search(raw, at)
            assert m is not None
            tok = m.group()
            if tok == b'"':
                at = _value_end(raw, m.start())
                continue
            depth += 1 if tok in (b"{", b"[") else -1
            at = m.end()
            if depth == 0:
                return at
    m = _SCALAR.match(raw, i)
    assert m is not None
    return m.end()


def _skip_ws(raw: bytes, i: int) -> int:
    m = _WS.match(raw, i)
    assert m is not None
    return m.end()


def members(raw: bytes, start: int) -> List[Tuple[str, int, int, int]]:
    """The members of the object whose ``{`` is at `start`, in order, duplicates included:
    (key, where its opening quote is, where its value starts, where the value ends)."""
    out: List[Tuple[str, int, int, int]] = []
    at = _skip_ws(raw, start + 1)
    if raw[at : at + 1] == b"}":
        return out
    while True:
        key_end = _value_end(raw, at)
        key = json.loads(raw[at:key_end])
        value = _skip_ws(raw, _skip_ws(raw, key_end) + 1)  # past the colon
        end = _value_end(raw, value)
        out.append((key, at, value, end))
        at = _skip_ws(raw, end)
        if raw[at : at + 1] == b"}":
            return out
        at = _skip_ws(raw, at + 1)  # past the comma


class Payload:
    """A payload's members in one line: JSON text by key (the last member of a key)."""

    def __init__(self, line: bytes) -> None:
        envelope = members(line, _skip_ws(line, 0))
        self.start, self.end = {key: (value, end) for key, _, value, end in envelope}["payload"]
        self.line = line
        self.members = members(line, self.start)
        self.by_key = {key: (value, end) for key, _, value, end in self.members}

    def json(self, key: str) -> Optional[bytes]:
        """The value's JSON text; None when the key is absent or the value is null."""
        span = self.by_key.get(key)
        if span is None:
            return None
        text = self.line[span[0] : span[1]]
        return None if text == b"null" else text

    def text(self) -> str:
        """The payload object itself, as it stands."""
        return self.line[self.start : self.end].decode("utf-8")

    def extras(self) -> Optional[bytes]:
        """The members outside the message keys, as they stand, in an object; None if none."""
        parts = [self.line[quote:end] for key, quote, _, end in self.members if key not in _MESSAGE_KEYS]
        return b"{" + b",".join(parts) + b"}" if parts else None


# -- columns in Arrow's layout ---------------------------------------------------------------


def _bits(flags: Sequence[bool]) -> bytes:
    out = bytearray((len(flags) + 7) // 8)
    for i, flag in enumerate(flags):
        if flag:
            out[i >> 3] |= 1 << (i & 7)
    return bytes(out)


def _validity(values: Sequence[Any]) -> Optional[bytes]:
    present = [v is not None for v in values]
    return None if all(present) else _bits(present)


def strings(values: Sequence[Optional[Any]]) -> Column:
    """Strings (or UTF-8 bytes); None is a null."""
    data = [b"" if v is None else v if isinstance(v, bytes) else v.encode("utf-8") for v in values]
    offsets = array("q", [0])
    offsets.extend(accumulate(len(d) for d in data))
    return Column("string", len(values), b"".join(data), offsets.tobytes(), _validity(values))


def numbers(kind: str, values: Sequence[Optional[Any]]) -> Column:
    """``int64``, ``int32``, ``timestamp`` (int64 microseconds) or ``float64``."""
    code = {"int64": "q", "timestamp": "q", "int32": "i", "float64": "d"}[kind]
    zero = 0.0 if kind == "float64" else 0
    return Column(kind, len(values), array(code, [zero if v is None else v for v in values]).tobytes(),
                  None, _validity(values))


def bools(values: Sequence[Optional[bool]]) -> Column:
    return Column("bool", len(values), _bits([bool(v) for v in values]), None, _validity(values))


# -- the pass --------------------------------------------------------------------------------


_FNV_OFFSET, _FNV_PRIME, _U64 = 0xCBF29CE484222325, 0x100000001B3, (1 << 64) - 1


def fnv1a(data: bytes) -> int:
    """64-bit FNV-1a."""
    h = _FNV_OFFSET
    for b in data:
        h = ((h ^ b) * _FNV_PRIME) & _U64
    return h


class PurePass:
    """``_core.DatasetPass`` of the reference: everything read and folded at once, one chunk."""

    def __init__(self, summary: DatasetSummary, tables: TableChunk, ids: Sequence[str] = (),
                 responses: Sequence[Response] = ()) -> None:
        self.summary = summary
        self._tables = tables
        self._ids = ids
        self._responses = list(responses)

    def __iter__(self) -> Iterator[TableChunk]:
        yield self._tables

    def id_digest(self) -> bytes:
        hashes = {fnv1a(i.encode("utf-8", "surrogatepass")) for i in self._ids}
        # A response id beside them, told apart by what its bytes follow (``_core.DatasetPass``).
        hashes.update(fnv1a(b"response-id\0" + r[1].encode("utf-8", "surrogatepass")) for r in self._responses if r[1] is not None)
        ordered = sorted(hashes)
        return struct.pack(f"<{len(ordered)}Q", *ordered)

    def responses(self) -> List[Response]:
        return list(self._responses)


def usage_pass(fd: int, stop: int, final_line: bool) -> Tuple[UsageTotals, List[Response]]:
    """``dataset_pass``'s usage of bytes ``[0, stop)`` of `fd`: its totals and counted
    responses (the reference reads every line into memory anyway)."""
    found = dataset_pass(fd, stop, final_line, False, stop + 1)
    return found.summary.usage, found.responses()


def dataset_pass(fd: int, stop: int, final_line: bool, extras: bool, chunk: int, start: int = 0) -> PurePass:
    # [start, stop) read as a file of its own: line numbers and offsets count from `start`.
    buf = read_span(fd, start, stop)
    events, spans, problems, end = _replay._scan(buf, 0, final_line)
    # The lines `_scan` numbered: every `\n` read, and an unfinished last line if read.
    lines = buf.count(b"\n") + (1 if final_line and len(buf) > end else 0)
    first_type = events[0].type if events and (not problems or spans[0][1] < problems[0][1]) else None
    kept: List[Tuple[Event, Tuple[int, int, int]]] = []
    seen = set()
    for event, span in zip(events, spans):
        if event.id not in seen:  # salvage's rule: the first line with an id wins
            seen.add(event.id)
            kept.append((event, span))
    history = HistoryFold()
    history.feed_all(e for e, _ in kept)

    def live(entry_id: str) -> bool:
        return history.state.position(entry_id) is not None

    def line_of(span: Tuple[int, int, int]) -> bytes:
        return buf[span[1] : span[1] + span[2]]

    def removal(entry_id: str) -> Tuple[Optional[str], Optional[str]]:
        r = history.removed.get(entry_id)
        return (None, None) if r is None else (r.by, r.kind)

    def last_elision(entry_id: str) -> Optional[str]:
        elided = history.elided.get(entry_id)
        return elided[-1] if elided else None

    messages: Dict[str, List[Any]] = {k: [] for k in (
        "id", "ordinal", "line", "ts", "role", "text", "content", "tool_calls", "tool_call_id", "name",
        "sticky", "live", "removed_by", "removed_kind", "elided_by", "extras", "bytes", "response_id",
        "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "usage_counted")}
    stated: List[Tuple[Optional[Usage], bool]] = []  # each message line's usage, and whether it is an assistant's
    compactions: Dict[str, List[Any]] = {k: [] for k in (
        "id", "line", "ts", "summary", "replaces_through_id", "tokens_before", "tokens_after", "fallback",
        "live", "removed_by", "removed_kind", "elided_by")}
    rewinds: Dict[str, List[Any]] = {k: [] for k in ("id", "line", "ts", "to_id", "rewound")}
    grants: Dict[str, List[Any]] = {k: [] for k in ("id", "line", "ts", "grants", "in_force")}
    grants_texts: List[str] = []
    grants_index: Dict[str, int] = {}
    dispatched: Dict[str, Tuple[Tuple[int, int, int], Dict[str, Any]]] = {}
    rewound: Dict[str, int] = {}
    for r in history.removed.values():
        if r.kind == "rewind":
            rewound[r.by] = rewound.get(r.by, 0) + 1
    model: Optional[str] = None
    stamps: List[int] = []
    elisions = 0
    for event, span in kept:
        p, type_, id_ = event.payload, event.type, event.id
        micros = ts_micros(event.ts)
        if micros is not None:
            stamps.append(micros)
        if type_ == "message":
            found = Payload(line_of(span))
            if model is None:
                model = model_named(type_, p)
            m = messages
            m["id"].append(id_)
            m["ordinal"].append(len(m["ordinal"]))
            m["line"].append(span[0])
            m["ts"].append(micros)
            m["role"].append(string(p.get("role")))
            content = found.json("content")
            m["content"].append(content)
            m["text"].append(flatten_text(p.get("content"), content))
            m["tool_calls"].append(found.json("tool_calls"))
            m["tool_call_id"].append(string(p.get("tool_call_id")))
            m["name"].append(string(p.get("name")))
            m["sticky"].append(payload_marks_sticky(p))
            m["live"].append(live(id_))
            by, kind = removal(id_)
            m["removed_by"].append(by)
            m["removed_kind"].append(kind)
            m["elided_by"].append(last_elision(id_))
            m["extras"].append(found.extras() if extras else None)
            m["bytes"].append(span[2])
            tokens = of_message(p)
            stated.append((tokens, p.get("role") == "assistant"))
            m["response_id"].append(None if tokens is None else tokens.response_id)
            for column, figure in zip(("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"),
                                      (None,) * 4 if tokens is None else tokens.figures):
                m[column].append(figure)
        elif type_ == "compaction":
            c = compactions
            c["id"].append(id_)
            c["line"].append(span[0])
            c["ts"].append(micros)
            c["summary"].append(string(p.get("summary")))
            c["replaces_through_id"].append(string(p.get("replaces-through-id")))
            c["tokens_before"].append(int64(p.get("tokens-before")))
            c["tokens_after"].append(int64(p.get("tokens-after")))
            fallback = p.get("fallback")
            c["fallback"].append(fallback if isinstance(fallback, bool) else None)
            c["live"].append(live(id_))
            by, kind = removal(id_)
            c["removed_by"].append(by)
            c["removed_kind"].append(kind)
            c["elided_by"].append(last_elision(id_))
        elif type_ == "rewind":
            rewinds["id"].append(id_)
            rewinds["line"].append(span[0])
            rewinds["ts"].append(micros)
            rewinds["to_id"].append(string(p.get("to-id")))
            rewinds["rewound"].append(rewound.get(id_, 0))
        elif type_ == "grants":
            text = Payload(line_of(span)).json("grants")
            grants_index[id_] = len(grants_texts)
            grants_texts.append("" if text is None else text.decode("utf-8"))
            grants["id"].append(id_)
            grants["line"].append(span[0])
            grants["ts"].append(micros)
            grants["grants"].append(text)
            grants["in_force"].append(history.grants_id == id_)
        elif type_ == "tool-dispatched":
            dispatched[id_] = (span, p)
        elif type_ == "elision":
            elisions += 1
        elif type_ == "run-context" and model is None:
            model = model_named(type_, p)
    counted, usage = count_lines(stated)
    messages["usage_counted"] = counted
    responses: List[Response] = [(message_id, u.response_id, *u.figures)
                                 for message_id, (u, _), flag in zip(messages["id"], stated, counted)
                                 if u is not None and flag]
    calls: Dict[str, List[Any]] = {k: [] for k in (
        "op_id", "line", "call_id", "tool", "arguments", "arguments_digest", "idempotency", "run_id", "round",
        "dispatched_at", "outcome", "settled_id", "settled_at", "duration", "error", "reason", "answered",
        "answered_by", "grants_id", "grants")}
    for op in history.operations.values():
        span, asked = dispatched[op.op_id]
        settle = op.settle
        c = calls
        c["op_id"].append(op.op_id)
        c["line"].append(span[0])
        c["call_id"].append(string(op.call_id))
        c["tool"].append(string(op.tool))
        c["arguments"].append(Payload(line_of(span)).json("arguments"))
        c["arguments_digest"].append(string(asked.get("arguments-digest")))
        c["idempotency"].append(string(asked.get("idempotency")))
        c["run_id"].append(string(asked.get("run-id")))
        c["round"].append(int64(asked.get("round")))
        c["dispatched_at"].append(ts_micros(op.dispatched_at))
        c["outcome"].append(op.state)
        c["settled_id"].append(op.settled_id)
        c["settled_at"].append(ts_micros(op.settled_at))
        c["duration"].append(float64(settle.get("duration")))
        c["error"].append(string(settle.get("error")))
        c["reason"].append(string(settle.get("reason")))
        c["answered"].append(op.answered_by is not None)
        c["answered_by"].append(op.answered_by)
        c["grants_id"].append(op.grants_id)
        c["grants"].append(None if op.grants_id is None else grants_index[op.grants_id])
    meta = kept[0] if first_type == "session-meta" else None
    summary = DatasetSummary(
        envelopes=len(kept),
        skipped=len(problems) + len(events) - len(kept),
        refused=len(history.problems),
        first_type=first_type,
        meta_id=meta[0].id if meta else None,
        meta_ts=meta[0].ts if meta else None,
        meta=Payload(line_of(meta[1])).text() if meta else None,
        model=model,
        first_ts=min(stamps) if stamps else None,
        last_ts=max(stamps) if stamps else None,
        elisions=elisions,
        grants=grants_texts,
        lines=lines,
        usage=usage,
    )
    return PurePass(summary, {
        "messages": _columns(messages, {"ordinal": "int64", "line": "int64", "ts": "timestamp", "bytes": "int64",
                                        "sticky": "bool", "live": "bool", "input_tokens": "int64",
                                        "output_tokens": "int64", "cache_read_tokens": "int64",
                                        "cache_write_tokens": "int64", "usage_counted": "bool"}),
        "tool_calls": _columns(calls, {"line": "int64", "round": "int64", "dispatched_at": "timestamp",
                                       "settled_at": "timestamp", "duration": "float64", "answered": "bool",
                                       "grants": "int32"}),
        "compactions": _columns(compactions, {"line": "int64", "ts": "timestamp", "tokens_before": "int64",
                                              "tokens_after": "int64", "fallback": "bool", "live": "bool"}),
        "rewinds": _columns(rewinds, {"line": "int64", "ts": "timestamp", "rewound": "int64"}),
        "grants": _columns(grants, {"line": "int64", "ts": "timestamp", "in_force": "bool"}),
    }, [e.id for e, _ in kept], responses)


def _columns(values: Dict[str, List[Any]], kinds: Dict[str, str]) -> Dict[str, Column]:
    """Each list as a Column of its kind (``string`` unless `kinds` names another)."""
    out: Dict[str, Column] = {}
    for name, column in values.items():
        kind = kinds.get(name, "string")
        out[name] = strings(column) if kind == "string" else bools(column) if kind == "bool" else numbers(kind, column)
    return out
