"""File-system primitives: safe descriptors, the advisory lock, atomic publication."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
from typing import Callable, Optional, Union
from . import _platform
from ._platform import fcntl
from .canonical import new_id
from .errors import SessionLocked


def high_fd(fd: int) -> int:
    """Move `fd` to a number of 3 or more (close-on-exec): stray writes to 0-2 never land in it."""
    if fd >= 3:
        return fd
    try:
        return _platform.dup_at_least_3(fd)
    finally:
        os.close(fd)


def open_fd(path: str, flags: int, mode: int = 0o600) -> int:
    return high_fd(os.open(path, flags | _platform.O_CLOEXEC | _platform.O_BINARY, mode))


def open_to_read(path: str) -> int:
    """`path` opened read-only, for a reader that locks nothing. O_NONBLOCK: opening a
    FIFO planted at the path must not hang the reader (its first read then finds nothing)."""
    return os.open(path, os.O_RDONLY | _platform.O_CLOEXEC | _platform.O_NONBLOCK | _platform.O_BINARY)


def try_lock(fd: int, path: str) -> None:
    """Take the exclusive advisory lock on `fd` now, or raise SessionLocked
    (NotImplementedError where there is no flock: Windows)."""
    _platform.require_lock("a writing session (Session.create, Session.load, Session.fork)")
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as e:
        if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            raise SessionLocked(
                f"{path} is open in another session (in this or another process) that holds its "
                "lock; close that session first, or read it without opening it with Session.peek"
            ) from None
        raise


def fsync_dir(path: str) -> None:
    fd = os.open(os.path.dirname(os.path.abspath(path)) or ".", os.O_RDONLY | _platform.O_CLOEXEC)
    try:
        _platform.fsync(fd)
    finally:
        os.close(fd)


def write_all(fd: int, data: bytes) -> None:
    """Write every byte through the raw descriptor, looping over short writes."""
    n = os.write(fd, data)
    if n == len(data):
        return
    if n <= 0:
        raise OSError(errno.EIO, "write returned no progress")
    view = memoryview(data)[n:]
    while view:
        n = os.write(fd, view)
        if n <= 0:
            raise OSError(errno.EIO, "write returned no progress")
        view = view[n:]


def make_private_dirs(directory: str) -> None:
    """Create `directory` and each missing parent with mode 0700 (os.makedirs gives only the leaf it)."""
    missing = []
    while directory and not os.path.isdir(directory):
        missing.append(directory)
        parent = os.path.dirname(directory)
        if parent == directory:
            break
        directory = parent
    for d in reversed(missing):
        try:
            os.mkdir(d, 0o700)
        except FileExistsError:
            continue
        os.chmod(d, 0o700)  # exact mode whatever the umask


_DEFAULT_NAME_MAX = 255  # where the platform cannot say (Windows: 255 UTF-16 units, at least as many as bytes)


def name_max(directory: str) -> int:
    """The longest file name, in bytes, that `directory`'s file system takes (NAME_MAX)."""
    try:
        limit = os.pathconf(directory or ".", "PC_NAME_MAX")
    except (OSError, ValueError, AttributeError):
        return _DEFAULT_NAME_MAX
    return limit if limit > 0 else _DEFAULT_NAME_MAX


def side_name(path: str, prefix: str, suffix: str) -> str:
    """The path of a file the library keeps beside `path`: ``<prefix><name><suffix>`` in
    its directory, `name` being `path`'s last component. Where that is longer than the
    file system takes in a name (a legal name of 255 bytes leaves no room for a suffix),
    `name` is cut to its first bytes, at a character boundary, followed by ``~`` and the
    first 16 hex digits of the SHA-256 of the whole name's bytes: it fits, it is the same
    on every call (load finds what an interrupted repair left) and it shows whose it is.
    """
    head, name = os.path.split(path)
    whole = os.fsencode(name)
    fixed = len(os.fsencode(prefix + suffix))
    limit = name_max(head)
    if fixed + len(whole) <= limit:
        return os.path.join(head, prefix + name + suffix)
    digest = hashlib.sha256(whole).hexdigest()[:16]
    end = max(limit - fixed - 1 - len(digest), 0)
    while end > 0 and whole[end] & 0xC0 == 0x80:  # a UTF-8 continuation byte: not a boundary
        end -= 1
    return os.path.join(head, prefix + os.fsdecode(whole[:end]) + "~" + digest + suffix)


def publish_new(
    path: str,
    content: Union[bytes, Callable[[int], None]],
    *,
    fsync: bool,
    verify: Optional[Callable[[int, int], None]] = None,
    mode: int = 0o600,
    lock: bool = True,
) -> int:
    """Create `path` with `content`, atomically and never over an existing file.

    The bytes go to an exclusive temporary file beside it (written by `content` when
    that is a function of the descriptor), which is locked, checked by `verify(fd,
    size)` (which may raise to abandon it), then hard-linked to `path`
    (FileExistsError if taken) and unlinked: a crash never leaves a half-made file at
    `path`. Returns the O_APPEND descriptor, locked unless `lock` is false (for a
    caller that closes it at once).
    """
    parent = os.path.dirname(os.path.abspath(path))
    make_private_dirs(parent)
    if os.path.lexists(path):
        raise FileExistsError(errno.EEXIST, "a file already exists there (it was not touched)", path)
    tmp = side_name(os.path.join(parent, os.path.basename(path)), ".", f".{new_id()}.tmp")
    try:
        fd = open_fd(tmp, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_EXCL | _platform.O_NOFOLLOW, mode)
    except OSError as e:
        raise _naming(e, tmp, path) from None
    try:
        if hasattr(os, "fchmod"):
            os.fchmod(fd, mode)  # exact mode whatever the umask: transcripts hold secrets
        if lock:
            try_lock(fd, path)
        if callable(content):
            content(fd)
        else:
            write_all(fd, content)
        if fsync:
            _platform.fsync(fd)
        if verify is not None:
            verify(fd, os.fstat(fd).st_size)
        try:
            # Never through a symlink where the platform can say so (linkat); tmp is ours anyway.
            os.link(tmp, path, follow_symlinks=os.link not in os.supports_follow_symlinks)
        except FileExistsError:
            raise FileExistsError(
                errno.EEXIST, "a file already exists there (it was not touched)", path
            ) from None
        except OSError as e:
            raise _naming(e, tmp, path) from None
    except BaseException:
        os.close(fd)
        raise
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    if fsync:
        try:
            fsync_dir(path)
        except BaseException:
            os.close(fd)
            raise
    return fd


def _naming(e: OSError, tmp: str, path: str) -> OSError:
    """`e`, about the private temporary file, said of `path`: the file the caller named."""
    if e.filename not in (tmp, path):
        return e
    return type(e)(e.errno, e.strerror, path)


def same_inode(mine: os.stat_result, path: str) -> bool:
    """Is `path` still the inode `mine` describes? False when `path` no longer exists."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return False
    return (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino)


def name_as_text(path: str) -> str:
    """`path` as UTF-8 text: a file name is any bytes on Linux, and Python holds the bytes
    that are not UTF-8 as lone surrogates, which no UTF-8 encoder takes (Parquet, a
    terminal, JSON read elsewhere). Each such byte is written ``\\xNN`` instead."""
    return os.fsencode(path).decode("utf-8", "backslashreplace") if _has_surrogate(path) else path


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
