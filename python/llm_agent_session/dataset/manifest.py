"""The manifest (``OUT/_dataset.json``), the commit point, as typed records, read and written.

On disk it is one JSON object (format 3), written with sorted keys and no spaces::

    {"format": "llm-agent-session dataset 3", "version": <commits>, "view": <the tables' view>,
     "publishing": null | true, "awaiting_first_export": true (until a first export commits),
     "sources": {"<host>:<path>": <entry>, ...},
     "buckets": {"<date>/<k>": {"tag": <its files' tag>, "sources": [<source keys, in row order>]}},
     "retired": [[<a path under OUT>, <when, in seconds>], ...]}

An entry is a file that is no transcript (``Skipped``: its stamp, ``path``, ``host`` and
``skipped``, why) or an exported one (``Exported``: its stamp, ``path``, ``host``,
``session_id``, ``date``, ``bucket``, ``rows`` per table, ``verdict``, ``extras``,
``redacted`` (how many secrets its rows have masked; absent where it was exported with
``--no-redact``, or by a version that did not mask); where a
later run may read only what it grew by, ``grow`` (``GrowState``); once it grew,
``appended``, its rows per table in the partition's appendix bucket). Each record has its
``to_json`` and ``from_json``; every value read is checked, and one of the wrong type is a
``NotADataset`` that names its key.
"""

from __future__ import annotations

import dataclasses
import json
import os
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple, Type, TypeVar, Union

from .._files import fsync_dir
from .errors import NotADataset
from .layout import APPENDIX, MANIFEST, bucket_key, write_new

FORMAT = "llm-agent-session dataset 3"
#: Earlier formats this version names when it refuses them, and what they lacked.
_EARLIER = {"llm-agent-session dataset 1": "dataset 1, 8 buckets and no appendix",
            "llm-agent-session dataset 2": "dataset 2, no token usage columns"}
#: The manifest's mark, from the moment a first export claims OUT (its tables empty) until
#: that export (or any other) commits: OUT holds no dataset yet.
AWAITING = "awaiting_first_export"

#: Where a value is in the manifest: its keys and indices from the top.
Place = Tuple[Union[str, int], ...]
_MISSING = object()
_KINDS = {type(None): "null", bool: "a boolean", int: "an integer", float: "a number", str: "a string",
          list: "a list", dict: "an object"}


class BadValue(Exception):
    """A value of the manifest of the wrong type (or missing): where, what it is, what belongs."""

    def __init__(self, where: Place, found: object, wanted: str) -> None:
        place = " / ".join(repr(p) if isinstance(p, str) else str(p) for p in where) or "the whole"
        kind = "missing" if found is _MISSING else _KINDS.get(type(found), type(found).__name__)
        super().__init__(f"{place} is {kind}, where {wanted} belongs")


def _text(value: object, where: Place) -> str:
    if isinstance(value, str):
        return value
    raise BadValue(where, value, "a string")


def _whole(value: object, where: Place) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise BadValue(where, value, "an integer")


def _flag(value: object, where: Place) -> bool:
    if isinstance(value, bool):
        return value
    raise BadValue(where, value, "a boolean")


def _number(value: object, where: Place) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    raise BadValue(where, value, "a number")


def _items(value: object, where: Place, length: Optional[int] = None, what: str = "a list") -> List[object]:
    if isinstance(value, list) and (length is None or len(value) == length):
        return value
    raise BadValue(where, value, what)


class Fields:
    """A JSON object of the manifest, read key by key, each value's type checked."""

    __slots__ = ("values", "where")

    def __init__(self, value: object, where: Place) -> None:
        if not isinstance(value, dict):
            raise BadValue(where, value, "an object")
        self.values: Dict[str, object] = value
        self.where = where

    def has(self, key: str) -> bool:
        return key in self.values

    def _at(self, key: str) -> Tuple[object, Place]:
        return self.values.get(key, _MISSING), self.where + (key,)

    def text(self, key: str) -> str:
        return _text(*self._at(key))

    def whole(self, key: str) -> int:
        return _whole(*self._at(key))

    def flag(self, key: str) -> bool:
        return _flag(*self._at(key))

    def optional_text(self, key: str) -> Optional[str]:
        value, where = self._at(key)
        return None if value is None else _text(value, where)

    def optional_whole(self, key: str) -> Optional[int]:
        value, where = self._at(key)
        return None if value is None else _whole(value, where)

    def record(self, key: str) -> "Fields":
        return Fields(*self._at(key))

    def items(self, key: str) -> Tuple[List[object], Place]:
        value, where = self._at(key)
        return _items(value, where), where

    def counts(self, key: str) -> Dict[str, int]:
        """An object of integers: rows per table."""
        f = self.record(key)
        return {k: f.whole(k) for k in f.values}


