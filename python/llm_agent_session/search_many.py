"""Search every transcript under some PATHs for a text, and hand over the hits as found.

``search_many(text, paths)`` walks the PATHs as the viewer's shelf does
(:mod:`llm_agent_session.walk`), searches each transcript with the core's search
(:func:`llm_agent_session.search.find_hits`: the same hits, on the same rules, as the
viewer's search inside one transcript: the text must be in a string's characters, ASCII
letters folded with ``ignore_case``, in the groups asked for), several transcripts at a
time on threads of their own (the core releases the GIL), and yields what it found in
**walk order** (the PATHs in the order given, each directory depth first in name order,
links after the real directories), each transcript's hits in file order: the same
sequence on every run over the same files, whatever finished first.

What it yields is :class:`Found`: the hits of one transcript, or of the next part of a
big one (read in parts of growing size, so the first hits come early), with how far
that transcript has been read; or why a file or directory could not be searched
(``problem``). A transcript without a hit (or a part of one) yields nothing: the
progress counts it. A :class:`Search` is cancelled from any thread
(:meth:`Search.cancel`) and says how far it got (:meth:`Search.progress`: files found,
searched, their bytes, the hits, how many the cache answered), so a page can stream it::

    search = search_many("OPENSSL_DIR", ["transcripts/"], ignore_case=True, cache=cache)
    for found in search:          # in walk order, as found
        for hit in found.hits:    # path, line, offset, id, ts, type, role, groups, snippet
            ...

Each :class:`Hit` carries where it is (path, byte offset), the groups it is in and, for
the first `details` hits of each transcript (all by default), the envelope's line number,
id, time, type and role and a snippet of the string that holds the text, with the match's
span in it: plain text, which each surface shows its own way (``visible`` on a terminal,
escaped in a page).

With a :class:`~llm_agent_session._search_cache.SearchCache`, a search for a text searched
before reads only what changed since: a transcript unchanged is not read, one that grew is
read from its old end (that module says when each is trusted).
"""

from __future__ import annotations

import bisect
import itertools
import json
import os
import queue
import stat
import sys
import threading
import time
from array import array
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import (Any, Callable, Collection, Deque, Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple, Union,
                    overload)

from . import _backend, _platform
from ._files import open_to_read
from ._pure import search as _reference
from ._search_cache import (HEAD, TAIL, Entry, Identity, SearchCache, Table, digest, identity, tail_digest,
                            tail_start)
from .search import GROUPS, find_hits, needle
from .walk import Walked, first_line_problem, walk

__all__ = ["search_many", "Search", "Found", "Hit", "Progress", "SearchCache", "DEFAULT_GROUPS"]

#: The groups searched unless asked otherwise: what was said, tool calls and tool results
#: (the viewer's search box without *extras*).
DEFAULT_GROUPS = ("content", "arguments", "results")
#: The first part of a transcript read, then twice as much each time, up to CHUNK_MAX.
FIRST_CHUNK = 1 << 20
CHUNK_MAX = 64 << 20
#: Tasks a worker has queued ahead of the transcript being handed over; each searches up
#: to BATCH transcripts (the first 1, then twice as many each time, so the first hits come
#: early), handing their hits over every FLUSH seconds.
WINDOW = 4
BATCH = 32
FLUSH = 0.05
#: Characters of a snippet before and after the match.
BEFORE, AFTER = 40, 80


class Hit(NamedTuple):
    """One envelope that holds the text. ``line`` (1-based), ``id``, ``ts``, ``type``,
    ``role`` (a message's), ``snippet`` and ``match`` (the text's span in the snippet) are
    None beyond a search's `details` per transcript, or when the line changed before it
    could be read again. (A named tuple: a common text has millions of hits.)"""

    path: str
    offset: int
    groups: Tuple[str, ...]
    line: Optional[int] = None
    id: Optional[str] = None
    ts: Optional[str] = None
    type: Optional[str] = None
    role: Optional[str] = None
    snippet: Optional[str] = None
    match: Optional[Tuple[int, int]] = None


