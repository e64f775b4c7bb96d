"""``scrub``: an existing transcript rewritten with its secrets masked, and the rewrite
recorded in the file itself.

Under the writer's lock (a session that holds the file makes it ``SessionLocked``),
after load's own tail check and repair, and only for a file that replays: every line is
copied to ``<path>.scrub`` (beside the real file, created exclusively, locked), a line
whose payload holds a secret written again with the secret masked (its digests too,
``redact.EnvelopeMasker``), every other line byte for byte; then one ``scrub`` envelope
(docs/FORMAT.md) saying how many secrets of which rules were masked. The copy is
flushed, replayed (it must load, or nothing is published), and renamed over the
transcript: killed at any moment, a scrub leaves the old file or the new one, never a
mix; a ``<path>.scrub`` a killed scrub left is removed by the next. Ids, envelope order
and every reference stay as they were, so the conversation, its pending operations and
grants replay as before, the masked spans apart. A file with nothing to mask is left as
it is (no record).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from typing import Dict, Iterator, List, NamedTuple, Optional, Tuple

from .. import __version__, _backend, _platform
from .._files import fsync_dir, open_fd, side_name, try_lock, write_all
from .._load import check_and_repair, open_locked, remove_leftover_repair
from .._pure.lines import decode_json
from ..canonical import dumps, envelope_line, new_id, now_ts
from ..errors import CoreFailure, public_error
from .policy import Policy
from .redact import EnvelopeMasker

#: The envelope type a scrub appends (an unknown type to readers that predate it).
SCRUB = "scrub"
#: What ``--keep-original`` names the file as it was, beside it.
KEPT_SUFFIX = ".unscrubbed"

_BLOCK = 8 << 20


class ScrubReport(NamedTuple):
    """What a scrub of `path` did: secrets masked (and per rule), lines written again,
    digests written anew, and where the original was kept (``keep_original``)."""

    path: str
    masked: int
    rules: Dict[str, int]
    lines: int
    digests: int
    kept: Optional[str]
    warnings: List[str]


def scrub_path(path: str) -> str:
    """Where a scrub of `path` writes its copy: ``<path>.scrub`` beside the real file (a
    symbolic link's target is what is scrubbed), short form where the name is too long."""
    return side_name(os.path.realpath(path), "", ".scrub")


def _lines(fd: int, size: int) -> Iterator[bytes]:
    """The lines of the first `size` bytes of `fd`, each with its ``\\n``."""
    at, carry = 0, b""
    while at < size:
        data = os.pread(fd, min(_BLOCK, size - at), at)
        if not data:
            break
        at += len(data)
        buf = carry + data if carry else data
        cut = buf.rfind(b"\n") + 1
        carry = buf[cut:]
        start = 0
        while start < cut:
            nl = buf.index(b"\n", start) + 1
            yield buf[start:nl]
            start = nl
    if carry:
        yield carry


def _copy(src: int, size: int, dst: int, policy: Policy) -> Tuple[int, EnvelopeMasker]:
    """Every line of `src` to `dst`, masked where it holds a secret; the number of lines
    written again, and the masker (its counts)."""
    writer = policy.writer()
    masker = writer.masker
    out: List[bytes] = []
    pending, changed = 0, 0
    for raw in _lines(src, size):
        line = raw[:-1] if raw.endswith(b"\n") else raw
        written = raw
        if line.strip(b" \t\r") and writer.may_change(line):
            value = decode_json(line, 0)
            payload, type_ = value["payload"], value["type"]
            new = masker.payload(type_, payload)
            if new is not None:
                written = envelope_line(value["id"], type_, value["ts"], dumps(new))
                changed += 1
        out.append(written)
        pending += len(written)
        if pending >= _BLOCK:
            write_all(dst, b"".join(out))
            out, pending = [], 0
    write_all(dst, b"".join(out))
    return changed, masker


def scrub_file(path: str, policy: Optional[Policy] = None, *, keep_original: bool = False) -> ScrubReport:
    """Mask every secret `policy` finds in the transcript at `path` (see the module's
    docstring). `keep_original`: the file as it was stays beside it as
    ``<path>.unscrubbed`` (a second name for it, made just before the rename).

    Raises what ``Session.load`` raises for a file it cannot open (FileNotFoundError,
    NotATranscript, CorruptTranscript, SessionLocked, ...): nothing is changed then;
    FileExistsError when ``keep_original`` and ``<path>.unscrubbed`` is another file.
    """
    _platform.require_lock("scrub")
    path = os.fspath(path)
    policy = policy if policy is not None else Policy()
    kept = os.path.realpath(path) + KEPT_SUFFIX if keep_original else None
    fd = open_locked(path)
    warnings: List[str] = []
    try:
        remove_leftover_repair(path, warnings)
        fd, size = check_and_repair(path, fd, warnings)
        try:
            _backend.core.replay(fd, size, path=path)
        except CoreFailure as f:
            raise public_error(f, path) from None
        return _scrub_locked(path, fd, size, policy, kept, warnings)
    finally:
        os.close(fd)


def _scrub_locked(path: str, fd: int, size: int, policy: Policy, kept: Optional[str],
                  warnings: List[str]) -> ScrubReport:
    real = os.path.realpath(path)
    copy = scrub_path(path)
    with contextlib.suppress(FileNotFoundError):
        if stat.S_ISDIR(os.lstat(copy).st_mode):
            raise IsADirectoryError(errno.EISDIR, f"{copy} is a directory, not a scrub's copy; move it away", copy)
        os.unlink(copy)  # what a killed scrub left: the original is intact
    if kept is not None and os.path.lexists(kept) and not _same_file(kept, fd):
        raise FileExistsError(errno.EEXIST, "the original would be kept there, but another file is there; "
                              "move it away or scrub without keeping the original", kept)
    mode = stat.S_IMODE(os.fstat(fd).st_mode)
    out = open_fd(copy, os.O_RDWR | os.O_CREAT | os.O_EXCL | _platform.O_NOFOLLOW, mode)
    published = False
    try:
        if hasattr(os, "fchmod"):
            os.fchmod(out, mode)
        try_lock(out, copy)
        changed, masker = _copy(fd, size, out, policy)
        counts, digests = dict(masker.counts), masker.digests
        if not changed:
            return ScrubReport(path, 0, {}, 0, 0, None, warnings)
        masked = sum(counts.values())
        record = {"masked": masked, "rules": counts, "lines": changed, "digests": digests,
                  "by": f"llm-agent-session {__version__}"}
        write_all(out, envelope_line(new_id(), SCRUB, now_ts(), dumps(record)))
        _platform.fsync(out)
        end = os.fstat(out).st_size
        try:
            _backend.core.replay(out, end, path=copy)
        except CoreFailure as f:  # a bug: the original stays as it was
            raise RuntimeError(f"the scrubbed copy of {path} does not load ({public_error(f, copy)}); "
                               "the transcript was left as it was; please report this") from None
        if kept is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(kept)  # the same file, from a scrub killed after keeping it
            os.link(real, kept)
        os.rename(copy, real)
        published = True
        fsync_dir(real)
        return ScrubReport(path, masked, counts, changed, digests, kept, warnings)
    finally:
        os.close(out)
        if not published:
            with contextlib.suppress(OSError):
                os.unlink(copy)


def _same_file(path: str, fd: int) -> bool:
    st, mine = os.stat(path), os.fstat(fd)
    return (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino)


def transcripts_under(directory: str) -> List[str]:
    """The ``*.jsonl`` files under `directory`, sorted, symbolic links to directories
    not followed (what ``scrub DIR`` scrubs one by one)."""
    out: List[str] = []
    for root, dirs, files in os.walk(directory):
        dirs.sort()
        out.extend(os.path.join(root, n) for n in sorted(files) if n.endswith(".jsonl"))
    return out
