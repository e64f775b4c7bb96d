"""What a search across transcripts keeps between searches, and when it may trust it.

For each text searched (its written form and ``ignore_case``: a *query*), and each
transcript searched whole for it, an :class:`Entry`: the file's identity when it was read
(device, inode, size, modification and change times), digests of its first and last
bytes, and the lines the core found in it with their groups (none, for most: the "no hit"
verdict), or why it is not a transcript. A later search for the same text:

* a file whose identity is unchanged, and whose change time was at least
  :data:`SETTLE_SECONDS` before it was read, is not read at all: its lines are the cached
  ones. (A file changed within that time may have been changed again within the same
  tick of the file system's clock, which would leave its identity as it was: such an
  entry is trusted only for growth. git's index has the same rule.)
* a file that only grew (same device and inode, larger, the same first bytes and the same
  bytes before its old end) is searched from where its old last whole line ended: its
  last line when that had no newline yet is searched again, complete. Transcripts are
  append-only, so that is where new hits can be.
* anything else (a file rewritten, replaced, truncated, repaired) is searched whole.

A :class:`SearchCache` holds the entries of its recent queries in memory (the viewer keeps
one for its life) and, given a directory, keeps them on disk between runs (the command
line: ``LLM_AGENT_SESSION_CACHE``, else the platform's user cache directory, then
``llm-agent-session/search/``): one JSON file a query, replaced whole (written under a
temporary name, then renamed over), mode 0600, the newest :data:`QUERIES` kept. The files
are read as untrusted: one that does not parse as this module writes it is ignored.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import threading
import zlib
from array import array
from collections import OrderedDict
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import _platform
from ._pure import search as _pure_search
from ._cache import ENV_VAR, cache_dir  # noqa: F401 - ENV_VAR: named here before _cache was

#: How long after its last change a file's identity alone vouches for its bytes.
SETTLE_SECONDS = 2.0
#: The queries a cache keeps on disk, and in memory (about 0.4 KB a transcript each), the
#: most recent first.
QUERIES = 16
QUERIES_IN_MEMORY = 4
#: The files a query keeps entries for, those of the latest searches first.
ENTRIES = 200_000
#: The bytes each end's digest covers.
HEAD = 4 << 10
TAIL = 4 << 10
#: The largest cache file read (a bigger one is not this module's).
MAX_FILE = 512 << 20
FORMAT = 2  # 1: an object an entry (before columns)

Identity = Tuple[int, int, int, int, int]  # device, inode, size, mtime_ns, ctime_ns


def identity(st: os.stat_result) -> Identity:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def digest(data: bytes) -> int:
    """A change detector for a file's ends: the CRC-32 and the length (a few microseconds
    for 4 KiB, where a cryptographic digest took a tenth of a search of small files)."""
    return zlib.crc32(data) << 16 | len(data)


class Entry:
    """One transcript, searched whole for one query. Compact (slots, digests as numbers,
    no arrays where nothing was found): a viewer keeps one per transcript and query."""

    __slots__ = ("identity", "settled", "head", "tail", "resume", "problem", "lines", "groups")

    def __init__(self, identity: Identity, settled: bool, head: int, tail: int, resume: int,
                 problem: Optional[str] = None, lines: Sequence[int] = (), groups: Sequence[int] = ()) -> None:
        self.identity = identity
        #: Its change time was :data:`SETTLE_SECONDS` before it was read.
        self.settled = settled
        self.head = head  # digest of its first min(HEAD, size) bytes
        self.tail = tail  # digest of its last min(TAIL, size) bytes
        #: Where a search of it grown starts: the start of its last line when that line had
        #: no newline yet, else its size. ``lines`` holds only lines before it.
        self.resume = resume
        #: Why it is not a transcript (then ``lines`` is empty), or None.
        self.problem = problem
        #: The start of each line found, and its groups' bits (``search.find_hits``).
        self.lines: Sequence[int] = array("q", lines) if lines else ()
        self.groups: Sequence[int] = array("b", groups) if groups else ()


#: The numbers an entry is written as, in this order.
NUMBERS = 10  # device, inode, size, mtime_ns, ctime_ns, settled (0/1), head, tail, resume, lines found


def _as_columns(entries: "OrderedDict[str, Entry]") -> Dict[str, Any]:
    """A query's entries as the file holds them: columns (one list of paths, one of numbers,
    NUMBERS an entry, the lines found and their groups end to end), not an object an entry:
    10,000 entries were written in 0.12 s and read in 0.2 s that way, before a search."""
    paths: List[str] = []
    numbers: List[int] = []
    problems: Dict[str, str] = {}
    lines: List[int] = []
    groups: List[int] = []
    for i, (path, entry) in enumerate(entries.items()):
        paths.append(path)
        numbers.extend(entry.identity)
        numbers += (int(entry.settled), entry.head, entry.tail, entry.resume, len(entry.lines))
        if entry.problem is not None:
            problems[str(i)] = entry.problem
        lines.extend(entry.lines)
        groups.extend(entry.groups)
    return {"paths": paths, "numbers": numbers, "problems": problems, "lines": lines, "groups": groups}


def _from_columns(value: Dict[str, Any]) -> "OrderedDict[str, Entry]":
    """The entries of a file's columns (as :func:`_as_columns` writes them); ValueError for
    anything else. Checked in bulk: a query's file can hold millions of lines."""
    paths, numbers, problems = value.get("paths"), value.get("numbers"), value.get("problems")
    lines, groups = value.get("lines"), value.get("groups")
    if not (type(paths) is list and type(numbers) is list and len(numbers) == NUMBERS * len(paths)
            and type(problems) is dict and type(lines) is list and type(groups) is list
            and len(lines) == len(groups) and set(map(type, paths)) <= _STR
            and set(map(type, numbers)) <= _INT and set(map(type, lines)) <= _INT and set(map(type, groups)) <= _INT
            and set(map(type, problems.values())) <= _STR):
        raise ValueError("not this module's columns")
    try:
        all_numbers, all_lines, all_groups = array("q", numbers), array("q", lines), array("b", groups)
    except OverflowError:
        raise ValueError("a number out of range") from None
    if ((all_numbers and min(all_numbers) < 0) or (all_lines and min(all_lines) < 0)
            or (all_groups and (min(all_groups) < -1 or max(all_groups) > 15))
            or sum(all_numbers[NUMBERS - 1::NUMBERS]) != len(all_lines)):
        raise ValueError("not this module's columns")
    entries: "OrderedDict[str, Entry]" = OrderedDict()
    at = 0
    for i, path in enumerate(paths):
        dev, ino, size, mtime, ctime, settled, head, tail, resume, count = all_numbers[NUMBERS * i:NUMBERS * (i + 1)]
        problem = problems.get(str(i))
        if settled > 1 or resume > size or (problem is not None and count):
            raise ValueError("not an entry")
        entry = Entry((dev, ino, size, mtime, ctime), bool(settled), head, tail, resume, problem)
        if count:
            entry.lines, entry.groups = all_lines[at:at + count], all_groups[at:at + count]
            at += count
            if max(entry.lines) >= resume:
                raise ValueError("a line found past where the entry ends")
        entries[path] = entry
    return entries


