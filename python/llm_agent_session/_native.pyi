"""The native core (Rust, PyO3): same verdicts and errors as ``_pure.lines``/``_pure.tail_check``."""

from typing import Any, Dict, Iterator, List, Optional, Tuple, final

from llm_agent_session._core import Column, DatasetSummary, HistoryRead, IndexedReplay, IndexTable, Replayed, Scanned, SecretSpec, TailVerdict
from llm_agent_session._token_usage import UsageTotals

__all__ = [
    "classify_line",
    "parse_envelope_check",
    "tail_check",
    "copy_prefix",
    "encode_envelope",
    "new_id",
    "append_size",
    "identical_prefix",
    "find_lines",
    "find_hits",
    "secret_prefilter",
    "SecretPrefilter",
    "SourceReader",
    "replay",
    "replay_indexed",
    "index_table",
    "make_index",
    "IndexedSpans",
    "scan",
    "history",
    "HistoryRows",
    "LineIndex",
    "LineIter",
    "Deferred",
    "SectionTexts",
    "Spans",
    "EnvelopeIds",
    "SettledIds",
    "KeptExtras",
    "LineProblem",
    "first_line_is_meta",
    "search_files",
    "MAX_READ_DEPTH",
    "dataset_pass",
    "DatasetPass",
    "usage_pass",
    "RowBuffer",
]

MAX_READ_DEPTH: int

class LineProblem(ValueError):
    """Why a line is not an envelope; ``args`` is ``(kind, reason)``, kind ``corrupt``/``version``."""

def classify_line(raw: bytes) -> str:
    """``"whole"``, ``"torn"`` or ``"too-deep"`` (``_pure.lines.classify``)."""

def parse_envelope_check(raw: bytes, line_offset: int) -> Tuple[str, str, str]:
    """``(id, type, ts)`` of an envelope line, or ``LineProblem`` (``_pure.lines.parse_envelope``)."""

def first_line_is_meta(head: bytes) -> bool:
    """Whether the first line of ``head`` that is not blank ends in it and is a session-meta
    envelope (``_pure.search.first_line_is_meta``)."""

def tail_check(fd: int, size: int) -> TailVerdict:
    """What load must do to the end of the file, or ``CoreFailure`` (``_pure.tail_check.tail_check``)."""

def copy_prefix(src_fd: int, dst_fd: int, length: int) -> None:
    """Copy bytes ``[0, length)`` of ``src_fd`` to ``dst_fd`` verbatim (``_pure.tail_check.copy_prefix``)."""

def encode_envelope(
    type_: str, payload: Dict[str, Any], id: Optional[str] = None
) -> Optional[Tuple[str, str, bytes, Any]]:
    """``(id, ts, line, payload copy)`` of one envelope line, byte for byte what ``canonical``
    writes; ``None`` where the reference's path must run (input it does not handle)."""

def new_id() -> str:
    """A UUIDv7 from the generator ``encode_envelope`` uses (``canonical.new_id``)."""

def append_size(fd: int, path: str) -> int:
    """The size of ``fd`` if it has a link and ``path`` names its inode, else -1."""

def identical_prefix(a: List[Any], b: List[Any]) -> int:
    """How many leading items of ``a`` and ``b`` are the very same objects."""

def find_lines(
    fd: int, needle: bytes, start: int, end: int, ignore_case: bool = False, limit: int = ...
) -> Tuple[List[int], int]:
    """The lines of ``[start, end)`` holding ``needle``, and where to go on (``_pure.search.find_lines``)."""

def find_hits(
    fd: int, needle: bytes, start: int, end: int, ignore_case: bool = False, limit: int = ...
) -> Tuple[List[int], List[int], int]:
    """``find_lines``, and each line's groups as bits (``_pure.search.find_hits``)."""

def search_files(
    paths: List[str], needle: bytes, largest: int, ignore_case: bool = False, head: int = 4096, tail: int = 0
) -> List[Any]:
    """For each path an OSError or ``(identity, regular, part, tail)`` (``_pure.search.search_files``)."""

def secret_prefilter(spec: SecretSpec) -> SecretPrefilter:
    """The byte scan of a rule table's spec (``_pure.secrets.Prefilter``)."""

