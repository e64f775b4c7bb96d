"""The ADK session service's reads and small files, independent of ADK itself.

* Reading a transcript from its end (``lines_backward``) and one line at an offset
  (``line_at``): what ``get_session(num_recent_events=k)`` and ``list_sessions`` read
  instead of the whole history.
* The sidecar beside each transcript (``Sidecar``): the size and identity of the
  transcript it describes, where the line holding the session's state is, the last
  update time, the last envelope's id and how many dispatched calls are unsettled. A
  cache only: rewritten in place after every append (one record of a fixed size with a
  checksum, so a reader that meets a rewrite half way knows it), trusted only while the
  transcript still has that size and identity; the transcript alone rebuilds it. (A side
  index of the transcript kept by the core, envelope offsets and a fold checkpoint, could
  answer the same questions; the service asks only `describes`, `state_at` and the rest.)
* A shared state file (``SharedState``): the state of an app or of a user, which every
  session of that app or user writes. Replaced whole (a temporary file renamed over it),
  under an exclusive lock on a lock file beside it, so a reader never sees half of one.
  Each key remembers the event that wrote it last (its stamp: timestamp and event id),
  so that the writes of an append a crash cut short can be redone without undoing a
  later one (``update(..., only_if_newer=True)``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from dataclasses import asdict, dataclass
from typing import Any, Dict, Iterator, List, Optional, Tuple

from .. import _files, _platform
from ..canonical import dumps, new_id, validate

_BLOCK = 1 << 16


class UnreadableLine(ValueError):
    """A line of a transcript the service wrote does not read as an envelope."""


def lines_backward(fd: int, end: int, block: int = _BLOCK) -> Iterator[Tuple[int, bytes]]:
    """(offset, line without its ``\\n``) of every complete line before byte `end`, the
    last first. Bytes after the last ``\\n`` before `end` (a line still being written)
    are not a line yet and are skipped. Reads only as far back as the caller iterates."""
    pos = end
    carry = b""
    complete = False
    while pos > 0:
        n = min(block, pos)
        pos -= n
        chunk = _platform.pread(fd, n, pos)
        if len(chunk) != n:
            raise OSError(f"the transcript shrank while it was read (at byte {pos})")
        data = chunk + carry
        if not complete:
            cut = data.rfind(b"\n")
            if cut < 0:
                carry = data
                block *= 2  # one long unfinished line: read it in ever larger steps
                continue
            data = data[:cut]
            complete = True
        parts = data.split(b"\n")
        carry = parts[0]
        if len(parts) == 1:
            block *= 2  # no line start in this block: a long line, read it in larger steps
            continue
        start = pos + len(carry) + 1
        found = []
        for part in parts[1:]:
            found.append((start, part))
            start += len(part) + 1
        yield from reversed(found)
    if complete:
        yield 0, carry


def lines_forward(fd: int, end: int, block: int = 1 << 20) -> Iterator[Tuple[int, bytes]]:
    """(offset, line without its ``\\n``) of every complete line before byte `end`, in order."""
    pos = 0
    pieces: List[bytes] = []  # the start of a line not ended yet (a long one: many blocks)
    start = 0
    while pos < end:
        chunk = _platform.pread(fd, min(block, end - pos), pos)
        if not chunk:
            break
        pos += len(chunk)
        if b"\n" not in chunk:
            pieces.append(chunk)
            continue
        parts = (b"".join(pieces) + chunk).split(b"\n")
        last = parts.pop()
        pieces = [last] if last else []
        for part in parts:
            yield start, part
            start += len(part) + 1


def line_at(fd: int, offset: int, end: int) -> bytes:
    """The line that starts at `offset` (without its ``\\n``), read up to `end` at most."""
    pieces: List[bytes] = []
    pos = offset
    step = 4096
    while pos < end:
        chunk = _platform.pread(fd, min(step, end - pos), pos)
        if not chunk:
            break
        cut = chunk.find(b"\n")
        if cut >= 0:
            pieces.append(chunk[:cut])
            return b"".join(pieces)
        pieces.append(chunk)
        pos += len(chunk)
        step = min(step * 2, 1 << 24)
    raise UnreadableLine(f"no whole line at byte {offset}")


def envelope(line: bytes, path: str, offset: int) -> Optional[Dict[str, Any]]:
    """The envelope a line holds; None for a blank line. A line that is not one is a
    clear error naming the file and the byte (the file was changed by something else)."""
    if not line.strip():
        return None
    try:
        value = json.loads(line)
    except ValueError as e:
        raise UnreadableLine(
            f"{path}: the line at byte {offset} is not JSON ({e}); "
            f"`llm-agent-session check {path}` says what a load would do"
        ) from None
    if not (isinstance(value, dict) and isinstance(value.get("type"), str) and isinstance(value.get("payload"), dict)):
        raise UnreadableLine(f"{path}: the line at byte {offset} is not a transcript envelope")
    return value


def read_json(path: str) -> Optional[Any]:
    """A small JSON file's value; None when it is missing or does not parse."""
    try:
        with open(path, "rb") as f:
            return json.loads(f.read())
    except (FileNotFoundError, NotADirectoryError, ValueError):
        return None


def replace_file(path: str, value: Any, *, fsync: bool) -> None:
    """Write `value` as JSON to `path`, atomically: a temporary file renamed over it."""
    validate(value, "state")
    data = dumps(value).encode("utf-8")
    tmp = _files.side_name(path, "", f".{new_id()}.tmp")
    fd = _files.open_fd(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _platform.O_NOFOLLOW, 0o600)
    try:
        try:
            _files.write_all(fd, data)
            if fsync:
                _platform.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    if fsync:
        _files.fsync_dir(path)


