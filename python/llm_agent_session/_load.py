"""``Session.load`` up to the replay: lock, leftover cleanup, tail check and repair (docs/FORMAT.md, "Reading: the tail first")."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from typing import List, Tuple

from . import _backend, _platform
from ._files import fsync_dir, open_fd, same_inode, side_name, try_lock, write_all
from .errors import CoreFailure, NotATranscript, public_error

_LOCK_RETRIES = 100


def repair_path_of(path: str) -> str:
    """Where the repair copy goes: ``<path>.repair`` beside the real file, so a symlink's
    target is replaced; where that name would be too long, ``_files.side_name``'s short form."""
    return side_name(os.path.realpath(path), "", ".repair")


def open_locked(path: str) -> int:
    """Open `path` for appending and lock it, re-checking that the locked inode is `path`'s."""
    for _ in range(_LOCK_RETRIES):
        try:
            # O_NONBLOCK only for the open itself: a FIFO planted at the path must not hang us.
            fd = open_fd(path, os.O_RDWR | os.O_APPEND | _platform.O_NONBLOCK)
            _platform.set_status_flags(fd, remove=_platform.O_NONBLOCK)
        except FileNotFoundError:
            leftover = repair_path_of(path)
            if os.path.lexists(leftover):
                raise FileNotFoundError(
                    errno.ENOENT,
                    f"the transcript does not exist, but {leftover} does: it may be the only copy "
                    "(the remains of an interrupted repair). It was not deleted; inspect it and "
                    "rename it to the transcript's path to recover",
                    path,
                ) from None
            raise
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise NotATranscript(f"{path} is not a regular file, so not a transcript")
            try_lock(fd, path)
            # A repair may have renamed a new file over `path` while we waited for the lock.
            st = os.fstat(fd)
            if st.st_nlink > 0 and same_inode(st, path):
                return fd
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)
    raise OSError(errno.EAGAIN, "the transcript kept being replaced while opening it", path)


def remove_leftover_repair(path: str, warnings: List[str]) -> None:
    """Delete ``<path>.repair``, the remains of an interrupted repair (never followed if a link)."""
    leftover = repair_path_of(path)
    try:
        st = os.lstat(leftover)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        warnings.append(
            f"{leftover} is a directory, not a leftover repair file; it was left alone "
            "(a repair of this transcript cannot run until it is moved away)"
        )
        return
    try:
        os.unlink(leftover)  # a symlink is unlinked, its target untouched
    except OSError as e:
        raise type(e)(
            e.errno,
            f"{leftover} is left over from an interrupted repair of {path} and could not be "
            f"deleted ({e.strerror}); the transcript is intact. Delete that file yourself, or "
            "make its directory writable, then load again",
            leftover,
        ) from None


def check_and_repair(path: str, fd: int, warnings: List[str]) -> Tuple[int, int]:
    """Run the tail check; repair a torn tail or add a missing final newline.

    Returns (fd, size): after a repair `fd` is the new, locked file.
    """
    core = _backend.core
    size = os.fstat(fd).st_size
    try:
        kind, cut, line, excerpt = core.tail_check(fd, size)
    except CoreFailure as f:
        raise public_error(f, path) from None
    if kind == "no-newline":
        write_all(fd, b"\n")  # the last line is whole: finish it, rewrite nothing
        return fd, size + 1
    if kind != "torn":
        return fd, size
    return _repair(path, fd, size, cut, line, excerpt, warnings)


def _repair(
    path: str, fd: int, size: int, cut: int, line: int, excerpt: bytes, warnings: List[str]
) -> Tuple[int, int]:
    removed = size - cut
    st = os.fstat(fd)
    real = os.path.realpath(path)
    if not (st.st_mode & 0o222) or not os.access(real, os.W_OK):
        raise PermissionError(
            errno.EACCES,
            f"the last line (line {line}, byte {cut}, {removed} bytes) is torn and must be "
            "removed before the transcript can be appended to, but the file is read-only; "
            "nothing was changed. Make it writable (chmod u+w) and load again, or read it "
            "with Session.peek",
            path,
        )
    target = repair_path_of(path)
    try:
        rfd = open_fd(
            target, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, stat.S_IMODE(st.st_mode)
        )
    except OSError as e:
        raise OSError(
            e.errno,
            f"cannot create the repair copy {target} ({e.strerror}); the transcript was left "
            "exactly as it was",
            path,
        ) from None
    try:
        os.fchmod(rfd, stat.S_IMODE(st.st_mode))
        with contextlib.suppress(OSError):
            os.fchown(rfd, st.st_uid, st.st_gid)
        try_lock(rfd, target)
        _backend.core.copy_prefix(fd, rfd, cut)
        _platform.fsync(rfd)
        if os.fstat(rfd).st_size != cut:
            raise OSError(errno.EIO, f"the repair copy holds {os.fstat(rfd).st_size} bytes, not {cut}")
        os.rename(target, real)
    except BaseException as e:
        os.close(rfd)
        with contextlib.suppress(OSError):
            os.unlink(target)
        if isinstance(e, OSError):
            raise OSError(
                e.errno,
                f"repairing the torn last line needs a verbatim copy of the first {cut} bytes "
                f"beside the transcript, which failed ({e.strerror or e}); the transcript was left "
                f"exactly as it was and the partial copy was removed. Free at least {cut} bytes "
                "(or fix the error) and load again",
                path,
            ) from None
        raise
    try:
        fsync_dir(real)
    except OSError as e:
        os.close(rfd)  # `fd` is closed by the caller, as on every failure
        raise OSError(
            e.errno,
            f"the torn last line (line {line}, byte {cut}) was cut off and the repaired file renamed "
            f"into place, but syncing its directory failed ({e.strerror}), so the repair may not "
            "survive a power loss; check the disk and load again",
            path,
        ) from None
    # Appends go to the end; set only now, after the copy wrote at the file position.
    _platform.set_status_flags(rfd, add=os.O_APPEND)
    os.close(fd)  # releases the lock on the old inode; the new one is already locked
    shown = excerpt.decode("utf-8", "replace")
    warnings.append(
        f"removed a torn last line from {path}: line {line} at byte {cut}, {removed} bytes "
        f"(starting {shown!r}); a crash cut it off mid-write"
    )
    if st.st_nlink > 1:
        warnings.append(
            f"{path} had {st.st_nlink - 1} other hard link(s); they still name the old file, "
            "torn line included"
        )
    return rfd, cut
