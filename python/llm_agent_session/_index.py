"""Where a transcript's side index is kept, and its life: read (bounded, never trusted),
written (atomically, mode 0600, off the caller's path), kept current by a session that
appends. What an index holds and how it is checked is the core's (``rust/index/``,
``_pure/index.py``; docs/FORMAT.md, "The side index").

An index is a cache: never needed (without one, the file is read whole, as before),
never trusted blindly (it names the file it describes and hashes some of its bytes;
any doubt, and the file is read whole), and safe to delete at any time. It lives in
the user's cache directory, never beside the transcript:
``LLM_AGENT_SESSION_CACHE``, else ``$XDG_CACHE_HOME`` or ``~/.cache`` (Linux and the
BSDs), ``~/Library/Caches`` (macOS), ``%LOCALAPPDATA%`` (Windows), then
``llm-agent-session/index/`` there, one file a transcript, named by a hash of the
transcript's real path (``index_file``).

No lock is needed: an index file is only ever replaced whole (written under a
temporary name, then renamed over), so a reader sees an old index or a new one, each
checked against the file before use; two writers racing leave one of two indexes that
are both right about the bytes they describe.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import sys
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

from . import _backend, _platform
from ._cache import cache_dir

# Transcripts smaller than this get an index only when asked (`llm-agent-session index`):
# a whole read of them takes milliseconds anyway.
AUTO_MIN_BYTES = 8 << 20
# A session that appends refreshes its index after this many bytes (and when it closes).
REFRESH_EVERY = 64 << 20
# Leftover temporary files (a writer killed mid-write) older than this are removed.
_STALE_SECONDS = 3600

Stat = Tuple[int, int, int, int, int]


def index_file(path: Any) -> str:
    """Where the side index of the transcript at `path` is kept (whether or not it
    exists): a file in the cache directory named by a hash of the transcript's real path."""
    real = os.path.realpath(os.path.abspath(os.fspath(path)))
    name = hashlib.sha256(os.fsencode(real)).hexdigest()[:40]
    return os.path.join(cache_dir(), "index", name + ".idx")


_secrets: Dict[str, Tuple[int, int]] = {}


def secret(create: bool = True) -> Optional[Tuple[int, int]]:
    """The cache's secret key, which seals every index it keeps (an index not sealed
    with it is not used): 16 random bytes in ``<cache>/index/key``, mode 0600, made on
    first use when `create`. None where there is none, it cannot be made, or it is not
    this user's alone (then no index is read or written)."""
    folder = os.path.join(cache_dir(), "index")
    known = _secrets.get(folder)
    if known is not None:
        return known
    where = os.path.join(folder, "key")
    raw = _read_key(where)
    if raw is None and create:
        try:
            os.makedirs(folder, mode=0o700, exist_ok=True)
            tmp = f"{where}.{os.getpid()}.{threading.get_ident()}.tmp"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _platform.O_CLOEXEC | _platform.O_NOFOLLOW, 0o600)
            try:
                os.write(fd, os.urandom(16))
            finally:
                os.close(fd)
            try:
                os.link(tmp, where)  # made whole, or another process's is kept
            except FileExistsError:
                pass
            finally:
                os.unlink(tmp)
        except OSError:
            return None
        raw = _read_key(where)
    if raw is None:
        return None
    key = (int.from_bytes(raw[:8], "little"), int.from_bytes(raw[8:], "little"))
    _secrets[folder] = key
    return key


def _read_key(where: str) -> Optional[bytes]:
    try:
        fd = os.open(where, os.O_RDONLY | _platform.O_CLOEXEC | _platform.O_NOFOLLOW | _platform.O_NONBLOCK)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        owner = getattr(os, "geteuid", lambda: st.st_uid)()
        if not stat.S_ISREG(st.st_mode) or st.st_uid != owner or st.st_mode & 0o077:
            return None
        raw = os.read(fd, 17)
        return raw if len(raw) == 16 else None
    except OSError:
        return None
    finally:
        os.close(fd)


def identity(st: os.stat_result, size: Optional[int] = None) -> Stat:
    """What an index records of a file: device, inode, size, modification and change times."""
    return (st.st_dev, st.st_ino, st.st_size if size is None else size, st.st_mtime_ns, st.st_ctime_ns)


def max_bytes(transcript_size: int) -> int:
    """The largest index file read for a transcript of this size: an index is always
    smaller than its transcript, so a bigger file is not one (and is not read)."""
    return 4096 + transcript_size


def open_index(path: str) -> Optional[int]:
    """A read-only descriptor of the index kept for `path`, or None (none, unreadable,
    not a regular file). Its bytes are untrusted: the core reads and checks them."""
    try:
        fd = os.open(index_file(path), os.O_RDONLY | _platform.O_CLOEXEC | _platform.O_NOFOLLOW | _platform.O_NONBLOCK)
    except OSError:
        return None
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            return fd
    except OSError:
        pass
    os.close(fd)
    return None