R = TypeVar("R")
_READERS: Dict[str, Callable[[Fields, str], object]] = {
    "str": Fields.text, "int": Fields.whole, "bool": Fields.flag, "Optional[str]": Fields.optional_text,
    "Optional[int]": Fields.optional_whole}


def _flat_record(cls: Type[R], f: Fields) -> R:
    """A record of plain fields (str, int, bool, optional str or int) from its JSON object."""
    values: Dict[str, Any] = {x.name: _READERS[str(x.type)](f, x.name) for x in dataclasses.fields(cls)}  # type: ignore[arg-type]
    return cls(**values)


def _flat_json(record: object) -> Dict[str, object]:
    return {x.name: getattr(record, x.name) for x in dataclasses.fields(record)}  # type: ignore[arg-type]


# -- the records ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Stamp:
    """What a re-run compares to see a file unchanged: a ``stat``, nothing read."""

    size: int
    mtime_ns: int
    ctime_ns: int
    dev: int
    ino: int

    def to_json(self) -> Dict[str, object]:
        return _flat_json(self)

    @classmethod
    def from_json(cls, f: Fields) -> "Stamp":
        return _flat_record(cls, f)


@dataclass(frozen=True)
class SessionRow:
    """A transcript's ``sessions`` row, its columns by name (``schema.TABLES``; times in
    microseconds): the fields are the table's columns, in order."""

    session_id: str
    agent: Optional[str]
    model: Optional[str]
    path: str
    host: str
    meta_id: Optional[str]
    meta: Optional[str]
    verdict: str
    reason: Optional[str]
    bytes: int
    envelopes: int
    skipped_lines: int
    messages: int
    live_messages: Optional[int]
    tool_calls: int
    completed: int
    failed: int
    outcome_unknown: int
    dispatched: int
    result_recorded: int
    pending_operations: int
    compactions: int
    rewinds: int
    elisions: int
    grants: int
    input_tokens: Optional[int]
    output_tokens: Optional[int]
    cache_read_tokens: Optional[int]
    cache_write_tokens: Optional[int]
    responses: int
    unmeasured_responses: int
    first_ts: Optional[int]
    last_ts: Optional[int]

    def to_json(self) -> Dict[str, object]:
        return _flat_json(self)

    @classmethod
    def from_json(cls, f: Fields) -> "SessionRow":
        return _flat_record(cls, f)


@dataclass(frozen=True)
class OpenOperation:
    """An operation not settled or not answered when its transcript was last read: its
    ``tool_calls`` row is what a later settle or tool message may change. `home`: that row
    is in the transcript's own bucket (else in the appendix). JSON: the five as a list."""

    op_id: str
    call_id: Optional[str]
    outcome: str
    answered: bool
    home: bool

    def to_json(self) -> List[object]:
        return [self.op_id, self.call_id, self.outcome, self.answered, self.home]

    @classmethod
    def from_json(cls, value: object, where: Place) -> "OpenOperation":
        op_id, call_id, outcome, answered, home = _items(value, where, 5, "[op id, call id, outcome, answered, home]")
        return cls(_text(op_id, where + ("op_id",)), None if call_id is None else _text(call_id, where + ("call_id",)),
                   _text(outcome, where + ("outcome",)), _flag(answered, where + ("answered",)),
                   _flag(home, where + ("home",)))