@final
class SecretPrefilter:
    """Which lines are worth reading for secrets (``_pure.secrets.Prefilter``)."""

    def lines(self, buf: bytes) -> List[Tuple[int, int]]: ...
    def keeps(self, line: bytes) -> bool: ...

@final
class SourceReader:
    """An importer's source read once (``importers._source``): ``lines`` holds, for each line
    from ``offset``, the dict of a plain JSON object or ``None`` (read by ``json`` instead);
    ``encode`` writes an envelope line as ``canonical`` does, the strings it read copied from
    the source, or answers ``None`` where the reference must write it."""

    def __new__(cls, data: bytes, offset: int) -> SourceReader: ...
    @property
    def lines(self) -> List[Optional[Dict[str, Any]]]: ...
    def encode(
        self, type_: str, payload: Dict[str, Any], id: Optional[str] = None, ts: Optional[str] = None
    ) -> Optional[Tuple[str, bytes]]: ...

@final
class LineIndex:
    """Envelopes (or the Messages of message envelopes) built from their lines on access."""

    def __len__(self) -> int: ...
    def __getitem__(self, key: int, /) -> Any: ...
    def __iter__(self) -> LineIter: ...

@final
class LineIter:
    """Iterating a ``LineIndex``: its lines read a window at a time."""

    def __iter__(self) -> LineIter: ...
    def __next__(self) -> Any: ...

@final
class Deferred:
    """What an Event holds instead of its payload (a peek Message instead of its
    content) until first read: ``build`` reads the line again, validates it and
    builds the value (``messages._BuiltOnAccess``)."""

    def build(self) -> Any: ...

@final
class SectionTexts:
    """Run-context sections by digest: the text, read from its line on access, and the
    id of the line that carries it."""

    def __len__(self) -> int: ...
    def keys(self) -> List[str]: ...
    def get(self, digest: str) -> Optional[str]: ...
    def line_of(self, digest: str) -> Optional[str]: ...

@final
class Spans:
    """A scan's ``(line, offset, length)`` of each envelope, made on access (a ``LazyList`` wraps it)."""

    def __len__(self) -> int: ...
    def __getitem__(self, key: int, /) -> Tuple[int, int, int]: ...

@final
class EnvelopeIds:
    """Envelope id -> its index in the events replay read (``Session.message_extra``)."""

    def __len__(self) -> int: ...
    def get(self, id: str) -> Optional[int]: ...

@final
class KeptExtras:
    """The extras of every message line as the load read them (``Session.message_extra``)."""

    def __len__(self) -> int: ...
    def get(self, event: int) -> Optional[Dict[str, Any]]: ...

@final
class SettledIds:
    """The op ids of the settled operations (``FoldState.settled`` after a native load)."""

    def __len__(self) -> int: ...
    def __contains__(self, key: object, /) -> bool: ...
    def add(self, op_id: str) -> None: ...
    def __iter__(self) -> Iterator[str]: ...

def replay(fd: int, size: int, reopen_path: Optional[str] = None) -> Replayed:
    """The strict replay of the first ``size`` bytes of ``fd``, or ``CoreFailure``
    (``_pure.replay.replay``). ``state`` is built by ``FoldState.from_parts`` with its
    ``sections`` and ``section_lines`` ``LazyTexts`` over one ``SectionTexts``, and
    ``events`` is a ``LazyList`` over a ``LineIndex`` (dicts and a list where a
    descriptor of its own cannot be opened: by ``reopen_path``, the same inode, when
    given, else through ``/proc/self/fd``)."""

def replay_indexed(
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
    reopen_path: Optional[str] = None,
) -> IndexedReplay:
    """``replay`` through a side index (``Core.replay_indexed``): the same state, events
    and ``CoreFailure``, only the bytes after the index's end read when it still
    describes the file; the indexed envelopes' ids, extras and section texts are read
    from their lines when asked for."""

def make_index(
    fd: int,
    size: int,
    then: Tuple[int, int, int, int, int],
    now: Tuple[int, int, int, int, int],
    secret: Tuple[int, int],
    index_fd: Optional[int] = None,
    index_max: int = 0,
    key: Optional[Tuple[int, int]] = None,
) -> Tuple[Optional[bytes], str]:
    """``Core.make_index``: the index ``replay_indexed`` makes, no state built."""