class Found(NamedTuple):
    """The hits in one transcript, or in the next part of it (``done`` once it has been
    read to its end: a part after the last with hits is not handed over), or why it could
    not be searched (``problem``; ``directory`` when that is a directory). ``hits`` is a
    list, or without details (``details=0``) a sequence that reads as one, each Hit made
    as it is read (a count makes none). ``scanned`` is
    how much of its ``size`` has been searched; ``read`` says how: ``whole``, ``grown``
    (only what was appended since a search the cache remembers) or ``cached`` (not read:
    unchanged since)."""

    path: str
    root: int
    relative: str
    hits: Sequence[Hit] = ()
    scanned: int = 0
    size: int = 0
    done: bool = True
    problem: Optional[str] = None
    read: str = "whole"
    directory: bool = False


class Progress(NamedTuple):
    """How far a search got: the files the walk found so far (and whether it is over), how
    many of them were searched (or passed over: not a transcript) and their bytes, and the
    hits handed over; of the files searched, how many the cache answered without reading
    them (``cached``) and how many were read only from where they had ended (``grown``)."""

    found: int
    searched: int
    bytes: int
    hits: int
    walked: bool
    cached: int = 0
    grown: int = 0


class _Query(NamedTuple):
    needle: bytes
    text: str  # folded with ignore_case, as the leaves are
    ignore_case: bool
    wanted: int  # bits of GROUPS
    details: int
    table: Optional[Table]
    settle_ns: int


class Search:
    """A search under way: iterate it (once) for :class:`Found` in walk order;
    :meth:`cancel` stops it from any thread; :meth:`progress` says how far it got."""

    def __init__(self, query: _Query, paths: Sequence[str], limit: Optional[int], workers: int) -> None:
        self._query = query
        self._paths = list(paths)
        self._limit = limit
        self._workers = max(1, workers)
        self._stop = threading.Event()
        self._found = self._searched = self._bytes = self._hits = self._cached = self._grown = 0
        self._walked = False
        self._started = False

    def cancel(self) -> None:
        """Stop: the iteration ends at once (the threads at their transcript's next part)."""
        self._stop.set()

    def progress(self) -> Progress:
        return Progress(self._found, self._searched, self._bytes, self._hits, self._walked, self._cached, self._grown)

    def hits(self) -> Iterator[Hit]:
        """Only the hits, in order."""
        for found in self:
            yield from found.hits

    def __iter__(self) -> Iterator[Found]:
        if self._started:
            raise RuntimeError("a Search is iterated once; start another with search_many")
        self._started = True
        return self._run()

    def _run(self) -> Iterator[Found]:
        walked = walk(self._paths)
        window: Deque[_Task] = deque()
        pool = ThreadPoolExecutor(self._workers, thread_name_prefix="search-many")
        batch = 1
        scanned = 0  # of the transcript being handed over
        try:
            while not self._stop.is_set():
                while len(window) < WINDOW * self._workers and not self._walked:
                    items = list(itertools.islice(walked, batch))
                    if len(items) < batch:
                        self._walked = True
                    if items:
                        self._found += len(items)
                        task = _Task(items, self._query, self._stop)
                        window.append(task)
                        pool.submit(task.run)
                        batch = min(batch * 2, BATCH)
                if not window:
                    break
                parts = window[0].get(self._stop)
                if parts is None:  # cancelled
                    break
                if not parts:  # that task is over
                    window.popleft()
                    continue
                for found in parts:
                    if found.done:
                        self._searched += 1
                        self._cached += found.read == "cached"
                        self._grown += found.read == "grown"
                    self._bytes += found.scanned - scanned
                    scanned = 0 if found.done else found.scanned
                    if not found.hits and found.problem is None:
                        continue  # nothing to hand over: counted in the progress
                    if self._limit is not None and len(found.hits) >= self._limit - self._hits:
                        found = _cut(found, self._limit - self._hits)
                        self._stop.set()
                    self._hits += len(found.hits)
                    yield found
                    if self._stop.is_set():
                        return
        finally:
            self._stop.set()
            pool.shutdown(wait=False, cancel_futures=True)