# A sidecar is one record of this many bytes, rewritten in place (a rename per append
# costs more than the append itself on some file systems).
SIDECAR_BYTES = 512


@dataclass
class Sidecar:
    """What the service keeps beside a transcript (see the module's docstring)."""

    size: int
    dev: int
    ino: int
    state_at: int  # the byte offset of the line holding the session's state
    updated: float  # the session's last_update_time
    marker: str  # the id of the transcript's last envelope
    pending: int  # dispatched tool operations without a settle

    def describes(self, st: os.stat_result) -> bool:
        """Is this the sidecar of the transcript as it is now (`st`: its stat)?"""
        return (st.st_size, st.st_dev, st.st_ino) == (self.size, self.dev, self.ino)

    @staticmethod
    def read(path: str) -> Optional["Sidecar"]:
        """The sidecar at `path`; None when there is none or it does not read whole (a
        read that met a rewrite half way is tried again)."""
        for _ in range(3):
            try:
                with open(path, "rb") as f:
                    data = f.read(SIDECAR_BYTES + 1)
            except (FileNotFoundError, NotADirectoryError):
                return None
            found = Sidecar._parse(data)
            if found is not None:
                return found
        return None

    @staticmethod
    def _parse(data: bytes) -> Optional["Sidecar"]:
        try:
            value = json.loads(data)
            if not isinstance(value, dict) or value.get("v") != 1:
                return None
            check = value.pop("check", None)
            if check != _check(value):
                return None
            return Sidecar(
                size=int(value["size"]), dev=int(value["dev"]), ino=int(value["ino"]),
                state_at=int(value["state-at"]), updated=float(value["updated"]),
                marker=str(value["marker"]), pending=int(value["pending"]),
            )
        except (KeyError, TypeError, ValueError):
            return None

    def write(self, fd: int) -> None:
        """Rewrite the record in place: one write of a fixed size, its own checksum inside."""
        fields: Dict[str, Any] = {"v": 1, **asdict(self)}
        fields["state-at"] = fields.pop("state_at")
        fields["check"] = _check(fields)
        data = dumps(fields).encode("utf-8")
        if len(data) >= SIDECAR_BYTES:
            raise ValueError(f"a sidecar record is over {SIDECAR_BYTES} bytes: {data[:80]!r}...")
        record = data + b" " * (SIDECAR_BYTES - 1 - len(data)) + b"\n"
        if os.pwrite(fd, record, 0) != len(record):
            raise OSError("short write of a sidecar record")

    @staticmethod
    def open(path: str) -> int:
        """The sidecar's descriptor for `write`."""
        return _files.open_fd(path, os.O_RDWR | os.O_CREAT | _platform.O_NOFOLLOW, 0o600)


def _check(fields: Dict[str, Any]) -> str:
    return hashlib.sha256(dumps(fields).encode("utf-8")).hexdigest()[:16]


Stamp = Tuple[float, str]


class SharedState:
    """The state of an app or of a user: a JSON file replaced whole, written under a lock."""

    def __init__(self, path: str, *, fsync: bool) -> None:
        self.path = path
        self._fsync = fsync

    def read(self) -> Tuple[Dict[str, Any], Dict[str, Stamp]]:
        """(state, stamps): the values and, for each key, the event that wrote it last."""
        value = read_json(self.path)
        if not isinstance(value, dict):
            if os.path.exists(self.path):
                raise UnreadableLine(f"{self.path} is not a state file of this library (it does not parse)")
            return {}, {}
        state = value.get("state")
        stamps = value.get("stamps")
        if not isinstance(state, dict) or not isinstance(stamps, dict):
            raise UnreadableLine(f"{self.path} is not a state file of this library")
        return state, {k: (float(v[0]), str(v[1])) for k, v in stamps.items()}

    def update(self, delta: Dict[str, Any], stamp: Stamp, *, only_if_newer: bool = False) -> None:
        """Set each key of `delta`. With `only_if_newer` (redoing an append a crash cut
        short), a key is left alone when the event that wrote it last is this one or a
        later one (by timestamp)."""
        if not delta:
            return
        _files.make_private_dirs(os.path.dirname(self.path))
        with self._locked():
            state, stamps = self.read()
            for key, value in delta.items():
                have = stamps.get(key)
                if only_if_newer and have is not None and (have[1] == stamp[1] or have[0] > stamp[0]):
                    continue
                state[key] = value
                stamps[key] = stamp
            replace_file(
                self.path,
                {"v": 1, "state": state, "stamps": {k: [t, i] for k, (t, i) in stamps.items()}},
                fsync=self._fsync,
            )

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        _platform.require_lock("the ADK session service's shared state")
        fd = _files.open_fd(self.path + ".lock", os.O_RDWR | os.O_CREAT | _platform.O_NOFOLLOW, 0o600)
        try:
            _platform.fcntl.flock(fd, _platform.fcntl.LOCK_EX)  # held for one short rewrite
            yield
        finally:
            os.close(fd)


def lock_is_free(path: str) -> bool:
    """Whether no session (in this or another process) holds the transcript's lock now."""
    try:
        fd = _files.open_to_read(path)
    except FileNotFoundError:
        return False
    try:
        try:
            _platform.lock_exclusive_nonblocking(fd)
        except OSError:
            return False
        return True
    finally:
        os.close(fd)  # releases the lock taken just to look
