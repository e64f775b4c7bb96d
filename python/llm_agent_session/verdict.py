"""Would ``Session.load`` take this file, and how: found without doing it.

Load repairs a torn tail before it replays, so loading even a private copy costs a copy
of the whole file (256 MB of TMPDIR for a 256 MB transcript). Instead :func:`verdict`
runs load's own two steps read-only on the file itself, through the same core: the tail
check (which only looks) and the replay over the bytes a repair would keep
(``[0, cut)``), through the side index as load's is. No lock is taken, nothing is
written beside the transcript (a big one's index goes to the cache), no extra disk is
used; the verdict, the error (class, line, byte offset) and the size of the repair are
exactly load's.

:func:`is_transcript` is the cheap look before it: does a file start as a transcript at
all (the shelf of the viewer and ``view FILE`` ask it of every ``*.jsonl`` file).

:class:`Kind` is the answer's one vocabulary, for every surface: ``check`` and ``peek``
(which turn its number into their exit code), the viewer's shelf and transcript page,
and the dataset's ``sessions.verdict`` column.
"""

from __future__ import annotations

import enum
import os
import stat
from dataclasses import dataclass, field
from typing import Any, List, Optional, Sequence, Tuple

from . import _backend, _index, _platform
from ._files import open_to_read
from ._load import repair_path_of
from ._peek import _first_line_error
from ._pure.lines import BLANK_BYTES
from .errors import CoreFailure, NotATranscript, public_error
from .messages import PendingToolOperation


@enum.unique
class Kind(enum.Enum):
    """What a load would do to a file. The value is the data's name (the dataset's
    ``sessions.verdict``); `label` is the words a person reads on the shelf and the
    transcript page; `said` is ``check``'s own sentence for it; `number` is the exit
    code ``check`` returns for it (``cli/exit_codes.py`` takes its numbers from here)."""

    CLEAN = "clean"
    WOULD_REPAIR = "torn-tail"
    WOULD_FAIL = "would-fail"
    NOT_A_TRANSCRIPT = "not-a-transcript"

    @property
    def label(self) -> str:
        return _LABELS[self][0]

    @property
    def said(self) -> str:
        return _LABELS[self][1]

    @property
    def number(self) -> int:
        return _LABELS[self][2]

    @property
    def loads(self) -> bool:
        """Whether a load succeeds (a torn tail is cut first)."""
        return self in (Kind.CLEAN, Kind.WOULD_REPAIR)


_LABELS = {
    Kind.CLEAN: ("clean", "loads clean", 0),
    Kind.WOULD_REPAIR: ("torn tail", "would repair", 4),
    Kind.WOULD_FAIL: ("would fail", "would fail", 5),
    Kind.NOT_A_TRANSCRIPT: ("not a transcript", "not a transcript", 3),
}


@dataclass
class Torn:
    """The torn last line a repair would remove: bytes [cut, size)."""

    line: int
    cut: int
    removed: int
    excerpt: str


@dataclass
class Verdict:
    kind: Kind
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
    kind = Kind.NOT_A_TRANSCRIPT if isinstance(error, NotATranscript) else Kind.WOULD_FAIL
    return Verdict(kind, size, torn=torn, error=error)


def verdict(path: str) -> Verdict:
    """Load's verdict on `path`, read-only (see the module doc)."""
    fd = open_to_read(path)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return Verdict(Kind.NOT_A_TRANSCRIPT, 0, error=NotATranscript(f"{path} is not a regular file, so not a transcript"))
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
    result = Verdict(Kind.WOULD_REPAIR if torn else Kind.CLEAN, size, torn=torn, adds_newline=kind == "no-newline")
    result.messages = len(state.ids)
    result.replayed = (state, events)
    result.pending = state.pending_operations()
    leftover = repair_path_of(path)
    if os.path.lexists(leftover):
        result.notes.append(f"a load deletes the leftover {leftover} (an interrupted repair)")
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


#: How much of a file ``is_transcript`` reads at most.
FIRST_LINE_LIMIT = 1 << 20


def is_transcript(path: str) -> bool:
    """Whether the file at `path` starts as a transcript: its first line that is not
    blank (blank lines are skipped on every read) is a ``session-meta`` envelope, as the
    core reads it. A cheap look, the first MiB at most, to tell transcripts from other
    files in a directory; :func:`verdict` says whether one loads. A first line longer
    than that MiB counts as a transcript where it starts as a JSON object, and a first
    MiB of blank lines counts too (the verdict then says what a load would make of it).
    OSError where the file cannot be read."""
    fd = open_to_read(path)
    try:
        head = _platform.pread(fd, FIRST_LINE_LIMIT, 0)
        body = head.lstrip(BLANK_BYTES + b"\n")
        if not body:  # empty, or only blank lines (or a first MiB of them: the verdict will say)
            return len(head) == FIRST_LINE_LIMIT
        newline = head.find(b"\n", len(head) - len(body))
        if newline < 0 and len(head) == FIRST_LINE_LIMIT:
            return body.startswith(b"{")  # too long to look at cheaply: the verdict will say
        end = len(head) if newline < 0 else newline + 1
        return _first_line_error(_backend.core.scan(fd, 0, end, True), end) is None
    finally:
        os.close(fd)


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