def _cut(found: Found, keep: int) -> Found:
    return Found(found.path, found.root, found.relative, found.hits[:keep], found.scanned, found.size,
                 found.done and keep >= len(found.hits), found.problem, found.read, found.directory)


class _Task:
    """A few transcripts in walk order, searched one after the other on a worker thread;
    what they hold is handed over in lists, in order, then an empty list. Handing over a
    list at a time (each transcript's parts past the first MiB at once, else every
    FLUSH seconds) keeps the threads from waking each other for every small file."""

    def __init__(self, items: List[Walked], query: _Query, stop: threading.Event) -> None:
        self.items = items
        self.query = query
        self.stop = stop
        self.parts: "queue.Queue[Union[List[Found], BaseException]]" = queue.Queue()

    def get(self, stop: threading.Event) -> Optional[List[Found]]:
        """The next list (empty: no more), or None once the search is cancelled."""
        while True:
            try:
                item = self.parts.get(timeout=0.05)
            except queue.Empty:
                if stop.is_set():
                    return None
                continue
            if isinstance(item, BaseException):
                raise item
            return item

    def run(self) -> None:
        held: List[Found] = []
        since = time.monotonic()

        def hand(found: Found) -> None:
            nonlocal held, since
            held.append(found)
            if not found.done or time.monotonic() - since > FLUSH:
                self.parts.put(held)
                held, since = [], time.monotonic()

        try:
            keys, cached, read, before = self._read_together()
            for i, item in enumerate(self.items):
                if self.stop.is_set():
                    break
                key = keys[i] if keys else None
                if item.problem is not None:
                    hand(Found(item.path, item.root, item.relative, problem=item.problem, directory=item.directory))
                elif i not in read or not _searched(item, key, read[i], self.query, before, hand):
                    _search_one(item, self.query, self.stop, hand, key, cached.get(i))
            if held:
                self.parts.put(held)
            self.parts.put([])
        except BaseException as e:  # handed over: the iteration raises it
            self.parts.put(e)


    def _read_together(self) -> Tuple[List[str], Dict[int, Entry], Dict[int, Any], int]:
        """With a cache, the items' keys (one string for the queries a cache keeps) and the
        entries it has of them (by index); what one call of the core read of the others (by
        index), with the time before it: those of at most FIRST_CHUNK bytes whole, each
        larger one only opened (then searched in parts by _search_one, as those the cache
        knows)."""
        query = self.query
        table = query.table
        keys: List[str] = []
        cached: Dict[int, Entry] = {}
        if table is not None:
            keys = [sys.intern(os.path.abspath(item.path)) for item in self.items]
            for i, key in enumerate(keys):
                entry = table.get(key) if self.items[i].problem is None else None
                if entry is not None:
                    cached[i] = entry
        chosen = [i for i, item in enumerate(self.items) if item.problem is None and i not in cached]
        before = time.time_ns()
        if not chosen:
            return keys, cached, {}, before
        answers = _backend.core.search_files([self.items[i].path for i in chosen], query.needle, FIRST_CHUNK,
                                             query.ignore_case, HEAD, TAIL if table is not None else 0)
        return keys, cached, dict(zip(chosen, answers)), before


