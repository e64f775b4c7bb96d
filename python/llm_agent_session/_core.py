"""The interface between the facade and a core, and what a core answers.

Two cores implement ``Core``: the pure-Python reference (``_pure/core.py``) and the
native extension (``_native_core.py`` over ``_native``, built from ``rust/``).
``_backend.core`` is the one this process runs. Every result is one of the named
types below; the native core builds them too (``rust/py/named.rs``), with keywords,
so the order of their fields is kept here alone.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Iterator, List, MutableMapping, NamedTuple, Optional, Protocol, Sequence, Tuple, Union

from ._fold import FoldState
from ._history_fold import Operation, Removal, SeenIds
from ._history_fold import Problem as FoldedProblem
from .messages import Event, Message
from ._token_usage import UsageTotals

# One line that did not parse: (line number, byte offset, length without its \n, reason).
Problem = Tuple[int, int, int, str]
# Where an envelope came from: (line number, byte offset, length without its \n).
Span = Tuple[int, int, int]
# The write path's serialiser: ``(type, payload, id)`` -> ``(id, ts, line, payload copy)``,
# or None where the reference's path (``canonical``) must run.
EncodeEnvelope = Callable[[str, Dict[str, Any], Optional[str]], Optional[Tuple[str, str, bytes, Any]]]
# ``(fd, path)`` -> the size of ``fd`` if ``path`` still names it, else -1.
AppendSize = Callable[[int, str], int]


class TailVerdict(NamedTuple):
    """What load must do to the end of the file (docs/FORMAT.md, "Reading: the tail first")."""

    kind: str  # "clean", "no-newline" or "torn"
    cut: int  # where the torn line starts (the repaired size), else the file size
    # The 1-based number of the torn line; 0 when the last line is whole (nothing to
    # report, and counting every newline of a large file is not free).
    line: int
    excerpt: bytes  # the torn line's first bytes


class Replayed(NamedTuple):
    """What the strict replay of load read: the fold's state, and every envelope."""

    state: FoldState
    # A list (pure) or a list-like view whose envelopes are built on access (native).
    events: Sequence[Event]


class IndexedReplay(NamedTuple):
    """What a load's replay through a side index read (``Core.replay_indexed``): the
    state and events a whole read gives, the bytes of the index of the file as read (to
    write next; None: nothing to write), and what became of the index given: ``"none"`` (none was
    given), ``"used"`` (only the bytes after its end were read), or ``"ignored: "`` and
    why (the file was read whole)."""

    state: FoldState
    events: Sequence[Event]
    index_bytes: Optional[bytes]
    used: str
    read: int  # the bytes read: after the index's end when it served, else all of them


class SurveyCounts(NamedTuple):
    """Peek's survey of a scan's envelopes (``Session.peek(path, survey=True)``), by
    envelope index (the scan's ``events``)."""

    types: List[Tuple[str, int, int]]  # (type, lines, bytes with newlines), in first-appearance order
    roles: List[Tuple[str, int]]  # messages with a string role, per role, in first-appearance order
    live: int  # messages replay would give; meaningless when `problem` is set
    problem: Optional[int]  # the first compaction or rewind naming nothing live
    open: List[Tuple[int, bool]]  # (dispatch, answered by a message), in first-dispatch order
    rewound: List[Tuple[int, int]]  # (message or summary, the rewind that cut it), in cut order


class IndexTable(NamedTuple):
    """What a reader that does not fold (peek, a viewer) takes from a side index that
    still describes the file (``Core.index_table``): the indexed envelopes, where each
    is (``(line, byte offset, length)``), the messages among them, each envelope's kind
    (a byte: its index in `kind_table`, ``(type, a message's role)``; any other value:
    read the line), where the indexed part ends (`end`, a line's start; `lines` lines
    before it), the meta, and, when asked, peek's survey of the indexed envelopes; for a
    viewer's jumps, the envelopes' times by block and the failed operations."""

    events: Sequence[Event]
    spans: Sequence[Span]
    messages: Sequence[Message]
    kinds: bytes
    kind_table: List[Tuple[str, Optional[str]]]
    end: int
    lines: int
    meta: Dict[str, Any]
    survey: Optional[SurveyCounts]
    # The index's TIME section: per block of ``_times.TIME_BLOCK`` envelopes the largest
    # ``_times.time_key`` of their ``ts`` (i64, little-endian, 8 bytes a block).
    times: bytes = b""
    # The index's FAIL section: bit ``e % 8`` of byte ``e // 8`` set when envelope ``e``
    # is a ``tool-dispatched`` whose operation was settled ``failed``.
    failed: bytes = b""
    # The index's FPRS section (u32 little-endian an envelope: ``index_format.fingerprint``
    # of its id under `id_key`): an id found without reading the file.
    fingerprints: bytes = b""
    id_key: Tuple[int, int] = (0, 0)


