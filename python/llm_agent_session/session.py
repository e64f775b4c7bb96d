"""The public ``Session``: create, load, append, close; peek, salvage, fork delegate."""

from __future__ import annotations

import contextlib
import inspect
import os
import threading
import weakref
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, cast

from . import _backend, _index, _platform
from ._events import EventLog
from ._files import publish_new, same_inode, write_all
from ._load import check_and_repair, open_locked, remove_leftover_repair
from ._fold import OUTCOMES, FoldProblem, FoldState, artifact_name_problem
from .canonical import (
    copy_json,
    dumps,
    envelope_line,
    new_id,
    now_ts,
    parse_arguments,
    sha256_digest,
    validate,
)
from .errors import (
    CoreFailure,
    DanglingReference,
    InvalidToolOutcome,
    SessionBroken,
    SessionClosed,
    TranscriptConflict,
    UnknownToolOperation,
    public_error,
)
from ._unanswered import INTERRUPTED_TEXT as INTERRUPTED_TEXT
from ._unanswered import NEVER_RUN_TEXT as NEVER_RUN_TEXT
from ._unanswered import RESULT_GONE_TEXT as RESULT_GONE_TEXT
from ._unanswered import RESULT_LOST_TEXT as RESULT_LOST_TEXT
from ._unanswered import UnansweredCall, find_operations, unanswered_calls
from .messages import Event, FrozenDict, FrozenList, Message, MessageLike, PendingToolOperation, message_extras
from ._token_usage import TOKEN_USAGE, Usage

if TYPE_CHECKING:
    from .secrets.policy import LineMasker, Policy


def _require(value: Any, types: Tuple[type, ...], what: str, *, optional: bool = False) -> None:
    if value is None and optional:
        return
    if type(value) is bool and bool not in types:
        ok = False
    else:
        ok = isinstance(value, types)
    if not ok:
        names = " or ".join(t.__name__ for t in types) + (" or None" if optional else "")
        raise TypeError(f"{what} must be {names}, not {type(value).__name__}")


def _require_content(value: Any, what: str) -> None:
    """Message content: a str, a list of content parts, or None."""
    if value is not None and not isinstance(value, (str, list, tuple)):
        raise TypeError(f"{what} must be a str, a list of content parts or None, not {type(value).__name__}")


def _plain(msg: Message) -> bool:
    """The common shapes in one test: a role and text, no tool calls, every field an
    immutable value of its exact type (so nothing of it can change after a check)."""
    return (
        type(msg.role) is str
        and (msg.content is None or type(msg.content) is str)
        and msg.tool_calls is None
        and (msg.tool_call_id is None or type(msg.tool_call_id) is str)
        and msg.name is None
        and type(msg.sticky) is bool
        and type(msg.sysprompt) is bool
        and msg.depth is None
    )


def as_message(message: MessageLike) -> Message:
    """A checked Message from a Message or a mapping in its shape (unknown keys ignored)."""
    if isinstance(message, Message):
        msg = message
        if _plain(msg):  # most appends skip the checks below
            return msg
    elif isinstance(message, Mapping):
        msg = Message.from_dict(message)
    else:
        raise TypeError(f"a message must be a Message or a mapping, not {type(message).__name__}")
    _require(msg.role, (str,), "message role")
    _require_content(msg.content, "message content")
    _require(msg.tool_calls, (list, tuple), "message tool_calls", optional=True)
    _require(msg.tool_call_id, (str,), "message tool_call_id", optional=True)
    _require(msg.name, (str,), "message name", optional=True)
    _require(msg.sticky, (bool,), "message sticky")
    _require(msg.sysprompt, (bool,), "message sysprompt")
    _require(msg.depth, (int,), "message depth", optional=True)
    return msg


# Every session whose descriptor is open in this process, for the fork hook below.
_open_sessions: "weakref.WeakSet[Session]" = weakref.WeakSet()


def _close_inherited_descriptors() -> None:
    """In a child right after ``fork()``: close every session's inherited descriptor.

    The lock is shared by every descriptor of the open file, so a child that kept its
    copy would hold the parent's lock after the parent closed (a forked child never
    holds a session's lock). No lock is taken here: another thread of the parent
    may have held one at the fork, and it would never be released in the child. The
    session object stays; its appends refuse with ``SessionBroken`` (the pid differs).
    """
    for session in list(_open_sessions):
        fd, session._fd = session._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)
    _open_sessions.clear()


if hasattr(os, "register_at_fork"):  # not on Windows, which has no fork
    os.register_at_fork(after_in_child=_close_inherited_descriptors)


def dispatched_payload(
    call_id: str,
    tool: str,
    arguments: Any,
    idempotency: Optional[str] = None,
    run_id: Optional[str] = None,
    round: Optional[int] = None,
) -> Dict[str, Any]:
    """The ``tool-dispatched`` payload (docs/FORMAT.md): `arguments` canonicalised (a string of
    JSON stored parsed, unless what it parses to cannot be stored) and its digest.
    Raises TypeError/ValueError for arguments JSON cannot carry. Shared by
    ``append_tool_dispatched`` and the importers' bulk writer."""
    args = parse_arguments(arguments)
    if args is not arguments:
        try:
            validate(args, "arguments")
        except (TypeError, ValueError):
            args = arguments  # parsed into something unstorable: keep the string itself
            validate(args, "arguments")
    else:
        validate(args, "arguments")
    return {
        "call-id": call_id,
        "tool": tool,
        "arguments": args,
        "arguments-digest": sha256_digest(dumps(args).encode("utf-8")),
        "idempotency": idempotency,
        "run-id": run_id,
        "round": round,
    }