def search_many(
    text: str,
    paths: Sequence[str],
    *,
    ignore_case: bool = False,
    groups: Collection[str] = DEFAULT_GROUPS,
    limit: Optional[int] = None,
    details: Optional[int] = None,
    cache: Optional[SearchCache] = None,
    workers: Optional[int] = None,
) -> Search:
    """Search every transcript under `paths` (files and directories) for `text`; iterate
    the answer for :class:`Found` in walk order (see the module's docstring).

    `ignore_case` folds ASCII letters (only those: ``É`` does not find ``é``); `groups` are
    where the text counts (``GROUPS``: content, arguments, results, extras); `limit` stops
    after that many hits; `details` is how many hits of each transcript get their line,
    id, time, type, role and snippet (None: all; 0: none, for a count); `cache` remembers
    what each transcript held for the next search of the same text; `workers` is the
    number of transcripts searched at once (default: the processors, at most 4).
    ValueError for an empty text or a group that is not one of ``GROUPS``."""
    unknown = set(groups) - set(GROUPS)
    if unknown or not groups:
        raise ValueError(f"groups are some of {', '.join(GROUPS)}, not {sorted(unknown) or 'none'}")
    if limit is not None and limit < 0:
        raise ValueError("limit is a number of hits, at least 0")
    written = needle(text, ignore_case)
    wanted = sum(1 << GROUPS.index(name) for name in set(groups))
    table = cache.table(written, ignore_case) if cache is not None else None
    query = _Query(written, _reference.text_of_needle(written, ignore_case), ignore_case, wanted,
                   -1 if details is None else max(0, details), table,
                   cache.settle_ns if cache is not None else 0)
    if workers is None:
        workers = min(4, os.cpu_count() or 1)
    return Search(query, paths, limit, workers)


def _search_one(walked: Walked, query: _Query, stop: threading.Event, put: Callable[[Found], None],
                key: Optional[str], cached: Optional[Entry]) -> None:
    """Search one transcript, handing each part's hits to `put`, the last with ``done``;
    `key` is its key in the cache (with one), `cached` the entry the cache has of it."""
    path = walked.path

    def found(hits: Sequence[Hit], scanned: int, size: int, read: str, done: bool = True,
              problem: Optional[str] = None) -> None:
        put(Found(path, walked.root, walked.relative, hits, scanned, size, done, problem, read))

    if cached is not None and cached.settled and _unchanged(path, cached):
        # Not read, but for the details of its hits.
        size = cached.identity[2]
        if cached.problem is not None:
            found([], size, size, "cached", problem=_not_a_transcript(cached.problem, walked))
        else:
            found(_Hits(path, query, None).of(cached.lines, cached.groups), size, size, "cached")
        return
    try:
        fd = open_to_read(path)
    except OSError as e:
        found([], 0, 0, "whole", problem=_cannot_read(e))
        return
    try:
        _read_one(fd, walked, key, cached, query, stop, found)
    except OSError as e:
        found([], 0, 0, "whole", problem=_cannot_read(e))
    finally:
        os.close(fd)


def _searched(walked: Walked, key: Optional[str], answer: Any, query: _Query, before: int,
              put: Callable[[Found], None]) -> bool:
    """Hand over what ``Core.search_files`` read of one transcript (`answer`), as
    :func:`_search_one` would have: False when it did not read it (larger than
    FIRST_CHUNK), for the caller to."""
    path = walked.path

    def found(hits: Sequence[Hit], scanned: int, size: int, done: bool = True, problem: Optional[str] = None) -> None:
        put(Found(path, walked.root, walked.relative, hits, scanned, size, done, problem, "whole"))

    if isinstance(answer, OSError):
        found([], 0, 0, problem=_cannot_read(answer))
        return True
    ident, regular, part, tail = answer
    if not regular:
        found([], 0, 0, problem="cannot read it: not a regular file")
        return True
    if part is None:
        return False
    size = ident[2]
    settled = before - max(ident[3], ident[4]) > query.settle_ns
    head, meta, lines, groups, after = part
    table = query.table
    if walked.given or (lines and max(groups) > 0):  # look at its first line (see _read_one)
        try:
            problem = None if meta else _first_line_problem_at(path, head)
        except OSError as e:
            found([], 0, 0, problem=_cannot_read(e))
            return True
        if problem is not None:
            if table is not None and key is not None:
                table.put(key, Entry(ident, settled, 0, 0, size, problem))
            found([], size, size, problem=_not_a_transcript(problem, walked))
            return True
    hits = _Hits(path, query, None).of(lines, groups) if lines else []
    if after < size:  # cut short while it was read: what it held, then why it stops
        if after > 0:
            found(hits, after, size, done=False)
        found([], 0, 0, problem=_cannot_read(_cut_short(size)))
        return True
    found(hits, size, size)
    if table is not None and key is not None and tail is not None:
        resume, last = tail
        table.put(key, _read_whole(ident, settled, head, digest(last), resume, lines, groups))
    return True