@dataclass(frozen=True)
class GrowState:
    """What a later run needs to read only what a transcript grew by (``grow.py``)."""

    size: int  # the bytes read so far: the next run reads from here
    base: int  # the size at its last whole export
    ends: str  # ``grow.ends_digest`` of ``[0, size)``
    lines: int  # lines read so far
    messages: int  # message rows so far (the next ordinal)
    open: Tuple[OpenOperation, ...]
    in_force: Optional[Tuple[str, str]]  # (id, snapshot) of the grants line in force
    grants_count: int
    session: SessionRow  # its sessions row as of `size`
    ids: Optional[str]  # the name of its id side file (under ``OUT/_versions/_ids``)

    def to_json(self) -> Dict[str, object]:
        return {"size": self.size, "base": self.base, "ends": self.ends, "lines": self.lines,
                "messages": self.messages, "open": [op.to_json() for op in self.open],
                "in_force": None if self.in_force is None else list(self.in_force),
                "grants_count": self.grants_count, "session": self.session.to_json(), "ids": self.ids}

    @classmethod
    def from_json(cls, f: Fields) -> "GrowState":
        ops, at = f.items("open")
        in_force: Optional[Tuple[str, str]] = None
        if f.values.get("in_force") is not None:
            where = f.where + ("in_force",)
            force = _items(f.values["in_force"], where, 2, "[grants id, snapshot]")
            in_force = (_text(force[0], where + (0,)), _text(force[1], where + (1,)))
        return cls(f.whole("size"), f.whole("base"), f.text("ends"), f.whole("lines"), f.whole("messages"),
                   tuple(OpenOperation.from_json(op, at + (i,)) for i, op in enumerate(ops)), in_force,
                   f.whole("grants_count"), SessionRow.from_json(f.record("session")), f.optional_text("ids"))


@dataclass(frozen=True)
class Skipped:
    """A file under SRC that is no transcript: the next run passes it over while its stamp holds."""

    stamp: Stamp
    path: str
    host: str
    reason: str  # JSON: "skipped"

    def to_json(self) -> Dict[str, object]:
        return dict(self.stamp.to_json(), path=self.path, host=self.host, skipped=self.reason)


@dataclass(frozen=True)
class Exported:
    """An exported transcript: where its rows are (`rows` in its home bucket, `appended` in
    the appendix once it grew) and what the next run compares."""

    stamp: Stamp
    path: str
    host: str
    session_id: str
    date: str
    bucket: int
    rows: Dict[str, int]
    verdict: str
    extras: bool
    grow: Optional[GrowState] = None
    appended: Optional[Dict[str, int]] = None
    redacted: Optional[int] = None  # secrets masked in its rows; None: exported unmasked

    @property
    def home(self) -> str:
        return bucket_key(self.date, self.bucket)

    @property
    def buckets(self) -> List[str]:
        """The buckets its rows are in: its home bucket, and the appendix if it grew."""
        return [self.home] + ([bucket_key(self.date, APPENDIX)] if self.appended is not None else [])

    def to_json(self) -> Dict[str, object]:
        out = dict(self.stamp.to_json(), path=self.path, host=self.host, session_id=self.session_id, date=self.date,
                   bucket=self.bucket, rows=self.rows, verdict=self.verdict, extras=self.extras)
        if self.grow is not None:
            out["grow"] = self.grow.to_json()
        if self.appended is not None:
            out["appended"] = self.appended
        if self.redacted is not None:
            out["redacted"] = self.redacted
        return out

    @classmethod
    def from_json(cls, f: Fields) -> "Exported":
        grow = GrowState.from_json(f.record("grow")) if f.values.get("grow") is not None else None
        return cls(Stamp.from_json(f), f.text("path"), f.text("host"), f.text("session_id"), f.text("date"),
                   f.whole("bucket"), f.counts("rows"), f.text("verdict"), f.flag("extras"), grow,
                   f.counts("appended") if f.has("appended") else None,
                   f.whole("redacted") if f.has("redacted") else None)


SourceEntry = Union[Skipped, Exported]


def ids_name(entry: Optional[SourceEntry]) -> Optional[str]:
    """The id side file an entry names (``grow.py``), if any: its name under ``OUT/_versions/_ids``."""
    return entry.grow.ids if isinstance(entry, Exported) and entry.grow is not None else None


def entry_from_json(f: Fields) -> SourceEntry:
    if f.has("skipped"):
        return Skipped(Stamp.from_json(f), f.text("path"), f.text("host"), f.text("skipped"))
    return Exported.from_json(f)


@dataclass(frozen=True)
class BucketEntry:
    """A bucket's current files: their tag, and the sources whose rows they hold, in order."""

    tag: str
    sources: Tuple[str, ...]

    def to_json(self) -> Dict[str, object]:
        return {"tag": self.tag, "sources": list(self.sources)}

    @classmethod
    def from_json(cls, f: Fields) -> "BucketEntry":
        sources, at = f.items("sources")
        return cls(f.text("tag"), tuple(_text(s, at + (i,)) for i, s in enumerate(sources)))


