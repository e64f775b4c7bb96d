"""What differs between operating systems, decided in this one module.

Linux has the fastest way for a few things; each has a fallback that works on macOS
and the BSDs, and ``LLM_AGENT_SESSION_PORTABLE=1`` forces every fallback on Linux too,
so that the test suite proves them here:

- the native core's lazy reads reopen the transcript through ``/proc/self/fd``; the
  fallback reopens it by path and keeps it only if it is the same inode (``st_dev``,
  ``st_ino``) as the descriptor (else everything is built at once, as before);
- ``F_DUPFD_CLOEXEC`` moves a descriptor to 3 or more; the fallback ``dup``s in a loop;
- ``os.pread`` (missing on Windows); the fallback seeks, reads and seeks back;
- ``fsync`` on macOS is ``fcntl(F_FULLFSYNC)``, since macOS's ``fsync`` does not
  flush the drive's cache (not a forced fallback: Linux has no F_FULLFSYNC);
- a worker process ends with its parent through ``prctl(PR_SET_PDEATHSIG)``; the
  fallback is a thread in the worker that watches ``os.getppid()``.

Windows has no ``fcntl``: the modules import, the read-only side works (peek,
salvage, the viewing commands, export), and what needs the exclusive lock raises
``NotImplementedError`` through ``require_lock``.
"""

from __future__ import annotations

import errno
import os
import sys
from typing import Optional

try:
    import fcntl as fcntl  # re-exported: _files locks through it
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]

# Whether a writing session can be had here: the exclusive advisory lock (not on Windows).
HAS_LOCK = fcntl is not None

PORTABLE_ENV = "LLM_AGENT_SESSION_PORTABLE"
# Read once, at import: one process, one set of code paths.
PORTABLE = os.environ.get(PORTABLE_ENV, "") not in ("", "0")

O_CLOEXEC = getattr(os, "O_CLOEXEC", 0) or getattr(os, "O_NOINHERIT", 0)
O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
# Windows opens in text mode (CRLF translation) unless told otherwise.
O_BINARY = getattr(os, "O_BINARY", 0)

_FULLFSYNC = getattr(fcntl, "F_FULLFSYNC", None) if sys.platform == "darwin" else None


def require_lock(what: str) -> None:
    """Raise NotImplementedError where there is no exclusive advisory lock (Windows)."""
    if fcntl is None:
        raise NotImplementedError(
            f"{what} is not available on this platform ({sys.platform}): a writing session needs an "
            "exclusive advisory lock (flock) held for its whole life and an atomic publish (a hard "
            "link, and a rename over a file another process may have open), which this library "
            "implements on Linux, macOS and the BSDs only. Reading works everywhere: "
            "Session.peek, Session.salvage and the command line's viewing commands and export"
        )


def lock_exclusive_nonblocking(fd: int) -> None:
    """``flock(LOCK_EX | LOCK_NB)``: OSError (EWOULDBLOCK) when another holds it."""
    require_lock("a writing session")
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)


def dup_at_least_3(fd: int) -> int:
    """A close-on-exec duplicate of `fd` numbered 3 or more (`fd` itself is left open)."""
    if fcntl is not None and not PORTABLE:
        return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    low = []
    try:
        new = os.dup(fd)  # non-inheritable (PEP 446)
        while new < 3:
            low.append(new)
            new = os.dup(fd)
        return new
    finally:
        for d in low:
            os.close(d)


def set_status_flags(fd: int, add: int = 0, remove: int = 0) -> None:
    """Change the file status flags of `fd` (O_APPEND, O_NONBLOCK)."""
    if fcntl is None:
        return  # only writers change them, and writers need the lock (require_lock)
    flags = fcntl.fcntl(fd, fcntl.F_GETFL)
    fcntl.fcntl(fd, fcntl.F_SETFL, (flags | add) & ~remove)


def fsync(fd: int) -> None:
    """Flush `fd` to stable storage: F_FULLFSYNC on macOS (where it is refused, by a file
    system without it, plain fsync), fsync elsewhere."""
    if _FULLFSYNC is not None:
        try:
            fcntl.fcntl(fd, _FULLFSYNC)
            return
        except OSError as e:
            if e.errno not in (errno.EINVAL, errno.ENOTSUP, errno.ENOTTY):
                raise
    os.fsync(fd)


def pread(fd: int, length: int, offset: int) -> bytes:
    """Up to `length` bytes of `fd` from `offset`; b"" at the end of the file."""
    if hasattr(os, "pread") and not PORTABLE:
        return os.pread(fd, length, offset)
    # Seek, read, seek back: the position is shared with every duplicate of `fd`, and
    # callers (the repair copy) promise to leave the source's alone.
    here = os.lseek(fd, 0, os.SEEK_CUR)
    try:
        os.lseek(fd, offset, os.SEEK_SET)
        return os.read(fd, length)
    finally:
        os.lseek(fd, here, os.SEEK_SET)


def reopen_path(path: Optional[str]) -> Optional[str]:
    """The path the native core should reopen a transcript by, or None for ``/proc/self/fd``.

    By path where ``/proc`` cannot serve (not Linux, ``/proc`` unmounted) or when the
    fallbacks are forced; the core keeps the reopened file only if it is the same inode.
    """
    if path is None:
        return None
    if PORTABLE or not sys.platform.startswith("linux") or not os.path.isdir("/proc/self/fd"):
        return os.fspath(path)
    return None


#: How often a worker without PR_SET_PDEATHSIG looks whether its parent is still there.
PARENT_WATCH_SECONDS = 0.2


def die_with_parent(parent: Optional[int]) -> None:
    """Make this process (a pool's worker) end when its parent does, even by SIGKILL, which
    no handler of the parent sees: else a killed ``dataset --jobs N`` leaves N workers
    running, waiting for work forever, holding memory and its staging directory's lock.
    `parent`: the pid that started this process (None: its parent now, as under a fork
    server, which itself ends with the process that started it).

    Linux: the kernel sends SIGKILL when the parent goes (PR_SET_PDEATHSIG); if the parent
    was already gone before that was set, no signal will come, so this process ends now.
    Elsewhere (and when the fallbacks are forced): a thread checks ``os.getppid()``."""
    expected = os.getppid() if parent is None else parent
    if sys.platform.startswith("linux") and not PORTABLE:
        import ctypes
        import signal

        pr_set_pdeathsig = 1
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(pr_set_pdeathsig, int(signal.SIGKILL), 0, 0, 0) == 0:
            if os.getppid() != expected:
                os._exit(1)
            return
    import threading
    import time

    def watch() -> None:
        while os.getppid() == expected:
            time.sleep(PARENT_WATCH_SECONDS)
        os._exit(1)

    if os.getppid() != expected:
        os._exit(1)
    threading.Thread(target=watch, name="die-with-parent", daemon=True).start()