def _cut_short(size: int) -> OSError:
    return OSError(f"it ends before byte {size:,}: truncated while it was read")


def _read_whole(ident: Identity, settled: bool, head: bytes, tail: int, resume: int, lines: Sequence[int],
                groups: Sequence[int]) -> Entry:
    """The cache's entry of a transcript read to its end: its first bytes' digest, and the
    lines found before where a search of it grown starts (they are in file order)."""
    kept = bisect.bisect_left(lines, resume)
    return Entry(ident, settled, digest(head[:ident[2]]), tail, resume, None, lines[:kept], groups[:kept])


def _first_line_problem_at(path: str, head: bytes) -> Optional[str]:
    """:func:`first_line_problem` of the file at `path`, whose first bytes are `head`."""
    fd = open_to_read(path)
    try:
        return first_line_problem(fd, head)
    finally:
        os.close(fd)


def _read_one(fd: int, walked: Walked, key: Optional[str], cached: Optional[Entry], query: _Query,
              stop: threading.Event, found: Callable[..., None]) -> None:
    before = time.time_ns()
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        found([], 0, 0, "whole", problem="cannot read it: not a regular file")
        return
    size = st.st_size
    settled = before - max(st.st_mtime_ns, st.st_ctime_ns) > query.settle_ns
    head = _platform.pread(fd, HEAD, 0)
    table = query.table

    def not_a_transcript() -> bool:
        """Whether the file is not a transcript (then said so, and remembered)."""
        problem = first_line_problem(fd, head)
        if problem is None:
            return False
        if table is not None and key is not None:
            table.put(key, Entry(identity(st), settled, 0, 0, size, problem))
        found([], size, size, "whole", problem=_not_a_transcript(problem, walked))
        return True

    # Whether it is a transcript at all is looked at before a part is handed over: at once
    # for a file given (a problem if not) or one read in parts, else once the text is
    # found in it (most files of a search hold no hit: they need not be looked at).
    checked = walked.given or size > FIRST_CHUNK
    if checked and not_a_transcript():
        return
    hits = _Hits(walked.path, query, fd)
    # The lines found and their groups' bits, for the cache (none without one).
    start, lines, bits, read = 0, array("q"), array("b"), "whole"
    if cached is not None and _only_grew(cached, st, fd, head):
        start, read = cached.resume, "grown"
        lines.extend(cached.lines)
        bits.extend(cached.groups)
        checked = checked or bool(lines)  # an entry with lines was looked at
        if lines:
            found(hits.of(lines, bits), start, size, read, done=False)
    at, chunk = start, FIRST_CHUNK
    while at < size:
        if stop.is_set():
            return
        part, part_groups, after = find_hits(fd, query.needle, at, min(at + chunk, size), query.ignore_case)
        if after <= at:  # nothing more to read: the file was cut short while read
            raise _cut_short(size)
        at, chunk = after, min(chunk * 2, CHUNK_MAX)
        if part and not checked and max(part_groups) > 0:
            if not_a_transcript():
                return
            checked = True
        if part:
            if table is not None:
                lines.extend(part)
                bits.extend(part_groups)
            found(hits.of(part, part_groups), min(at, size), size, read, done=at >= size)
        else:
            found([], min(at, size), size, read, done=at >= size)
    if table is not None and key is not None:
        resume, tail = tail_start(fd, size)
        table.put(key, _read_whole(identity(st), settled, head, tail, resume, lines, bits))


def _unchanged(path: str, entry: Entry) -> bool:
    try:
        return identity(os.stat(path)) == entry.identity
    except OSError:
        return False


def _cannot_read(e: OSError) -> str:
    return f"cannot read it: {e.strerror or e}"