class Scanned(NamedTuple):
    """What the lenient scan of peek, salvage and fork found, plus the facts about each
    envelope that they need (so the native core can answer them without building every
    envelope)."""

    events: Sequence[Event]
    spans: Sequence[Span]
    problems: List[Problem]
    # The offset just past the last ``\\n`` read (bytes after it: an unfinished line).
    end: int
    # The first envelope's type, None when there is none.
    first_type: Optional[str]
    # The Message of every message envelope with a string role, in file order.
    messages: Sequence[Message]
    # (line, offset) of every message envelope without a string role.
    bad_roles: List[Tuple[int, int]]
    # The envelopes' ids, when asked for (else empty).
    ids: List[str]
    # Peek's survey of the envelopes, when asked for (else None).
    survey: Optional[SurveyCounts]


class HistoryRead(NamedTuple):
    """What ``History.read`` takes over: a ``_history_fold.HistoryFold``'s state after
    every envelope peek lists was fed to it (its ``meta`` is ``state.meta``)."""

    state: FoldState
    fed: int  # envelopes fed (``HistoryFold.count``)
    removed: MutableMapping[str, Removal]
    elided: MutableMapping[str, List[str]]
    operations: MutableMapping[str, Operation]
    answers: MutableMapping[str, str]
    calls: MutableMapping[Any, List[str]]
    grants_by_id: Dict[str, Dict[str, Any]]
    grants_id: Optional[str]
    problems: List[FoldedProblem]
    seen: SeenIds
    unanswered: Dict[Any, List[str]]


class NativeBuffer(Protocol):
    """Bytes the native core owns and hands over without a copy: ``address`` (where they
    start, valid while the object lives) and ``len``."""

    @property
    def address(self) -> int: ...

    def __len__(self) -> int: ...


# The bytes of a column: ``bytes`` (the pure core), or the native core's own.
Buffer = Union[bytes, NativeBuffer]

#: One file of ``Core.search_files``' answer: ``(identity, regular, part, tail)``.
SearchedFile = Tuple[Tuple[int, int, int, int, int], bool,
                     Optional[Tuple[bytes, bool, List[int], List[int], int]], Optional[Tuple[int, bytes]]]


class Column(NamedTuple):
    """One column of a dataset table in Arrow's memory layout, so that pyarrow wraps the
    buffers without a copy (``dataset/batches.py``). ``kind``: ``string`` (UTF-8 `values`,
    ``length + 1`` int64 `offsets`), ``int64``, ``int32``, ``float64``, ``timestamp``
    (int64 microseconds since 1970, UTC) or ``bool`` (bit-packed `values`); numbers are
    little-endian. `validity` is a bit-packed mask (1 = present), None when every row is."""

    kind: str
    length: int
    values: Buffer
    offsets: Optional[Buffer]
    validity: Optional[Buffer]


# One chunk of rows of every table: table name -> column name -> Column.
TableChunk = Dict[str, Dict[str, Column]]


class DatasetSummary(NamedTuple):
    """What the dataset pass over one transcript found besides its rows."""

    envelopes: int  # envelope lines exported (a duplicate id's later lines are not)
    skipped: int  # lines not exported: malformed, not an envelope, or a duplicate id
    refused: int  # envelopes the fold refused (load would fail there)
    first_type: Optional[str]  # the first non-blank line's type; None where it is no envelope
    # The first line's id, ts and payload (as JSON text) where it is a session-meta envelope.
    meta_id: Optional[str]
    meta_ts: Optional[str]
    meta: Optional[str]
    model: Optional[str]  # the first string `model` extra of a message, or run-context fact
    first_ts: Optional[int]  # the earliest and latest envelope ts (microseconds since 1970)
    last_ts: Optional[int]
    elisions: int
    grants: List[str]  # each grants line's snapshot as JSON text, in file order
    # Physical lines read: every ``\n`` in the range, plus one for an unfinished last line
    # when it was read (`final_line`); blank lines count. A pass from where this range
    # ends numbers its lines after these.
    lines: int
    usage: UsageTotals  # the message lines' token usage, each response once (``usage.py``)


class DatasetPass(Protocol):
    """The rows of the dataset tables of one transcript: ``summary`` at once, then the
    rows in chunks of about the requested size, in file order. A chunk may be made on
    another thread (``dataset.rows.read_ahead``) while ``summary`` or ``id_digest`` is
    read on this one."""

    @property
    def summary(self) -> DatasetSummary: ...

    def __iter__(self) -> Iterator[TableChunk]: ...

    def id_digest(self) -> bytes:
        """The ids a later range must not repeat: the exported envelopes' ids and the
        response ids their token usage names (the latter hashed after the bytes
        ``response-id\\0``, so the two are told apart), each as the 64-bit FNV-1a hash
        of its UTF-8 bytes, sorted ascending, each hash once, 8 bytes little-endian apiece;
        ``b""`` for none. Before or after the rows are taken: whether a range repeats an
        id of an earlier one is told without holding the ids as text."""

    def responses(self) -> List[Tuple[str, Optional[str], Optional[int], Optional[int], Optional[int], Optional[int]]]:
        """The counted responses (``_token_usage.py``'s rule), in file order of the lines they
        are counted at: (that line's envelope id, response id or None, input, output,
        cache_read, cache_write)."""