class Session:
    """One transcript (an append-only JSONL file) open for appending.

    Three ways in:

    - ``Session.create(path, meta)``: a new transcript, its first line the meta.
    - ``Session.load(path)``: an existing one, its torn last line (a crash mid-write)
      cut off, every line replayed into ``messages``, ``grants`` and the tool
      operations left open.
    - ``Session.peek(path)``: read what is there without writing or locking (a viewer
      of a file another process is writing). ``salvage`` and ``fork`` make new files
      from the lines of another.

    A session holds an exclusive lock on the file (``SessionLocked`` for a second
    writer, in this or another process) and one append handle until ``close()``; it is
    a context manager, and every method is thread-safe. Each ``append_*`` checks its
    input first (``TypeError``/``ValueError``, nothing written), then writes one whole
    line and returns its envelope id once the kernel has the line: that survives the
    process being killed; with ``fsync=True`` each line is also fsynced, which survives
    a power loss. Grants are always fsynced. Afterwards the in-memory state is what
    ``load`` of the file would give.

    The conversation as the model is sent it next: ``messages`` (compactions,
    elisions applied) with ``message_ids``; everything else: ``meta``, ``grants``,
    ``events`` (every line), ``pending_tool_operations()``, ``warnings``.
    Errors about a transcript inherit ``TranscriptError``; docs/FORMAT.md in the
    source distribution describes the file.
    """

    # help(Session) opens with the docstring above (create, load, peek), not with the
    # internal constructor's parameters: a session is never made by calling Session(...).
    __signature__ = inspect.Signature()

    def __init__(
        self,
        path: str,
        fd: int,
        state: FoldState,
        events: Sequence[Event],
        warnings: List[str],
        fsync: bool,
        indexed: Optional[int] = None,
    ) -> None:
        """Internal: sessions come from ``create``, ``load`` and ``fork``. `indexed`: the
        bytes the side index kept for the file covers (0: none yet), or None: keep none."""
        self._path = path
        # Checks and the artifacts dir use the absolute path: an agent may chdir meanwhile.
        self._abs_path = os.path.abspath(path)
        self._fd: Optional[int] = fd
        self._state = state
        self._read_events = events  # what load read; a lazy sequence on the native core
        self._appended: List[Event] = []
        self._appended_raw: List[Tuple[str, str, str, Dict[str, Any]]] = []
        # For each live message, the object sync_messages was handed for it (a Message: the
        # caller's own, so the next sync knows it by identity), else the session's; None
        # until a sync, and again after any line that moves or changes live messages.
        self._synced: Optional[List[Any]] = None
        self._appended_at: Dict[str, int] = {}  # id -> index in _appended_raw
        self._warnings = warnings
        self._fsync = fsync
        self._lock = threading.RLock()
        self._pid = os.getpid()
        self._broken: Optional[str] = None
        # A write-time redaction policy's writer (docs/secrets.md): what it masks is masked in
        # the lines written only; the state above keeps what was appended.
        self._redaction: Optional["LineMasker"] = None
        # The side index this session keeps current (docs/durability.md): the bytes it
        # covers, the file's end after the last append, and the refresh under way.
        self._indexed = indexed
        self._end = os.fstat(fd).st_size if indexed is not None else 0
        self._refreshing: Optional[threading.Thread] = None
        self._index_used = "none"
        _open_sessions.add(self)

    # -- the three ways in -----------------------------------------------------------------

    @classmethod
    def create(
        cls, path: Any, meta: Optional[Mapping[str, Any]] = None, *, fsync: bool = False,
        redaction: Optional["Policy"] = None,
    ) -> "Session":
        """Create a new transcript at `path` whose first line is `meta`, and open it.

        Missing parent directories are created (mode 0700), the file (mode 0600) is
        published atomically: a crash never leaves a half-made transcript at `path`.
        ``fsync=True`` fsyncs every later line too (and the file and directory now).
        Raises FileExistsError if `path` exists (it is never overwritten),
        TypeError/ValueError if `meta` is not a JSON-able mapping,
        NotImplementedError where there is no flock (Windows).

        ``redaction``: a ``secrets.Policy``; every line written (the meta's too) has the
        secrets it finds masked (docs/secrets.md), while this session's state keeps the
        values as given.
        """
        _platform.require_lock("Session.create")
        path = os.fspath(path)
        if meta is None:
            meta = {}
        if not isinstance(meta, Mapping):
            raise TypeError(f"meta must be a mapping, not {type(meta).__name__}")
        meta = dict(meta)
        validate(meta, "meta")
        payload_json = dumps(meta)
        id_, ts = new_id(), now_ts()
        line = envelope_line(id_, "session-meta", ts, payload_json)
        masker = None if redaction is None else redaction.writer()
        if masker is not None:
            line = masker.line("session-meta", copy_json(meta), id_, ts, line)
        fd = publish_new(path, line, fsync=fsync)
        state = FoldState()
        state.meta = copy_json(meta)
        state.envelope_at = {id_: 0}
        events = [Event(id_, "session-meta", ts, 1, state.meta)]
        session = cls(path, fd, state, events, [], fsync, indexed=0)
        session._redaction = masker
        return session

    @classmethod
    def load(
        cls, path: Any, *, fsync: bool = False, index: bool = True, redaction: Optional["Policy"] = None,
    ) -> "Session":
        """Open an existing transcript: repair a torn tail, replay every line, keep a handle.

        A torn last line (a writer killed mid-line) is cut off by a verbatim copy and an
        atomic rename, and reported in ``warnings``; a whole last line without its
        ``\\n`` gets one. Costs one read of the whole file (O(size)); on the native
        core events are built only when read.

        With ``index=True`` (the default) the transcript's side index in the user's
        cache (``llm_agent_session.index_file(path)``), when there is one that still
        describes the file, replaces reading what it covers: only the bytes appended
        since are read, and the result is exactly a whole read's. A file of 8 MB or more
        gets one written (off the caller's path), and the session keeps it current as it
        appends. ``index=False`` reads the whole file and writes no index.
        Raises FileNotFoundError, NotATranscript (no session-meta first line),
        CorruptTranscript / DanglingReference (with ``.line`` and ``.offset``: damage
        that no crash produces), UnsupportedVersion, SessionLocked (another session
        has it open), PermissionError (a torn tail in a read-only file), OSError (the
        repair copy failed: the file is unchanged), NotImplementedError (Windows).
        ``redaction``: a ``secrets.Policy`` for the lines appended from now on (see ``create``).
        """
        _platform.require_lock("Session.load")
        path = os.fspath(path)
        masker = None if redaction is None else redaction.writer()
        fd = open_locked(path)
        warnings: List[str] = []
        try:
            # What an index must describe: the file as it was before a repair (which
            # copies its good prefix verbatim to a new file) or a final newline.
            then = os.fstat(fd)
            remove_leftover_repair(path, warnings)
            fd, size = check_and_repair(path, fd, warnings)
            try:
                state, events, used, kept = _index.replay(path, fd, size, then, use=bool(index), write_ok=bool(index))
            except CoreFailure as f:
                raise public_error(f, path) from None
        except BaseException:
            os.close(fd)
            raise
        indexed = (size if kept else 0) if index else None
        session = cls(path, fd, state, events, warnings, fsync, indexed)
        session._index_used = used  # what became of the side index (tests, diagnostics)
        session._redaction = masker
        return session

    @staticmethod
    def peek(
        path: Any,
        *,
        offset: int = 0,
        identity: Optional[Tuple[int, int]] = None,
        survey: bool = False,
        spans: bool = False,
        index: bool = True,
    ) -> Dict[str, Any]:
        """What the file says, without writing, locking or repairing.

        Returns a dict: ``path``, ``size``, ``meta``, ``envelopes`` and ``messages`` (in
        file order, no compaction applied; lazy sequences), ``warnings`` (every line
        that did not parse, skipped), ``end`` (just past the last complete line),
        ``pending`` (bytes of an unfinished last line), ``identity`` ((st_dev,
        st_ino)), ``restarted``, and ``error`` only when there is nothing to read (no
        file, empty, first line not a session-meta). ``peek(path, offset=end,
        identity=identity)`` returns only what was appended since (it reads from the
        start, ``restarted=True``, if the file was replaced or shrank). Costs one read
        of the bytes from `offset` on.

        ``survey=True`` (only with ``offset=0``) adds ``survey``: lines and bytes by
        type, messages by role, how many messages replay would give, and the tool
        operations left open with their state, computed in the same pass.
        ``spans=True`` adds ``spans``: for each envelope, ``(line, offset, length)`` of its
        line in the file (the line counted from where the peek read, the byte offset from
        the file's start, the length up to its ``\\n``), so a follower can read one
        line again (its raw text) or place a byte offset (a search hit) on its envelope.

        With ``index=True`` (the default) a peek of the whole file takes what the
        transcript's side index holds (``Session.load``), when it still describes the
        file, and reads only the bytes after it; the result is the same. A peek writes
        no index.
        Raises ValueError for a negative or non-int `offset`, or a survey with one.
        """
        from ._peek import peek

        return peek(os.fspath(path), offset=offset, identity=identity, survey=survey, spans=spans,
                    index=bool(index))

    @staticmethod
    def salvage(path: Any, out: Any) -> Dict[str, Any]:
        """Copy every envelope that parses into the new file `out`; report what was dropped.

        For a file that ``load`` refuses. Lines are copied verbatim, in order; `out` is
        published atomically and never overwritten (FileExistsError). Returns a dict:
        ``kept``, ``dropped`` (line, start, end, reason of each), ``loads`` (whether
        `out` replays) and ``error`` (why not). Costs one read of `path` and one
        write and replay of `out`.
        """
        from ._salvage import salvage

        return salvage(os.fspath(path), os.fspath(out))

    @classmethod
    def fork(
        cls, path: Any, out: Any, through_id: str, meta: Optional[Mapping[str, Any]] = None
    ) -> "Session":
        """A new transcript at `out`: fresh meta, then `path`'s envelopes through `through_id`.

        The meta is `meta` (default: the original's) plus ``forked-from`` (path and
        id); the lines after it are copied byte for byte. Returns the new session, open.
        Raises FileExistsError, NotATranscript, DanglingReference (no such envelope),
        CorruptTranscript (the part to copy does not replay), NotImplementedError
        (Windows). Costs one read of `path` and a replay of what is copied.
        """
        from ._fork import fork

        _platform.require_lock("Session.fork (it returns the new transcript open for appending)")
        out = os.fspath(out)
        fd, state, events = fork(os.fspath(path), out, through_id, meta)
        return cls(out, fd, state, events, [], False, indexed=0)

    # -- what a session exposes ------------------------------------------------------------

    @property
    def path(self) -> str:
        """The path the session was opened with."""
        return self._path

    @property
    def meta(self) -> Dict[str, Any]:
        """The session-meta payload (a copy: editing it changes nothing)."""
        return cast(Dict[str, Any], copy_json(self._state.meta))

    @property
    def messages(self) -> List[Message]:
        """The live conversation (compaction and elision applied), as the model is sent it
        next; a new list of immutable Messages (O(number of messages))."""
        with self._lock:
            return list(self._state.messages)

    @property
    def message_ids(self) -> List[str]:
        """The envelope id of each message of ``messages``, in the same order (a new list)."""
        with self._lock:
            return list(self._state.ids)

    @property
    def grants(self) -> Dict[str, Any]:
        """The last grants snapshot, ``{}`` if none (a copy: editing it grants nothing)."""
        with self._lock:
            return cast(Dict[str, Any], copy_json(self._state.grants))

    @property
    def events(self) -> EventLog:
        """Every envelope in file order (a list-like view, items built on access). Each
        Event read from it is new, its payload a copy: editing it changes nothing."""
        with self._lock:
            # The native core's lazy sequence builds a new Event at each access; a list
            # (the pure core's, or what this session appended) is the session's own.
            copy_read = isinstance(self._read_events, list)
            return EventLog(self._read_events, list(self._appended_events()), copy_read=copy_read)

    def _appended_events(self) -> List[Event]:
        """The Events of this session's appends, built on the first access after them
        (an Event cost as much as an append's write)."""
        for id_, type_, ts, payload in self._appended_raw[len(self._appended) :]:
            self._appended.append(Event(id_, type_, ts, 1, payload))
        return self._appended

    @property
    def warnings(self) -> List[str]:
        """What ``load`` changed or noticed (a torn line removed, other hard links), as text."""
        return list(self._warnings)

    @property
    def closed(self) -> bool:
        """True after ``close()``."""
        return self._fd is None

    def pending_tool_operations(self) -> List[PendingToolOperation]:
        """Every dispatched tool operation without a settle, in file order, each with its
        state: ``dispatched`` (may or may not have run) or ``result-recorded`` (a tool
        message answers its call; only the settle is missing). O(pending operations)."""
        with self._lock:
            ops = self._state.pending_operations()
        # The arguments are the session's own (its events hold them too): a copy each.
        return [op if _immutable(op.arguments) else replace(op, arguments=copy_json(op.arguments)) for op in ops]

    def run_context_section(self, digest: str) -> Optional[str]:
        """The text of the run-context section with this digest ("sha256:<hex>"), or None
        when no line of this transcript carries it. Reads that one line (native core)."""
        with self._lock:
            return self._state.sections.get(digest)

    def message_extra(self, message_id: str) -> Dict[str, Any]:
        """The extras the ``message`` envelope `message_id` carries: its payload minus the
        message keys, as a new dict (editing it changes nothing).

        How a runtime reads back its own item stored beside the chat-shaped message.
        Works for every message line of the transcript, live or not (compacted,
        rewound). The answer is what the line held when it was loaded (or appended),
        from memory: the file is not read again, so an edit of the file made since
        changes nothing. Raises ``KeyError`` when `message_id` is not a ``message``
        envelope of this transcript. Cost: that one line's extras, never a scan.
        """
        with self._lock:
            if isinstance(message_id, str) and message_id not in self._appended_at:
                kept = self._state.kept_extras
                event = self._state.envelope_at.get(message_id)
                if kept is not None and event is not None:
                    extras = kept.get(event)  # a native load's: a new dict each time
                    if extras is None:
                        raise KeyError(message_id)
                    return extras
            read = self._event_by_id(message_id)
        if read is None or read.type != "message":
            raise KeyError(message_id)
        return {k: copy_json(v) for k, v in message_extras(read.payload).items()}

    def _event_by_id(self, id_: Any) -> Optional[Event]:
        """The envelope `id_` of this transcript, read or appended; None if there is none."""
        if not isinstance(id_, str):
            return None
        k = self._appended_at.get(id_)
        if k is not None:
            return self._appended_events()[k]
        i = self._state.envelope_at.get(id_)
        return None if i is None else self._read_events[i]

    @property
    def artifacts_dir(self) -> str:
        """``<stem>.artifacts`` beside the transcript: where full tool results live."""
        head, name = os.path.split(self._abs_path)
        stem = os.path.splitext(name)[0]
        return os.path.join(head, stem + ".artifacts")

    def artifact_path(self, file: str) -> str:
        """The path of artifact `file` in ``artifacts_dir``; ValueError unless `file` is a
        plain file name (no ``/``, ``\\``, NUL, ``.`` or ``..``)."""
        problem = artifact_name_problem(file)
        if problem is not None:
            raise ValueError(f"{problem}: {file!r}; artifacts are plain file names in {self.artifacts_dir}")
        return os.path.join(self.artifacts_dir, file)

    # -- appends ----------------------------------------------------------------------------

    def append_message(
        self, message: MessageLike, extra: Optional[Mapping[str, Any]] = None, *, usage: Optional[Usage] = None
    ) -> str:
        """Append one message (a Message or a mapping in its shape); return its envelope id.

        `extra` keys (``finish-reason``, a runtime's own item) are stored on the line
        beside the message and visible in ``events``, never in ``messages``; an extra
        named like a message key is dropped. `usage`: the token usage of the provider
        response this message is (a part of), stored as the extra ``token-usage``
        (``llm_agent_session.usage``; an ``extra["token-usage"]`` is checked the same
        way, and giving both is a ValueError). Raises TypeError/ValueError for what JSON
        cannot carry exactly (nothing written), SessionClosed, SessionBroken, OSError
        from the write (the file is truncated back).
        """
        # A plain Message holds nothing that can change, so the live list may keep this
        # very object instead of one built again from the written payload (equal to it).
        kept = message if type(message) is Message and _plain(message) else None
        msg = kept if kept is not None else as_message(message)
        payload: Dict[str, Any] = {}
        if extra is not None:
            if not isinstance(extra, Mapping):
                raise TypeError(f"extra must be a mapping, not {type(extra).__name__}")
            # The message keys belong to the message alone. An extra named like one is
            # dropped even when the message leaves that key unset, or replay would read
            # it as the message's own (a name, stickiness, an answered tool call).
            payload.update(message_extras(extra))
            if TOKEN_USAGE in payload:
                if usage is not None:
                    raise ValueError(f"usage given twice: as usage= and as extra[{TOKEN_USAGE!r}]")
                payload[TOKEN_USAGE] = Usage.checked(payload[TOKEN_USAGE], f"extra[{TOKEN_USAGE!r}]").to_json()
            payload.update(msg._fields())
        else:
            payload = msg._fields()  # a new dict; `_append` copies its values
        if usage is not None:
            if not isinstance(usage, Usage):
                raise TypeError(f"usage must be a llm_agent_session.Usage or None, not {type(usage).__name__}")
            payload[TOKEN_USAGE] = usage.to_json()
        return self._append("message", payload, "message", message=kept)

    def append_grants(self, grants: Mapping[str, Any]) -> str:
        """Record the whole permission snapshot (a JSON-able mapping), always fsynced;
        ``grants`` is then this snapshot. Returns the envelope id. Raises as
        ``append_message`` does."""
        if not isinstance(grants, Mapping):
            raise TypeError(f"grants must be a mapping, not {type(grants).__name__}")
        # Always fsynced: a lost revocation would resume with more permission than granted.
        return self._append("grants", {"grants": dict(grants)}, "grants", force_fsync=True)

    def append_compaction(
        self,
        summary: str,
        replaces_through_id: str,
        tokens_before: int,
        tokens_after: int,
        fallback: bool = False,
    ) -> str:
        """Fold the live messages up to and including `replaces_through_id` into one user
        message holding `summary` (sticky ones are kept before it). Returns the
        envelope id, which is also the summary message's id. Raises DanglingReference
        (nothing written) when that id is not a live message, TypeError for wrong
        types, and as ``append_message`` does. O(number of messages).
        """
        _require(summary, (str,), "summary")
        _require(replaces_through_id, (str,), "replaces_through_id")
        _require(tokens_before, (int,), "tokens_before")
        _require(tokens_after, (int,), "tokens_after")
        _require(fallback, (bool,), "fallback")
        payload = {
            "summary": summary,
            "replaces-through-id": replaces_through_id,
            "tokens-before": tokens_before,
            "tokens-after": tokens_after,
            "fallback": fallback,
        }
        return self._append("compaction", payload, "compaction")

    def append_elision(self, items: Iterable[Any]) -> str:
        """Replace the content of live messages with stubs: `items` are (id, stub) pairs
        or {"id", "stub"} mappings; everything else about those messages stays. A stub
        is message content: a str, a list of content parts, or None.
        Returns the envelope id. Raises DanglingReference (nothing written) when an id
        is not a live message, TypeError for a stub that is not message content, and as
        ``append_message`` does."""
        out = []
        for n, item in enumerate(items):
            id_, stub = _pair(item, ("id", "stub"), "elision items")
            _require(id_, (str,), "elision item id")
            _require_content(stub, f"elision item {n} stub (the message's new content)")
            out.append({"id": id_, "stub": stub})
        return self._append("elision", {"items": out}, "elision")

    def append_rewind(self, to_id: Optional[str]) -> str:
        """Cut the live conversation back so that it ends with the live message `to_id`
        (``None``: nothing live is left, sticky messages included).

        Nothing is removed from the file: the rewound messages stay on their lines, in
        ``events`` and every viewer. Tool operations, grants and run context are left
        as they are. Raises ``DanglingReference`` (nothing written) when `to_id` is not
        a live message: never written, compacted away or rewound already. Returns the
        rewind envelope's id.
        """
        _require(to_id, (str,), "to_id", optional=True)
        return self._append("rewind", {"to-id": to_id}, "rewind")

    def append_tool_dispatched(
        self,
        call_id: str,
        tool: str,
        arguments: Any,
        *,
        idempotency: Optional[str] = None,
        run_id: Optional[str] = None,
        round: Optional[int] = None,
    ) -> str:
        """Record that tool call `call_id` is about to be sent to `tool`; call it just
        before the call leaves. Returns the operation id (for ``append_tool_settled``).

        `arguments` (a JSON string is stored parsed) and its SHA-256 are stored;
        `idempotency` tells a resuming run whether a retry is safe. Raises
        TypeError/ValueError (nothing written), and as ``append_message`` does.
        """
        _require(call_id, (str,), "call_id")
        _require(tool, (str,), "tool")
        _require(idempotency, (str,), "idempotency", optional=True)
        _require(run_id, (str,), "run_id", optional=True)
        _require(round, (int,), "round", optional=True)
        payload = dispatched_payload(call_id, tool, arguments, idempotency, run_id, round)
        return self._append("tool-dispatched", payload, "tool-dispatched")

    def append_tool_settled(
        self,
        op_id: str,
        outcome: str,
        *,
        reason: Optional[str] = None,
        duration: Optional[float] = None,
        result_digest: Optional[str] = None,
        artifact: Optional[Mapping[str, Any]] = None,
        error: Optional[str] = None,
    ) -> str:
        """Record how operation `op_id` ended: `outcome` is ``completed``, ``failed`` or
        ``outcome-unknown``; the rest is optional detail (`artifact`: where the full
        result is, see ``artifact_path``). Write it after the tool message. Returns the
        envelope id. Raises ToolOperationError (nothing written) for an unknown or
        already settled operation or another outcome, and as ``append_message`` does.
        """
        _require(op_id, (str,), "op_id")
        if not isinstance(outcome, str) or outcome not in OUTCOMES:
            raise InvalidToolOutcome(
                f"outcome must be one of {', '.join(OUTCOMES)}, not {outcome!r}; nothing was written"
            )
        _require(reason, (str,), "reason", optional=True)
        _require(duration, (int, float), "duration", optional=True)
        _require(result_digest, (str,), "result_digest", optional=True)
        _require(error, (str,), "error", optional=True)
        payload: Dict[str, Any] = {"op-id": op_id, "outcome": outcome}
        if reason is not None:
            payload["reason"] = reason
        if duration is not None:
            payload["duration"] = duration
        if result_digest is not None:
            payload["result-digest"] = result_digest
        if artifact is not None:
            payload["artifact"] = _artifact_payload(artifact)
        if error is not None:
            payload["error"] = error
        return self._append("tool-settled", payload, "tool-settled")

    def resolve_tool_operation(
        self, op_id: str, outcome: str = "outcome-unknown", *, reason: Optional[str] = None
    ) -> str:
        """Settle a pending operation the app has decided about (after a crash, say):
        ``append_tool_settled(op_id, outcome, reason=reason)``; raises as it does."""
        return self.append_tool_settled(op_id, outcome, reason=reason)

    def append_run_context(self, sections: Iterable[Any], facts: Iterable[Any] = ()) -> str:
        """Record what the run was told: sections ({name, text} mappings, (name, text) pairs or a
        {name: text} mapping) stored once per digest, and facts ((name, value) pairs, in order).

        A section whose text an earlier line carries is stored as a reference to it
        (read back with ``run_context_section``). Returns the envelope id. Raises
        TypeError/ValueError (nothing written), and as ``append_message`` does.
        """
        if isinstance(sections, Mapping):
            sections = list(sections.items())  # {name: text}, in its order
        if isinstance(facts, Mapping):
            facts = list(facts.items())
        given: List[Tuple[str, str]] = []
        for section in sections:
            name, text = _pair(section, ("name", "text"), "run-context sections")
            _require(name, (str,), "section name")
            _require(text, (str,), "section text")
            validate(text, f"section {name!r} text")
            given.append((cast(str, name), cast(str, text)))
        fact_list: List[List[Any]] = []
        for fact in facts:
            key, value = _pair(fact, None, "run-context facts")
            _require(key, (str,), "fact name")
            fact_list.append([key, value])
        id_ = new_id()
        with self._lock:
            known = self._state.section_lines
            here: Dict[str, str] = {}
            out = []
            for name, text in given:
                digest = sha256_digest(text.encode("utf-8"))
                if digest in known:
                    out.append({"name": name, "digest": digest, "rendered-in": known[digest]})
                elif digest in here:
                    out.append({"name": name, "digest": digest, "rendered-in": id_})
                else:
                    here[digest] = id_
                    out.append({"name": name, "digest": digest, "text": text})
            payload = {"sections": out, "facts": fact_list}
            return self._append("run-context", payload, "run-context", id_=id_)

    def sync_messages(self, messages: Sequence[MessageLike], *, allow_rewind: bool = False) -> List[str]:
        """Append each message past those the session has; refuse a list that contradicts it.

        "Starts with" compares JSON values exactly (``True`` is not ``1``, ``1`` is not
        ``1.0``). What cannot have changed since the last sync compares by identity, for
        free: the very Messages ``messages`` handed out (read-only) and the caller's own
        plain Messages (text, no tool calls) synced before; any other object (a dict, a
        Message with content parts or tool calls, which the caller may have edited in
        place) is compared again as JSON.
        A list that does not start with the session's messages raises
        ``TranscriptConflict``, unless ``allow_rewind=True``: then one ``rewind`` to the
        longest common prefix is written, followed by the rest of the list.
        Every new message is checked before the first line is written, so a bad one
        leaves the transcript as it was. Returns the new messages' ids. Cost: one
        identity check per message (a pass over the list's pointers, 2-3 nanoseconds a
        message on the native core: a Python list gives no sign that an item was
        replaced, so a sound check reads them all), plus one comparison per message not
        known by identity, plus O(new).
        """
        # A list is read as it is (copying it would touch every item's reference count).
        given = messages if type(messages) is list else list(messages)
        with self._lock:
            current = self._state.messages
            n = len(current)
            synced = self._synced if self._synced is not None and len(self._synced) == n else current
            # `is` first: a loop usually hands back the very objects it synced (or
            # `messages` gave it) before; only the rest are compared, as JSON.
            by_identity = _backend.core.identical_prefix(given, synced)
            common = by_identity
            for have, mine, known in zip(current[common:], given[common:], synced[common:]):
                # Compared as JSON, not with `==`: Python says True == 1 == 1.0, the
                # serialisations (and so the transcript) keep them apart.
                if mine is not have and mine is not known and not _same_message(mine, have):
                    break
                common += 1
            if common < len(current) and not allow_rewind:
                if len(given) < len(current) and common == len(given):
                    raise TranscriptConflict(
                        f"{self._path}: sync_messages got {len(given)} messages, but the transcript "
                        f"already holds {len(current)}; pass the whole conversation, or "
                        "allow_rewind=True to cut the transcript back (nothing was written)"
                    )
                mine = as_message(given[common])
                raise TranscriptConflict(
                    f"{self._path}: message {common} of the list (a {mine.role!r} message) differs "
                    f"from message {common} of the transcript (id {self._state.ids[common]}); a run "
                    "that contradicts its transcript is not recorded (nothing was written; "
                    "allow_rewind=True records it as a rewind)"
                )
            new = [as_message(m) for m in given[common:]]
            for m in new:
                validate(m._fields(), "message")
            if common < len(current):
                self.append_rewind(self._state.ids[common - 1] if common else None)
            ids = [self.append_message(m) for m in new]
            # The next sync knows by identity only what cannot change: the session's own
            # messages (read-only), and a caller's plain Message (text, no tool calls);
            # anything else the caller handed in may be edited in place before then. The
            # leading items known by identity keep their places (a rewind cuts after
            # them), so only the rest is looked at.
            ours, kept = self._state.messages, min(by_identity, common)
            if synced is self._synced:
                del synced[kept:]
            else:  # `current` (never to be changed), or a list a rewind made stale
                synced = synced[:kept]
            synced.extend(g if type(g) is Message and _plain(g) else h for g, h in zip(given[kept:], ours[kept:]))
            self._synced = synced
            return ids

    def answer_interrupted_tool_calls(self, content: Any = None) -> List[str]:
        """Answer every tool call of a live assistant message that no live ``tool``
        message after it answers (providers reuse call ids: an earlier answer with the
        same id does not count), so that ``messages`` is a conversation the OpenAI
        chat-completions API accepts again. Returns the new message ids.

        The answer says what is known of the call (texts in the README, "For agent
        runtimes"):

        - its operation is still ``dispatched`` (a crash mid-call): interrupted, may or
          may not have run (`content` when given; default ``INTERRUPTED_TEXT``); the
          operation is then settled ``outcome-unknown`` with reason ``"interrupted"``;
        - its operation was settled ``outcome-unknown`` (nobody knows whether it ran):
          the same text, nothing more written;
        - it ran and its result was recorded, then rewound or compacted away:
          ``RESULT_GONE_TEXT``;
        - its operation was settled ``completed`` or ``failed`` with no result recorded:
          ``RESULT_LOST_TEXT``;
        - it was never dispatched: ``NEVER_RUN_TEXT``.

        Nothing else is written; an operation in state ``result-recorded`` is left for
        the app to settle. The answers are appended at the end, in the order the calls
        were made: where a later non-tool message already follows an unanswered call,
        the append-only file cannot put the answer before it. Cost: O(live messages),
        plus a read of the lines written since the oldest unanswered call.
        """
        if content is not None:
            as_message(Message("tool", content))  # the content's type, checked before any write
            validate(content, "content")
        with self._lock:
            new_ids: List[str] = []
            for call in self._unanswered_tool_calls():
                text, interrupted = call.answer(self._state.pending, content)
                new_ids.append(self.append_message(Message("tool", text, tool_call_id=call.call_id)))
                for op_id in interrupted:
                    self.append_tool_settled(op_id, "outcome-unknown", reason="interrupted")
            return new_ids

    def _unanswered_tool_calls(self) -> List[UnansweredCall]:
        """The live calls no tool message answers, each with the operations dispatched for
        it (also what the integrations ask before answering)."""
        with self._lock:
            calls = unanswered_calls(self._state.messages, self._state.ids)
            if calls:
                find_operations(calls, self._events_from(min(self._event_index(c.message_id) for c in calls)))
            return calls

    def _event_index(self, id_: str) -> int:
        """The index in ``events`` of the envelope `id_`, read or appended."""
        k = self._appended_at.get(id_)
        return len(self._read_events) + k if k is not None else cast(int, self._state.envelope_at.get(id_))

    def _events_from(self, start: int) -> Iterable[Event]:
        """The session's own Events (not copies) from index `start` on, in file order."""
        read = self._read_events
        for i in range(start, len(read)):
            yield read[i]
        appended = self._appended_events()
        yield from appended[max(start - len(read), 0) :]

    # -- closing -------------------------------------------------------------------------------

    def close(self) -> None:
        """Release the handle and the lock; later appends raise SessionClosed. Idempotent.
        The side index is brought up to date on a thread of its own (after a load with
        ``index=True``, of a transcript of 8 MB or more)."""
        with self._lock:
            if self._fd is not None and self._indexed is not None and self._end > self._indexed:
                self._refresh_index()
            fd, self._fd = self._fd, None
            _open_sessions.discard(self)
            if fd is not None:
                os.close(fd)

    def _refresh_index(self) -> None:
        """Start bringing the side index to the file's end, off the appending thread: the
        bytes appended since it was last written are read and folded from it (under the
        session's lock, so the end is a line's end)."""
        fd, end = self._fd, self._end
        if fd is None or self._indexed is None or end < _index.AUTO_MIN_BYTES or self._broken is not None:
            return
        rfd = _index.reopen_to_read(fd, self._abs_path)
        if rfd is None:
            return
        st = os.fstat(fd)
        before = self._refreshing
        path = self._abs_path

        def run() -> None:
            if before is not None:
                before.join()
            _index.refresh(path, rfd, end, st)

        thread = threading.Thread(target=run, name="llm-agent-session-index")
        self._refreshing = thread
        self._indexed = end
        _index.start(thread)

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def __repr__(self) -> str:
        state = "closed" if self._fd is None else "open"
        return f"<Session {self._path!r} {state}, {len(self._state.messages)} messages>"

    # -- the one write path ---------------------------------------------------------------------

    def _append(
        self,
        type_: str,
        payload: Dict[str, Any],
        what: str,
        *,
        force_fsync: bool = False,
        id_: Optional[str] = None,
        message: Optional[Message] = None,
    ) -> str:
        """Write one envelope. `message`: the Message a `message` payload makes, when the
        caller has it (see `FoldState.apply`)."""
        core = _backend.core
        encode = core.encode_envelope
        with self._lock:
            # Serialised under the lock so that file order is timestamp order. The native
            # serialiser validates as it writes; where it declines (bad or unusual input),
            # the reference's path runs: same bytes, and its own refusals.
            encoded = encode(type_, payload, id_) if encode is not None else None
            if encoded is None:
                validate(payload, what)  # bad input raises here, before anything is written
                payload_json = dumps(payload)
                payload = copy_json(payload)  # the caller's objects stay theirs
            else:
                id_, ts, line, payload = encoded
            fd, size = self._writable_fd(core.append_size)
            try:
                self._state.check(type_, payload)
            except FoldProblem as p:
                text = f"{self._path}: {p.reason}; nothing was written"
                if p.kind == "corrupt":
                    raise ValueError(text) from None
                cls = UnknownToolOperation if p.kind == "unknown-op" else DanglingReference
                raise cls(text, path=self._path, reason=p.reason) from None
            if encoded is None:
                new = id_ if id_ is not None else new_id()
                ts = now_ts()
                line = envelope_line(new, type_, ts, payload_json)
            else:
                new = cast(str, id_)
            if self._redaction is not None:
                line = self._redaction.line(type_, payload, new, ts, line)
            self._write_line(fd, size, line, force_fsync)
            if type_ != "message":
                self._synced = None  # live messages may have moved or changed
            self._state.apply(new, type_, ts, payload, message)
            self._appended_at[new] = len(self._appended_raw)
            self._appended_raw.append((new, type_, ts, payload))
            return new

    def _writable_fd(self, native_check: Optional[Callable[[int, str], int]]) -> Tuple[int, int]:
        """The descriptor and its size, if appending is still safe; else the reason it is not."""
        if os.getpid() != self._pid:  # first: the fork hook closed the child's descriptor
            raise SessionBroken(
                f"{self._path}: this session belongs to process {self._pid} and cannot append from "
                "a forked child; load the transcript in the child once the parent has closed it"
            )
        if self._fd is None:
            raise SessionClosed(f"{self._path}: the session is closed; open it again with Session.load")
        if self._broken is not None:
            raise SessionBroken(f"{self._path}: {self._broken}")
        if native_check is not None:
            size = native_check(self._fd, self._abs_path)
            if size >= 0:
                return self._fd, size
        else:
            st = os.fstat(self._fd)
            size = st.st_size if st.st_nlink and same_inode(st, self._abs_path) else -1
        if size < 0:
            self._broken = (
                "the file was deleted or replaced under this session; appending would write into a "
                "file nobody will read. Load the transcript again from its path"
            )
            raise SessionBroken(f"{self._path}: {self._broken}")
        return self._fd, size

    def _write_line(self, fd: int, before: int, line: bytes, force_fsync: bool) -> None:
        try:
            write_all(fd, line)
            if self._fsync or force_fsync:
                _platform.fsync(fd)
        except BaseException:
            # Never leave part of a line behind: the next line would be written after garbage.
            try:
                os.ftruncate(fd, before)
            except OSError as e:
                self._broken = (
                    f"a failed append could not be rolled back (truncate to {before} bytes failed: "
                    f"{e.strerror}); the file may end in a partial line. Close this session and "
                    "Session.load the transcript again, which repairs it"
                )
            raise
        if self._indexed is not None:
            self._end = before + len(line)
            if self._end - self._indexed >= _index.REFRESH_EVERY and (
                self._refreshing is None or not self._refreshing.is_alive()
            ):
                self._refresh_index()