def read(path: str) -> Optional[bytes]:
    """The bytes of the index kept for `path` (for tests and the command line), or None."""
    fd = open_index(path)
    if fd is None:
        return None
    try:
        with os.fdopen(os.dup(fd), "rb") as f:
            return f.read()
    finally:
        os.close(fd)


def write(path: str, data: bytes) -> bool:
    """Replace the index kept for `path` with `data`, atomically, mode 0600 (its
    directories 0700). False when it cannot be written (no harm: it is a cache)."""
    where = index_file(path)
    folder = os.path.dirname(where)
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
    except OSError:
        return False
    tmp = f"{where}.{os.getpid()}.{threading.get_ident()}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _platform.O_CLOEXEC | _platform.O_NOFOLLOW, 0o600)
    except OSError:
        return False
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        os.replace(tmp, where)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        return False
    _remove_stale(folder)
    return True


def remove(path: Any) -> None:
    """Delete the index kept for `path`, if any."""
    with contextlib.suppress(OSError):
        os.unlink(index_file(path))


_writes = [0]


def _remove_stale(folder: str) -> None:
    """Remove the temporary files of writers killed mid-write, at every 64th write."""
    _writes[0] += 1
    if _writes[0] % 64 != 1:
        return
    now = time.time()
    with contextlib.suppress(OSError):
        for entry in os.scandir(folder):
            if entry.name.endswith(".tmp"):
                with contextlib.suppress(OSError):
                    if now - entry.stat(follow_symlinks=False).st_mtime > _STALE_SECONDS:
                        os.unlink(entry.path)


def coarse_and_recent(st: os.stat_result) -> bool:
    """Whether the file's change time is of whole seconds (a file system with coarse
    times) and within two seconds of now: a change made later in that same second would
    leave size and times as the index records them, so no index is written yet."""
    return st.st_ctime_ns % 1_000_000_000 == 0 and time.time_ns() - st.st_ctime_ns < 2_000_000_000


# --- writing off the caller's path ------------------------------------------------------

_writers: List[threading.Thread] = []
_writers_lock = threading.Lock()


def publish(path: str, data: bytes) -> None:
    """Write `data` as the index of `path` on a thread of its own (an index of a 10 GB
    transcript is tens of MB); the interpreter waits for it at exit."""
    start(threading.Thread(target=write, args=(path, data), name="llm-agent-session-index"))


def start(thread: threading.Thread) -> None:
    """Start `thread`, which writes an index, where ``flush`` waits for it."""
    with _writers_lock:
        _writers[:] = [t for t in _writers if t.is_alive()]
        _writers.append(thread)
    thread.start()


def flush() -> None:
    """Wait until every index being written by this process is written."""
    while True:
        with _writers_lock:
            alive = [t for t in _writers if t.is_alive()]
            _writers[:] = alive
        if not alive:
            return
        for t in alive:
            t.join()


# --- a load ---------------------------------------------------------------------------------


def replay(
    path: str, fd: int, size: int, then: os.stat_result, use: bool, write_ok: bool
) -> Tuple[Any, Any, str, bool]:
    """The state and events of the first `size` bytes of `fd` (the transcript at `path`,
    which `then` describes as it was before any repair), through its index when `use`;
    a new index is written when `write_ok` and the file is big enough. Returns (state,
    events, what became of the index, whether an index of those bytes is kept now).
    Raises ``CoreFailure`` as a whole read does."""
    core = _backend.core
    now = os.fstat(fd)
    write_new = write_ok and size >= AUTO_MIN_BYTES and not coarse_and_recent(now)
    # Only a load that writes an index makes the cache (and its key).
    key = secret(create=write_new) if use or write_new else None
    write_new = write_new and key is not None
    candidate = open_index(path) if use and key is not None else None
    try:
        if key is None or (candidate is None and not write_new):
            state, events = core.replay(fd, size, path=path)
            return state, events, "none", False
        # An index extended over appended bytes (tens of MB at 10 GB) is made by a refresh
        # off this thread, not here.
        done = core.replay_indexed(
            fd, size, identity(then), identity(now, size), key, index_fd=candidate,
            index_max=max_bytes(then.st_size), write=write_new, extend=False, path=path,
        )
    finally:
        if candidate is not None:
            os.close(candidate)
    if done.index_bytes is not None:
        publish(path, done.index_bytes)
    elif write_new and done.used.startswith("ignored"):
        remove(path)
    elif write_new and done.used == "used" and done.read:
        refresh_later(path, fd, size, now)
    return done.state, done.events, done.used, done.used == "used" or done.index_bytes is not None


# --- an index made on demand (`llm-agent-session index`) ------------------------------------

# What `update` says of a transcript.
INDEXED, REFRESHED, UP_TO_DATE, NOT_INDEXED, NOT_A_TRANSCRIPT, FAILED = (
    "indexed", "refreshed", "up to date", "not indexed", "not a transcript", "failed",
)


def _whole_lines_end(fd: int, size: int) -> int:
    """Just past the last ``\n`` of the first `size` bytes (0: none): a line after it is
    unfinished (a writer may be halfway through it) or torn, and is not indexed."""
    at = size
    while at > 0:
        start = max(0, at - (64 << 10))
        chunk = _platform.pread(fd, at - start, start)
        nl = chunk.rfind(b"\n")
        if nl != -1:
            return start + nl + 1
        at = start
    return 0