#: The kinds of test a secrets trigger makes (``secrets/prefilter.py``).
TRIGGER_ALWAYS, TRIGGER_TOKEN, TRIGGER_ASSIGN, TRIGGER_URL = 0, 1, 2, 3
#: A run of base64 at least this long is decoded and read again, by the byte scan and the matcher.
BASE64_MIN = 20


class SecretTrigger(NamedTuple):
    """A keyword and the test made where it is (``secrets/prefilter.py``). ``chars``: a
    token's body or an assignment's value characters (as bytes); ``least``: how many of
    them at least; ``gap``: a token's spaces after its keyword; ``left``/``left_least``: a
    token's part before its keyword."""

    keyword: bytes
    ignore_case: bool
    kind: int
    chars: bytes = b""
    least: int = 0
    gap: int = 0
    left: bytes = b""
    left_least: int = 0


class SecretSpec(NamedTuple):
    """Every trigger of a rule table, and whether any ``\\u`` escape makes a line worth
    reading (a known secret with characters a writer may escape so)."""

    triggers: Tuple[SecretTrigger, ...]
    unicode_escapes: bool


class SecretPrefilter(Protocol):
    """The byte scan for secrets of one rule table (``secrets/prefilter.py``)."""

    def lines(self, buf: bytes) -> List[Tuple[int, int]]:
        """``(start, end)`` of each line of `buf` worth reading (``end`` before its ``\\n``)."""

    def keeps(self, line: bytes) -> bool:
        """Whether the one line `line` (no ``\\n``) is worth reading."""