def _not_a_transcript(problem: str, walked: Walked) -> Optional[str]:
    """A file given as a PATH that is not a transcript is a problem; a ``*.jsonl`` file in
    a directory that is not one is passed over, as the shelf passes over it."""
    return f"not a transcript: {problem}" if walked.given else None


def _only_grew(entry: Entry, st: os.stat_result, fd: int, head: bytes) -> bool:
    """Whether the file is the one `entry` describes, grown by appends since (the same
    device and inode, larger, the same first bytes and the same bytes before its old end)."""
    old = entry.identity
    if entry.problem is not None or (st.st_dev, st.st_ino) != old[:2] or st.st_size <= old[2]:
        return False
    return digest(head[: min(HEAD, old[2])]) == entry.head and tail_digest(fd, old[2]) == entry.tail


class _Hits:
    """Makes the hits of one transcript, part after part: those of the lines found that are
    in the groups wanted, the first `query.details` of them with their details."""

    def __init__(self, path: str, query: _Query, fd: Optional[int]) -> None:
        self.path = path
        self.query = query
        self.fd = fd  # None: opened only if details are wanted
        self.given = 0  # hits made so far
        self.counter: Optional[_LineCounter] = None

    def of(self, lines: Sequence[int], groups: Sequence[int]) -> Sequence[Hit]:
        """The hits of the lines found at `lines`, whose groups' bits are `groups`."""
        wanted, path, names = self.query.wanted, self.path, GROUP_NAMES
        if 0 <= self.query.details <= self.given:  # no details: made as they are read
            if not any(map(groups.count, _NOT_HITS[wanted])):  # every line is a hit (most often)
                rest: Sequence[Hit] = _Plain(path, lines, groups, wanted)
            else:
                kept = [(offset, bits) for offset, bits in zip(lines, groups) if bits > 0 and bits & wanted]
                rest = _Plain(path, [offset for offset, _ in kept], [bits for _, bits in kept], wanted)
            self.given += len(rest)
            return rest
        chosen = [(offset, bits & wanted) for offset, bits in zip(lines, groups) if bits > 0 and bits & wanted]
        details = self.query.details
        detailed = len(chosen) if details < 0 else max(0, min(len(chosen), details - self.given))
        self.given += len(chosen)
        rest = [Hit(path, offset, names[bits]) for offset, bits in chosen[detailed:]]
        if not detailed:
            return rest
        if self.fd is None:
            try:
                fd = open_to_read(self.path)
            except OSError:  # gone since: the hits without their details
                return [Hit(self.path, offset, GROUP_NAMES[bits]) for offset, bits in chosen]
            try:
                counter = _LineCounter(fd)  # one for all: the offsets come in file order
                return [_detailed(self.path, fd, offset, bits, self.query, counter)
                        for offset, bits in chosen[:detailed]] + rest
            finally:
                os.close(fd)
        if self.counter is None:
            self.counter = _LineCounter(self.fd)
        return [_detailed(self.path, self.fd, offset, bits, self.query, self.counter)
                for offset, bits in chosen[:detailed]] + rest


#: A Hit without its details, made without the named tuple's keyword handling (54 against
#: 85 ms for 162,066).
_new = tuple.__new__
#: For each bits of the groups wanted, the groups' bits of a line found that is no hit.
_NOT_HITS = [tuple(bits for bits in range(-1, 16) if bits <= 0 or not bits & wanted) for wanted in range(16)]


