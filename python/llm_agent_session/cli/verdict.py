"""What ``Session.load`` would do to a file, found without doing it (for ``check`` and ``peek``).

Load repairs a torn tail before it replays, so loading even a private copy costs a copy
of the whole file (256 MB of TMPDIR for a 256 MB transcript). Instead this runs load's
own two steps read-only on the file itself, through the same core: the tail check (which
only looks) and the replay over the bytes a repair would keep (``[0, cut)``), through the
side index as load's is. No lock is taken, nothing is written beside the transcript (a
big one's index goes to the cache), no extra disk is used; the verdict, the error
(class, line, byte offset) and the size of the repair are exactly load's.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from typing import Any, List, Optional, Sequence, Tuple

from .. import NotATranscript, PendingToolOperation
from .. import _backend, _index
from .._files import open_to_read
from ..errors import CoreFailure, public_error
from . import exit_codes

# A verdict is the exit code check returns for it.
CLEAN, WOULD_REPAIR, WOULD_FAIL = exit_codes.OK, exit_codes.WOULD_REPAIR, exit_codes.WOULD_FAIL
NOT_A_TRANSCRIPT = exit_codes.NOT_A_TRANSCRIPT


@dataclass
class Torn:
    """The torn last line a repair would remove: bytes [cut, size)."""

    line: int
    cut: int
    removed: int
    excerpt: str


@dataclass
class Verdict:
    code: int  # CLEAN, WOULD_REPAIR, WOULD_FAIL or NOT_A_TRANSCRIPT: check's exit codes
    size: int
    torn: Optional[Torn] = None
    adds_newline: bool = False  # the last line is whole but has no final newline
    error: Optional[BaseException] = None  # what load would raise
    messages: int = 0  # live messages after a load
    pending: List[PendingToolOperation] = field(default_factory=list)
    # What the read-only replay gave (where it succeeded): the state and events a load would
    # hold. The viewers use it where there is no writer's lock to load with (Windows).
    replayed: Optional[Tuple[Any, Sequence[Any]]] = None
    notes: List[str] = field(default_factory=list)  # other things a load would do


def _failure(f: CoreFailure, path: str, size: int, torn: Optional[Torn]) -> Verdict:
    error = public_error(f, path)
    code = NOT_A_TRANSCRIPT if isinstance(error, NotATranscript) else WOULD_FAIL
    return Verdict(code, size, torn=torn, error=error)


def verdict(path: str) -> Verdict:
    """Load's verdict on `path`, read-only (see the module doc)."""
    fd = open_to_read(path)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return Verdict(NOT_A_TRANSCRIPT, 0, error=NotATranscript(f"{path} is not a regular file, so not a transcript"))
        size = st.st_size
        core = _backend.core
        try:
            kind, cut, line, excerpt = core.tail_check(fd, size)
        except CoreFailure as f:
            return _failure(f, path, size, None)
        torn = None
        if kind == "torn":
            torn = Torn(line, cut, size - cut, excerpt.decode("utf-8", "replace"))
        try:
            # Through the transcript's side index when one still describes it (only the
            # bytes after it are read); a big file gets one (in the cache, never beside it).
            state, events, _, _ = _index.replay(path, fd, cut if torn else size, st, use=True, write_ok=True)
        except CoreFailure as f:
            return _failure(f, path, size, torn)
    finally:
        os.close(fd)
    result = Verdict(WOULD_REPAIR if torn else CLEAN, size, torn=torn, adds_newline=kind == "no-newline")
    result.messages = len(state.ids)
    result.replayed = (state, events)
    result.pending = state.pending_operations()
    if os.path.lexists(os.path.realpath(path) + ".repair"):
        result.notes.append(f"a load deletes the leftover {os.path.realpath(path)}.repair (an interrupted repair)")
    if torn and (not st.st_mode & 0o222 or not os.access(os.path.realpath(path), os.W_OK)):  # as load decides
        result.notes.append("the file is read-only: a load refuses to repair it until it is writable (chmod u+w)")
    writer = lock_holder(st)
    if writer is not None:
        result.notes.append(
            f"a live writer (pid {writer}) holds it: a load now raises SessionLocked"
            + ("; the unfinished last line may be one it is still writing" if torn else "")
        )
    if torn and st.st_nlink > 1:
        result.notes.append(f"it has {st.st_nlink - 1} other hard link(s); they would keep the torn version")
    return result


def lock_holder(st: os.stat_result) -> Optional[int]:
    """The pid holding the writer's flock on this inode, read from /proc/locks (Linux)
    without taking any lock ourselves; None when unlocked or unknown."""
    if not hasattr(os, "major"):  # Windows: no device numbers, no /proc
        return None
    device = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as f:
            for row in f:
                fields = row.split()
                # "1: FLOCK  ADVISORY  WRITE 11852 fe:00:10015857 0 EOF"; blocked waiters start "->"
                if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5] == device and fields[4].isdigit():
                    return int(fields[4])
    except OSError:
        pass
    return None