class Core(Protocol):
    """What a core does: the byte work of load, peek, salvage, fork and append.

    Failures the file causes are ``errors.CoreFailure``; system calls raise ``OSError``.
    ``path`` only tells the native core how to reopen the file for what it builds on
    access; the pure core reads everything at once.
    """

    @property
    def name(self) -> str:
        """``"pure"`` or ``"native"``."""

    def tail_check(self, fd: int, size: int) -> TailVerdict:
        """Decide what load must do to the end of the first `size` bytes of `fd`."""

    def copy_prefix(self, src_fd: int, dst_fd: int, length: int) -> None:
        """Copy bytes ``[0, length)`` of `src_fd` to `dst_fd` verbatim (the repair copy)."""

    def replay(self, fd: int, size: int, path: Optional[str] = None) -> Replayed:
        """Parse and fold every line of the first `size` bytes of `fd` (strict)."""

    def replay_indexed(
        self,
        fd: int,
        size: int,
        then: Tuple[int, int, int, int, int],
        now: Tuple[int, int, int, int, int],
        secret: Tuple[int, int],
        index_fd: Optional[int] = None,
        index_max: int = 0,
        write: bool = False,
        extend: bool = True,
        key: Optional[Tuple[int, int]] = None,
        path: Optional[str] = None,
    ) -> IndexedReplay:
        """``replay`` through the side index open at `index_fd` (untrusted; read if it
        holds at most `index_max` bytes, used if sealed with `secret`, the cache's key),
        which must describe the file `then` names (``(st_dev, st_ino, st_size,
        st_mtime_ns, st_ctime_ns)``); with `write`, also the index of the file as read,
        naming `now`, sealed with `secret`, its fingerprints keyed with `key` (None:
        random); when the index served and bytes followed it, only if `extend`. The same
        state, events and ``CoreFailure`` as ``replay``, whatever the index holds."""

    def make_index(
        self,
        fd: int,
        size: int,
        then: Tuple[int, int, int, int, int],
        now: Tuple[int, int, int, int, int],
        secret: Tuple[int, int],
        index_fd: Optional[int] = None,
        index_max: int = 0,
        key: Optional[Tuple[int, int]] = None,
    ) -> Tuple[Optional[bytes], str]:
        """The index ``replay_indexed(..., write=True)`` makes, and what became of the one
        given, without building the state (the native core holds the GIL only to hand
        the bytes over: a session's refresh runs it beside the appending thread)."""

    def index_table(
        self,
        fd: int,
        size: int,
        then: Tuple[int, int, int, int, int],
        secret: Tuple[int, int],
        index_fd: int,
        index_max: int,
        want_survey: bool = False,
        path: Optional[str] = None,
    ) -> Optional[IndexTable]:
        """The table of the side index open at `index_fd` (read if it holds at most
        `index_max` bytes, used if sealed with `secret`) when it still describes the
        first `size` bytes of `fd` (`then`: the file as ``fstat`` saw it); else None."""

    def scan(
        self,
        fd: int,
        start: int,
        size: int,
        final_line: bool = False,
        want_ids: bool = False,
        want_survey: bool = False,
        path: Optional[str] = None,
    ) -> Scanned:
        """Parse what parses in bytes ``[start, size)`` (lenient, no fold); line numbers
        count from `start`; bytes after the last ``\\n`` are parsed only if `final_line`."""

    def first_line_is_meta(self, head: bytes) -> bool:
        """Whether the first line of `head` (a file's first bytes) that is not blank ends
        within it and is a ``session-meta`` envelope as ``scan`` reads a line; False where
        this look cannot tell (``walk.first_line_problem`` looks closer)."""

    def history(
        self, fd: int, size: int, keep_payloads: bool = True, path: Optional[str] = None
    ) -> Optional[HistoryRead]:
        """Fold the envelopes a scan of bytes ``[0, size)`` lists (peek's: up to the
        last ``\\n``, malformed lines skipped) as ``HistoryFold(keep_payloads).feed``
        does, one after another; None when the first line is not a session-meta envelope
        (peek's error)."""

    @property
    def encode_envelope(self) -> Optional[EncodeEnvelope]:
        """The native serialiser of one envelope line; None: ``Session`` runs ``canonical``."""

    @property
    def append_size(self) -> Optional[AppendSize]:
        """The check of every append in one call; None: ``Session`` runs ``os.fstat``."""

    def identical_prefix(self, a: List[Any], b: List[Any]) -> int:
        """How many leading items of `a` and `b` are the very same objects (``is``)."""

    def find_lines(
        self, fd: int, needle: bytes, start: int, end: int, ignore_case: bool = False, limit: int = ...
    ) -> Tuple[List[int], int]:
        """The start offsets of the lines starting in ``[start, end)`` that contain
        `needle` (ASCII letters folded with `ignore_case`; at most `limit`), and the start
        of the first line not examined (the search of ``llm_agent_session.search``)."""

    def find_hits(
        self, fd: int, needle: bytes, start: int, end: int, ignore_case: bool = False, limit: int = ...
    ) -> Tuple[List[int], List[int], int]:
        """``find_lines``, and for each line the groups of its envelope in which the text
        whose written form is `needle` is, as bits (``search.GROUPS``: content 1,
        arguments 2, results 4, extras 8), -1 for a line the strict reading refuses.
        ValueError when `needle` is not a JSON string's content in UTF-8."""

    def search_files(
        self, paths: List[str], needle: bytes, largest: int, ignore_case: bool = False, head: int = ...,
        tail: int = ...
    ) -> List[Union[OSError, SearchedFile]]:
        """A batch of a search across transcripts, in one call: for each path, an OSError
        (it could not be opened or read) or ``(identity, regular, part, tail)``:
        ``fstat``'s ``(dev, ino, size, mtime_ns, ctime_ns)``, whether it is a regular
        file, and for one of at most `largest` bytes ``part``, ``(head, meta, lines,
        groups, next)`` (its first `head` bytes (4 KiB), ``first_line_is_meta`` of them,
        ``find_hits`` over the whole file) and with `tail` > 0 ``(resume, last bytes)``:
        where a search of it grown starts (its last line's start when that has no newline
        yet, else its size) and its last `tail` bytes. `head` and `tail` are at most 1 MiB."""

    def secret_prefilter(self, spec: SecretSpec) -> SecretPrefilter:
        """The byte scan of a ``secrets.prefilter.Spec``, made once per rule table."""

    def dataset_pass(
        self, fd: int, stop: int, final_line: bool, extras: bool, chunk: int, start: int = 0
    ) -> DatasetPass:
        """The dataset rows of bytes ``[start, stop)`` of `fd` (``dataset/rows.py``), read as
        a file of their own (lines numbered from 1 at `start`, which is a line's start;
        empty when ``start >= stop``): every envelope that parses, a later duplicate of an
        id left out (as salvage reads them), folded as ``history.History`` folds them;
        bytes after the last ``\\n`` only if `final_line`; message extras only if `extras`;
        chunks of about `chunk` bytes of lines."""

    def usage_pass(
        self, fd: int, stop: int, final_line: bool
    ) -> Tuple[UsageTotals, List[Tuple[str, Optional[str], Optional[int], Optional[int], Optional[int], Optional[int]]]]:
        """``dataset_pass(fd, stop, final_line, ...)``'s ``summary.usage`` and
        ``responses()`` of bytes ``[0, stop)`` of `fd`, each line kept as its id, usage
        and role only (the token count of a big file without the rows' memory)."""