class _Plain(Sequence[Hit]):
    """Hits without their details, each made as it is read: a count reads none (a common
    text's 162,066 hits across 10,000 transcripts were a fifth of the Python work of its
    search). A sequence as a list is one: it compares equal to the list of its hits."""

    __slots__ = ("_path", "_offsets", "_groups", "_wanted")

    def __init__(self, path: str, offsets: Sequence[int], groups: Sequence[int], wanted: int) -> None:
        self._path, self._offsets, self._groups, self._wanted = path, offsets, groups, wanted

    def _hit(self, offset: int, bits: int) -> Hit:
        return _new(Hit, (self._path, offset, GROUP_NAMES[bits & self._wanted], None, None, None, None, None, None,
                          None))

    def __len__(self) -> int:
        return len(self._offsets)

    @overload
    def __getitem__(self, index: int) -> Hit: ...

    @overload
    def __getitem__(self, index: slice) -> List[Hit]: ...

    def __getitem__(self, index: Union[int, slice]) -> Union[Hit, List[Hit]]:
        if isinstance(index, slice):
            return [self._hit(o, b) for o, b in zip(self._offsets[index], self._groups[index])]
        return self._hit(self._offsets[index], self._groups[index])

    def __iter__(self) -> Iterator[Hit]:
        return map(self._hit, self._offsets, self._groups)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (_Plain, list, tuple)):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal to a list: unhashable as one

    def __add__(self, other: Sequence[Hit]) -> List[Hit]:
        return list(self) + list(other)

    def __radd__(self, other: Sequence[Hit]) -> List[Hit]:
        return list(other) + list(self)

    def __repr__(self) -> str:
        return repr(list(self))

GROUP_NAMES = [tuple(name for i, name in enumerate(GROUPS) if bits >> i & 1) for bits in range(16)]


class _LineCounter:
    """Line numbers of offsets in a file, asked in increasing order: the newlines are
    counted once, from the last offset asked."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.at = 0
        self.line = 1

    def line_of(self, offset: int) -> int:
        if offset < self.at:
            self.at, self.line = 0, 1
        while self.at < offset:
            data = _platform.pread(self.fd, min(offset - self.at, 4 << 20), self.at)
            if not data:
                break
            self.line += data.count(b"\n")
            self.at += len(data)
        return self.line


def _detailed(path: str, fd: int, offset: int, bits: int, query: _Query, counter: _LineCounter) -> Hit:
    groups = GROUP_NAMES[bits]
    try:
        value = json.loads(_line_at(fd, offset))
    except (OSError, ValueError, RecursionError):
        return Hit(path, offset, groups)
    if not isinstance(value, dict):
        return Hit(path, offset, groups)
    type_ = value.get("type")
    payload = value.get("payload")
    role = payload.get("role") if type_ == "message" and isinstance(payload, dict) else None
    snippet, match = _snippet(type_, payload, query, bits)
    return Hit(path, offset, groups, counter.line_of(offset), _str(value.get("id")), _str(value.get("ts")),
               _str(type_), _str(role), snippet, match)


def _str(value: Any) -> Optional[str]:
    return value if isinstance(value, str) else None


def _line_at(fd: int, offset: int) -> bytes:
    """The line starting at `offset`, without its newline."""
    want = 16 << 10
    while True:
        data = _platform.pread(fd, want, offset)
        nl = data.find(b"\n")
        if nl >= 0:
            return data[:nl]
        if len(data) < want:
            return data
        want *= 2


def _snippet(type_: Any, payload: Any, query: _Query, bits: int) -> Tuple[Optional[str], Optional[Tuple[int, int]]]:
    """Around the first place, in document order, where a string (or a number as
    ``json.dumps`` writes it) of a group wanted holds the text: the text with up to
    BEFORE and AFTER characters either side, and the match's span in it."""
    for bit, value in _reference.fields(type_, payload):
        if not bit & bits:
            continue
        for leaf in _leaves_in_order(value):
            text = leaf if isinstance(leaf, str) else _reference._number_text(leaf)
            at = (_reference._fold(text) if query.ignore_case else text).find(query.text)
            if at >= 0:
                start = max(0, at - BEFORE)
                end = min(len(text), at + len(query.text) + AFTER)
                lead = "…" if start > 0 else ""
                return lead + text[start:end] + ("…" if end < len(text) else ""), (
                    len(lead) + at - start, len(lead) + at - start + len(query.text))
    return None, None


def _leaves_in_order(value: Any) -> Iterator[Any]:
    """The strings and numbers of a JSON value (not its keys), in document order."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            yield v
        elif isinstance(v, dict):
            stack.extend(reversed(list(v.values())))
        elif isinstance(v, list):
            stack.extend(reversed(v))
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            yield v
