"""The transcripts under the PATHs given: files as given, directories walked.

The rules are the viewer's shelf's (docs/viewer.md): a directory is walked for ``*.jsonl``
files (``.artifacts`` directories and links that lead out of the PATH are skipped); each
directory is walked once, known by its device and inode, so a link to one already walked
(a link back to an ancestor: a loop) is not followed; links are followed after the real
directories, so a file is listed under its own path rather than a link's; entries come in
name order, depth first. A file or directory that cannot be read is listed with the
reason. The walk opens no file: whether a ``*.jsonl`` file found in a directory is a
transcript (its first line that is not blank is a ``session-meta`` envelope) is for its
reader to look at, :func:`first_line_problem` from the bytes it reads first.
"""

from __future__ import annotations

import os
from typing import Iterator, List, NamedTuple, Optional, Sequence, Set, Tuple

from . import _backend, _platform
from ._peek import _first_line_error
from ._pure.lines import BLANK_BYTES

SUFFIX = ".jsonl"
#: How much of a file's start :func:`first_line_problem` looks at, at most.
FIRST_LINE_LIMIT = 1 << 20


class Walked(NamedTuple):
    """A file the walk found, or a file or directory it could not read (``problem``).

    ``root`` is the index of the PATH it was found under, ``relative`` its path below
    that PATH (``/``-separated; empty for the PATH itself), ``path`` the two joined, as
    the PATH was given. ``given`` is True for a file given as a PATH, which its reader
    takes whatever its name; one found in a directory is a ``*.jsonl`` file, a
    transcript only if its first line says so. (A named tuple: a walk makes one a file,
    and a frozen dataclass's were a tenth of a search's own work over 10,000 files.)"""

    root: int
    relative: str
    path: str
    given: bool = False
    problem: Optional[str] = None
    directory: bool = False


def walk(paths: Sequence[str]) -> Iterator[Walked]:
    """Every file under `paths`, in order (see the module's docstring), lazily: a
    directory is listed when the walk reaches it."""
    for index, given in enumerate(paths):
        try:
            is_dir = os.path.isdir(given)
            os.stat(given)
        except (OSError, ValueError) as e:
            yield Walked(index, "", given, problem=_why("cannot read it", e))
            continue
        if not is_dir:
            yield Walked(index, "", given, given=True)
            continue
        join = _join_posix if os.sep == "/" else _join
        for relative, problem, directory in _walk(os.path.realpath(given)):
            yield Walked(index, relative, join(given, relative) if relative else given, False, problem, directory)


def _join(given: str, relative: str) -> str:
    return os.path.join(given, *relative.split("/"))


def _join_posix(given: str, relative: str) -> str:
    """`relative` (``/``-separated) below `given`, as ``os.path.join`` writes it here."""
    if not given:
        return relative
    return given + relative if given.endswith("/") else given + "/" + relative


def _why(what: str, e: BaseException) -> str:
    reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
    return f"{what}: {reason}"


def _walk(top: str) -> Iterator[Tuple[str, Optional[str], bool]]:
    """``(relative, None, False)`` for each ``*.jsonl`` file under `top` (a real path),
    and ``(relative, why, is_dir)`` for each file or directory that cannot be read."""
    seen: Set[Tuple[int, int]] = set()
    links: List[Tuple[str, str]] = []  # (relative, its real path), followed after the tree

    def first_time(path: str) -> bool:
        st = os.stat(path)
        key = (st.st_dev, st.st_ino)
        if key in seen:
            return False
        seen.add(key)
        return True

    def tree(start_relative: str, start_real: str) -> Iterator[Tuple[str, Optional[str], bool]]:
        # Depth first, in name order, without recursion (a deep tree is fine). Each
        # directory is walked by its real path, so an entry that is not a link is inside
        # `top` without asking: only links are resolved.
        stack = [(start_relative, start_real)]
        while stack:
            relative, real = stack.pop()
            try:
                entries = sorted(os.scandir(real), key=lambda e: e.name)
            except OSError as e:
                yield relative or ".", _why("cannot list it", e), True
                continue
            subdirs = []
            for entry in entries:
                below = f"{relative}/{entry.name}" if relative else entry.name
                try:
                    if entry.is_dir():
                        if entry.name.endswith(".artifacts"):
                            continue
                        if entry.is_symlink():
                            target = _inside(entry.path, top)
                            if target is not None:
                                links.append((below, target))
                        elif first_time(entry.path):
                            subdirs.append((below, entry.path))
                    elif entry.name.endswith(SUFFIX) and entry.is_file():
                        if not entry.is_symlink() or _inside(entry.path, top) is not None:
                            yield below, None, False
                except OSError as e:
                    yield below, _why("cannot read it", e), entry.is_dir(follow_symlinks=False)
            stack.extend(reversed(subdirs))

    try:
        first_time(top)
    except OSError as e:
        yield "", _why("cannot read it", e), True
        return
    yield from tree("", top)
    while links:
        relative, real = links.pop(0)
        try:
            again = not first_time(real)
        except OSError as e:
            yield relative, _why("cannot read it", e), True
            continue
        if not again:
            yield from tree(relative, real)


def _inside(path: str, top: str) -> Optional[str]:
    """The real path of the link `path` when it leads inside `top` (not to `top` itself),
    else None."""
    real = os.path.realpath(path)
    if os.path.commonpath([real, top]) == top and real != top:
        return real
    return None


def first_line_problem(fd: int, head: bytes) -> Optional[str]:
    """Why the file open at `fd`, whose first bytes are `head`, is not a transcript (its
    first line that is not blank is not a ``session-meta`` envelope, as the core reads
    it), or None. The look the viewer's shelf makes (a first line longer than
    :data:`FIRST_LINE_LIMIT` counts where it starts as a JSON object: a reader will say
    more); `head` is read further, up to that limit, only where the first line needs it."""
    body = head.lstrip(BLANK_BYTES + b"\n")
    newline = head.find(b"\n", len(head) - len(body)) if body else -1
    if newline < 0 and len(head) < FIRST_LINE_LIMIT:
        more = _platform.pread(fd, FIRST_LINE_LIMIT, 0)
        if len(more) > len(head):
            head = more
            body = head.lstrip(BLANK_BYTES + b"\n")
            newline = head.find(b"\n", len(head) - len(body)) if body else -1
    if not body:  # a first MiB of blank lines counts (a reader will say more)
        if len(head) == FIRST_LINE_LIMIT:
            return None
        return "the file holds only blank lines" if head else "the file is empty"
    if newline < 0 and len(head) == FIRST_LINE_LIMIT:
        return None if body.startswith(b"{") else "the first line is not a session-meta envelope"
    if newline >= 0 and _backend.core.first_line_is_meta(head):  # as the scan below reads it,
        return None  # without building it
    end = len(head) if newline < 0 else newline + 1
    return _first_line_error(_backend.core.scan(fd, 0, end, True), end)