def update(path: str) -> Tuple[str, str]:
    """Bring the index of the transcript at `path` up to date: from the index kept, only
    what was appended since is read; without a usable one, the whole file. The transcript
    is only read (no lock: a writer may be appending; its unfinished last line is left
    for next time). Returns (what happened, a detail for people): ``indexed``,
    ``refreshed`` (the index grew), ``up to date``, ``not indexed`` (a load would fail,
    or nothing whole to index yet), ``not a transcript``, ``failed`` (the cache cannot
    be written)."""
    from ._files import open_to_read
    from .errors import CoreFailure, public_error

    try:
        fd = open_to_read(path)
    except OSError as e:
        return NOT_A_TRANSCRIPT, f"cannot open it: {e.strerror}"
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return NOT_A_TRANSCRIPT, "not a regular file"
        key = secret(create=True)
        if key is None:
            return FAILED, f"the cache's key cannot be made or read in {os.path.join(cache_dir(), 'index')}"
        if coarse_and_recent(st):
            return NOT_INDEXED, "it changed within the last 2 seconds on a file system with whole-second times: run again"
        end = _whole_lines_end(fd, st.st_size)
        candidate = open_index(path)
        try:
            made, used = _backend.core.make_index(
                fd, end, identity(st), identity(st), key, index_fd=candidate, index_max=max_bytes(st.st_size)
            )
        except CoreFailure as f:
            error = public_error(f, path)
            if f.kind == "not-a-transcript":
                return NOT_A_TRANSCRIPT, str(error)
            return NOT_INDEXED, f"a load would fail: {error}"
        finally:
            if candidate is not None:
                os.close(candidate)
    finally:
        os.close(fd)
    if made is None:
        if used == "used":
            return UP_TO_DATE, index_file(path)
        return NOT_INDEXED, "its last envelope has no newline after it yet"
    if not write(path, made):
        return FAILED, f"cannot write {index_file(path)}"
    return (REFRESHED if used == "used" else INDEXED), index_file(path)


# --- a reader that does not fold ------------------------------------------------------------


def table(path: str, fd: int, st: os.stat_result, want_survey: bool) -> Optional[Any]:
    """The ``_core.IndexTable`` of the index kept for `path` when it still describes the
    file open at `fd` (`st`: its ``fstat``), else None. Reads; writes nothing."""
    key = secret(create=False)
    if key is None:
        return None
    ifd = open_index(path)
    if ifd is None:
        return None
    try:
        return _backend.core.index_table(
            fd, st.st_size, identity(st), key, ifd, max_bytes(st.st_size), want_survey, path=path
        )
    finally:
        os.close(ifd)


# --- a session that appends ----------------------------------------------------------------


def reopen_to_read(fd: int, path: str) -> Optional[int]:
    """A read-only descriptor of the file `fd` is open on, of its own (never a ``dup``:
    the session's lock belongs to its open file description), or None."""
    where = _platform.reopen_path(path) or f"/proc/self/fd/{fd}"
    try:
        rfd = os.open(where, os.O_RDONLY | _platform.O_CLOEXEC | _platform.O_NONBLOCK)
    except OSError:
        return None
    try:
        mine, theirs = os.fstat(fd), os.fstat(rfd)
        if (mine.st_dev, mine.st_ino) == (theirs.st_dev, theirs.st_ino):
            return rfd
    except OSError:
        pass
    os.close(rfd)
    return None


def _run_last() -> None:
    """Lower the calling thread, and the threads it starts, to the lowest priority: a
    refresh keeps a cache, and the session's appends (and the rest of the machine) come
    first. Linux gives each thread its own nice value; elsewhere nothing changes."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)


def refresh_later(path: str, fd: int, size: int, st: os.stat_result) -> None:
    """``refresh`` on a thread of its own, through a descriptor of its own."""
    rfd = reopen_to_read(fd, path)
    if rfd is not None:
        start(threading.Thread(target=refresh, args=(path, rfd, size, st), name="llm-agent-session-index"))


def refresh(path: str, rfd: int, size: int, st: os.stat_result) -> bool:
    """Bring the index of `path` to its first `size` bytes (whole lines, read through
    `rfd`, which is closed), from the index kept (only what was appended since is read)
    or, without a usable one, from the whole file. `st`: the file when `size` was taken.
    False when nothing was written. For a session's refresh, off its thread."""
    _run_last()
    key = secret()
    candidate = open_index(path) if key is not None else None
    try:
        if key is None or coarse_and_recent(st):
            return False
        then = identity(st, size)
        made, _ = _backend.core.make_index(rfd, size, then, then, key, index_fd=candidate, index_max=max_bytes(size))
        return made is not None and write(path, made)
    except Exception:  # noqa: BLE001 - a cache: the next load reads the file whole instead
        return False
    finally:
        os.close(rfd)
        if candidate is not None:
            os.close(candidate)