def _pair(item: Any, keys: Optional[Tuple[str, str]], what: str) -> Tuple[Any, Any]:
    """Two values from a pair, or from a mapping with `keys`; a string is never split into characters."""
    if keys is not None and isinstance(item, Mapping):
        return item.get(keys[0]), item.get(keys[1])
    shape = f"({keys[0]}, {keys[1]}) pairs or mappings" if keys else "(name, value) pairs"
    if isinstance(item, (str, bytes)):
        raise TypeError(f"{what} must be {shape}, not {type(item).__name__} {item!r}")
    try:
        first, second = item
    except (TypeError, ValueError):
        raise TypeError(f"{what} must be {shape}, not {item!r}") from None
    return first, second


_JSON_SCALARS = (str, int, float, bool, type(None))
_JSON_LISTS = (list, tuple, FrozenList)
_JSON_DICTS = (dict, FrozenDict)


def _same_json(a: Any, b: Any) -> bool:
    """Whether two JSON values serialise alike (``dumps(a) == dumps(b)``), without
    serialising them: ``True`` is not ``1``, ``1`` is not ``1.0``, ``-0.0`` is not ``0.0``;
    a tuple is a list. Without recursion (a value read may nest 512 deep)."""
    pairs = [(a, b)]
    while pairs:
        a, b = pairs.pop()
        if a is b:
            continue
        ta, tb = type(a), type(b)
        if ta in _JSON_LISTS and tb in _JSON_LISTS:
            if len(a) != len(b):
                return False
            pairs.extend(zip(a, b))
        elif ta in _JSON_DICTS and tb in _JSON_DICTS:
            if a.keys() != b.keys():
                return False
            pairs.extend((v, b[k]) for k, v in a.items())
        elif ta in _JSON_SCALARS and tb in _JSON_SCALARS:
            if ta is not tb or not (float.__repr__(a) == float.__repr__(b) if ta is float else a == b):
                return False
        else:  # subclasses of JSON types, and values JSON cannot carry
            try:
                if dumps(a) != dumps(b):
                    return False
            except (TypeError, ValueError):
                return False
    return True