@dataclass(frozen=True)
class Retired:
    """A file or view superseded at `when`, kept for the readers that resolved it before."""

    path: str  # relative to OUT
    when: float

    def to_json(self) -> List[object]:
        return [self.path, self.when]

    @classmethod
    def from_json(cls, value: object, where: Place) -> "Retired":
        path, when = _items(value, where, 2, "[path, when]")
        return cls(_text(path, where + (0,)), _number(when, where + (1,)))


@dataclass
class Manifest:
    """The whole manifest; a commit changes it, then writes it (``write_manifest``)."""

    version: int = 0
    sources: Dict[str, SourceEntry] = field(default_factory=dict)
    buckets: Dict[str, BucketEntry] = field(default_factory=dict)
    retired: List[Retired] = field(default_factory=list)
    publishing: bool = False  # committed; the tables still to be pointed at `view`
    view: Optional[int] = None  # none before the first publish
    awaiting: bool = True  # no export has committed yet (``AWAITING``)

    @property
    def no_dataset_yet(self) -> bool:
        return not self.buckets or self.awaiting

    def exported(self, key: str) -> Optional[Exported]:
        entry = self.sources.get(key)
        return entry if isinstance(entry, Exported) else None

    def to_json(self) -> Dict[str, object]:
        out: Dict[str, object] = {
            "format": FORMAT, "version": self.version, "sources": {k: e.to_json() for k, e in self.sources.items()},
            "buckets": {k: b.to_json() for k, b in self.buckets.items()}, "retired": [r.to_json() for r in self.retired],
            "publishing": True if self.publishing else None}
        if self.view is not None:
            out["view"] = self.view
        if self.awaiting:
            out[AWAITING] = True
        return out

    @classmethod
    def from_json(cls, value: object) -> "Manifest":
        f = Fields(value, ())
        sources, buckets = f.record("sources"), f.record("buckets")
        retired, at = f.items("retired") if f.has("retired") else ([], ())
        publishing = f.values.get("publishing") is not None and f.flag("publishing")
        view = f.whole("view") if f.has("view") or publishing else None  # a publish names its view
        return cls(
            f.whole("version") if f.has("version") else 0,
            {k: entry_from_json(sources.record(k)) for k in sources.values},
            {k: BucketEntry.from_json(buckets.record(k)) for k in buckets.values},
            [Retired.from_json(r, at + (i,)) for i, r in enumerate(retired)],
            publishing, view, f.values.get(AWAITING) is not None and f.flag(AWAITING))


# -- reading and writing it -----------------------------------------------------------------------


def read_manifest(out: str) -> Manifest:
    """OUT's manifest, or an empty one where there is none yet."""
    path = os.path.join(out, MANIFEST)
    try:
        with open(path, encoding="utf-8") as f:
            value: object = json.load(f)
    except FileNotFoundError:
        return Manifest()
    except ValueError as e:
        raise NotADataset(f"{path} is not a dataset manifest ({e}); OUT must be a directory this command made") from None
    if isinstance(value, dict) and value.get("format") in _EARLIER:
        raise NotADataset(f"{path} was made by an earlier version ({_EARLIER[value['format']]}); "
                          "export into a new OUT (the transcripts are all read again)")
    if not isinstance(value, dict) or value.get("format") != FORMAT:
        raise NotADataset(f"{path} is not a manifest of this version ({FORMAT}); export into a new OUT")
    try:
        return Manifest.from_json(value)
    except BadValue as e:
        raise NotADataset(f"{path} is not a manifest this version can read: {e}; OUT must be a directory this "
                          "command made: export into a new OUT") from None


def write_manifest(out: str, staging: str, manifest: Manifest) -> None:
    """Replace the manifest atomically: temp file, fsync, rename, fsync the directory."""
    tmp = os.path.join(staging, f"manifest-{uuid.uuid4().hex}.json")
    data = json.dumps(manifest.to_json(), ensure_ascii=True, sort_keys=True, separators=(",", ":")).encode("ascii")
    write_new(tmp, data, sync=True)
    os.replace(tmp, os.path.join(out, MANIFEST))
    fsync_dir(os.path.join(out, MANIFEST))