def index_table(
    fd: int,
    size: int,
    then: Tuple[int, int, int, int, int],
    secret: Tuple[int, int],
    index_fd: int,
    index_max: int,
    want_survey: bool = False,
    reopen_path: Optional[str] = None,
) -> Optional[IndexTable]:
    """``Core.index_table``: a side index's envelopes, spans, messages and kinds when it
    still describes the file; None when it does not."""

@final
class IndexedSpans:
    """A side index's ``(line, offset, length)`` of each envelope, made on access."""

    def __len__(self) -> int: ...
    def __getitem__(self, key: int, /) -> Tuple[int, int, int]: ...
    def offsets(self, start: int, stop: int) -> bytes:
        """The byte offsets of envelopes ``[start, stop)`` (clamped to those there are),
        eight bytes little-endian apiece."""

def scan(
    fd: int,
    start: int,
    size: int,
    final_line: bool = False,
    want_ids: bool = False,
    want_survey: bool = False,
    reopen_path: Optional[str] = None,
) -> Scanned:
    """The lenient scan of ``[start, size)`` (``_pure.core.scan``); ``events`` and
    ``messages`` are ``LazyList``s over ``LineIndex``es (lists where no descriptor of
    their own can be opened, as for ``replay``)."""

@final
class HistoryRows:
    """One of a native history read's big mappings (``removed``, ``elided``,
    ``operations``, ``answers``, ``calls``; a ``ReadMapping`` wraps it): its keys in order, each value
    built when asked for."""

    def __len__(self) -> int: ...
    def keys(self) -> List[str]: ...
    def find(self, key: str) -> Optional[int]: ...
    def build(self, at: int) -> Any: ...
    def tally(self) -> Optional[List[Tuple[Any, int, str]]]: ...

def history(
    fd: int, size: int, keep_payloads: bool = True, reopen_path: Optional[str] = None
) -> Optional[HistoryRead]:
    """``History.read``'s fold of the envelopes a scan of ``[0, size)`` lists
    (``_pure.core.history``), or None when the first line is not a session-meta
    envelope. ``removed``, ``elided``, ``operations``, ``answers`` and ``calls`` are ``ReadMapping``s
    over ``HistoryRows`` (``operations`` a dict, built now, where no descriptor of its
    own can be opened: see ``replay``)."""

@final
class DatasetPass:
    """One transcript's dataset rows (``_core.DatasetPass``): ``summary``, then each run
    of rows as ``{table: {column: Column}}``, built without the GIL. Frozen: ``summary``
    and ``id_digest`` answer on any thread while another takes the runs, and runs taken
    from two threads are taken one at a time, in order."""

    @property
    def summary(self) -> DatasetSummary: ...
    def id_digest(self) -> bytes:
        """The FNV-1a hashes of the kept envelopes' ids and of the response ids their
        token usage names, sorted, each once, 8 bytes little-endian each
        (``_core.DatasetPass.id_digest``)."""
    def responses(self) -> List[Tuple[str, Optional[str], Optional[int], Optional[int], Optional[int], Optional[int]]]:
        """The counted responses (``_core.DatasetPass.responses``)."""
    def __iter__(self) -> DatasetPass: ...
    def __next__(self) -> Dict[str, Dict[str, Column]]: ...

@final
class RowBuffer:
    """A column's bytes, owned by the extension and never changed (``_core.NativeBuffer``):
    pyarrow wraps them where they are."""

    @property
    def address(self) -> int: ...
    def __len__(self) -> int: ...

def dataset_pass(
    fd: int, stop: int, final_line: bool, extras: bool, chunk: int, start: int = 0
) -> DatasetPass:
    """The first pass and the fold over bytes ``[start, stop)`` of ``fd``, read as a file
    of their own (``_pure.columns.dataset_pass``), or ``CoreFailure``/``OSError``."""

def usage_pass(
    fd: int, stop: int, final_line: bool
) -> Tuple[UsageTotals, List[Tuple[str, Optional[str], Optional[int], Optional[int], Optional[int], Optional[int]]]]:
    """The token usage of bytes ``[0, stop)`` of ``fd`` as ``dataset_pass`` counts it (its
    ``summary.usage`` and ``responses()``), each line kept as its id, usage and role only
    (``_pure.columns.usage_pass``), or ``OSError``."""