def _same_message(given: Any, have: Message) -> bool:
    """Whether `given` (a Message, or a mapping in its shape) is the message `have` as the
    transcript holds it: the same keys set, the same values as JSON."""
    if isinstance(given, Message):
        mine = given
    elif isinstance(given, Mapping):
        mine = Message.from_dict(given)
    else:
        return False  # as_message then names what is wrong with it
    return _same_json(mine._fields(), have._fields())


def _immutable(value: Any) -> bool:
    return type(value) in _JSON_SCALARS


def _artifact_payload(artifact: Mapping[str, Any]) -> Dict[str, Any]:
    if not isinstance(artifact, Mapping):
        raise TypeError(f"artifact must be a mapping, not {type(artifact).__name__}")
    out = dict(artifact)
    if "elided_chars" in out and "elided-chars" not in out:
        out["elided-chars"] = out.pop("elided_chars")
    problem = artifact_name_problem(out.get("file"))
    if problem is not None:
        raise ValueError(
            f"{problem}: {out.get('file')!r}; an artifact is a plain file name inside "
            "<stem>.artifacts/ beside the transcript (nothing was written)"
        )
    for key in ("bytes", "chars", "elided-chars"):
        if key in out:
            _require(out[key], (int,), f"artifact {key}")
    if "digest" in out:
        _require(out["digest"], (str,), "artifact digest")
    return out