_INT = {int}  # a JSON number read as a whole number (never a bool, a float, a string)
_STR = {str}


class Table:
    """The entries of one query, by the transcript's absolute path."""

    def __init__(self, entries: "Optional[OrderedDict[str, Entry]]" = None) -> None:
        self.entries: "OrderedDict[str, Entry]" = entries if entries is not None else OrderedDict()
        self.changed = False
        self._lock = threading.Lock()

    def get(self, path: str) -> Optional[Entry]:
        with self._lock:
            entry = self.entries.get(path)
            if entry is not None:
                self.entries.move_to_end(path)  # used in this search: kept first
            return entry

    def put(self, path: str, entry: Entry) -> None:
        with self._lock:
            self.entries[path] = entry
            self.entries.move_to_end(path)
            while len(self.entries) > ENTRIES:
                self.entries.popitem(last=False)
            self.changed = True


class SearchCache:
    """The entries of the recent queries (:data:`QUERIES_IN_MEMORY`) in memory, and with a
    `directory`, on disk between runs (:meth:`save` writes them). `settle` is
    :data:`SETTLE_SECONDS` (tests make it shorter)."""

    def __init__(self, directory: Optional[str] = None, settle: float = SETTLE_SECONDS) -> None:
        self.directory = directory
        self.settle_ns = int(settle * 1e9)
        self._tables: "OrderedDict[str, Table]" = OrderedDict()
        self._lock = threading.Lock()

    @classmethod
    def on_disk(cls) -> "SearchCache":
        """The cache the command line keeps: ``search/`` in :func:`cache_dir`."""
        return cls(os.path.join(cache_dir(), "search"))

    def table(self, needle: bytes, ignore_case: bool) -> Table:
        """The entries for a query, read from the directory on first use."""
        key = query_key(needle, ignore_case)
        with self._lock:
            table = self._tables.get(key)
            if table is None:
                table = self._read(key) or Table()
                self._tables[key] = table
            self._tables.move_to_end(key)
            while len(self._tables) > QUERIES_IN_MEMORY:
                self._tables.popitem(last=False)
            return table

    def _file(self, key: str) -> Optional[str]:
        return None if self.directory is None else os.path.join(self.directory, key + ".json")

    def _read(self, key: str) -> Optional[Table]:
        path = self._file(key)
        if path is None:
            return None
        try:
            fd = os.open(path, os.O_RDONLY | _platform.O_CLOEXEC | _platform.O_NOFOLLOW | _platform.O_NONBLOCK)
        except OSError:
            return None
        try:
            with os.fdopen(fd, "rb") as f:
                st = os.fstat(f.fileno())
                if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_FILE:
                    return None
                value = json.loads(f.read())
            if not (isinstance(value, dict) and value.get("format") == FORMAT and value.get("key") == key):
                return None
            return Table(_from_columns(value))
        except (OSError, ValueError, RecursionError):
            return None  # not one this module wrote: searched as if it were not there

    def save(self) -> None:
        """Write the queries whose entries changed to the directory (nothing without one;
        a failure to write is no harm: it is a cache), and drop the files of all but the
        newest :data:`QUERIES`."""
        if self.directory is None:
            return
        with self._lock:
            changed = [(key, table) for key, table in self._tables.items() if table.changed]
        if not changed:
            return
        try:
            os.makedirs(self.directory, mode=0o700, exist_ok=True)
        except OSError:
            return
        for key, table in changed:
            with table._lock:
                columns = _as_columns(table.entries)
                table.changed = False
            _write_replacing(self._file(key) or "", {"format": FORMAT, "key": key, **columns})
        self._prune()

    def _prune(self) -> None:
        try:
            names = [n for n in os.listdir(self.directory or ".") if n.endswith(".json")]
            dated = sorted(((os.stat(os.path.join(self.directory or ".", n)).st_mtime_ns, n) for n in names),
                           reverse=True)
            for _, name in dated[QUERIES:]:
                os.unlink(os.path.join(self.directory or ".", name))
        except OSError:
            pass  # another run pruned it first, or the directory went: no harm


def query_key(needle: bytes, ignore_case: bool) -> str:
    """A query's name: a digest of the text's written form, the case rule and the version
    (whose rules placed the groups)."""
    from . import __version__

    return hashlib.sha256(b"%s\0%d\0%s" % (__version__.encode(), ignore_case, needle)).hexdigest()[:40]


def _write_replacing(path: str, value: Any) -> None:
    tmp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _platform.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(json.dumps(value, separators=(",", ":")))  # json.dump's chunks take 10x as long
        os.replace(tmp, path)
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def tail_start(fd: int, size: int) -> Tuple[int, int]:
    """Where a search of the file grown past `size` starts (see :class:`Entry`), and the
    digest of its last min(TAIL, size) bytes."""
    resume, last = _pure_search.tail_start(fd, size, TAIL)
    return resume, digest(last)


def tail_digest(fd: int, size: int) -> int:
    """The digest of the last min(TAIL, size) bytes before `size`."""
    start = max(0, size - TAIL)
    return digest(_platform.pread(fd, size - start, start))
