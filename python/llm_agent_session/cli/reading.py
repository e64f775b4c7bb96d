"""Opening transcripts for looking at them: never change the file the user points at.

``Session.load`` may write (it repairs a torn tail, finishes a last line without its
newline, deletes a leftover ``.repair``) and takes the writer's lock. The viewers load
the real file only when none of that would happen and no writer holds it; otherwise
they load a private copy in a temporary directory and say so.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from typing import Any, Dict, Iterator, Optional, Tuple

from .. import NotATranscript, Session, SessionLocked, TranscriptError, _platform
from .._load import repair_path_of
from .advice import command, error_text
from .output import CliError, human_bytes
from .progress import Progress

_CHUNK = 1 << 16
_BLANK = b" \t\r\n"


def require_file(path: str) -> int:
    """The file's size, or a CliError that says what is wrong with the path."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        leftover = repair_path_of(path)
        hint = (
            f"; {leftover} exists and may be the only copy (an interrupted repair): inspect it"
            if os.path.lexists(leftover)
            else "; check the path"
        )
        raise CliError(f"{path}: no such file{hint}", 3) from None
    except OSError as e:
        raise CliError(f"{path}: cannot read it ({e.strerror})", 3) from None
    if os.path.isdir(path):
        raise CliError(f"{path}: is a directory, not a transcript file", 3)
    return st.st_size


def last_line(path: str) -> Tuple[bytes, bool]:
    """The last non-blank line of the file and whether a newline follows it (reads from the end)."""
    with open(path, "rb") as f:
        f.seek(0, os.SEEK_END)
        pos = f.tell()
        tail = b""
        # Skip trailing blanks, then read back to the newline before the last line.
        while pos > 0:
            step = min(_CHUNK, pos)
            pos -= step
            f.seek(pos)
            tail = f.read(step) + tail
            stripped = tail.rstrip(_BLANK)
            if stripped and (stripped.rfind(b"\n") != -1 or pos == 0):
                break
        stripped = tail.rstrip(_BLANK)
        start = stripped.rfind(b"\n") + 1
        return stripped[start:], tail[len(stripped):].find(b"\n") != -1


def load_would_write(path: str) -> Optional[str]:
    """Why ``Session.load`` would change this file (None if it would only read it)."""
    if os.path.lexists(repair_path_of(path)):
        return "a leftover .repair file beside it would be deleted"
    line, terminated = last_line(path)
    if not line:
        return None  # empty or blank: load refuses it without writing
    try:
        json.loads(line)
    except ValueError:
        return f"its last line ({len(line):,} bytes) is torn or unfinished and would be removed"
    if not terminated:
        return "its last line has no final newline, which would be added"
    return None


@dataclass
class Opened:
    session: Session
    note: Optional[str]  # set when what is shown comes from a copy, and why


@contextlib.contextmanager
def private_copy(path: str) -> Iterator[str]:
    """A copy of `path` in a new temporary directory, removed afterwards."""
    directory = tempfile.mkdtemp(prefix="llm-agent-session-cli-")
    try:
        copy = os.path.join(directory, os.path.basename(path) or "transcript.jsonl")
        try:
            shutil.copyfile(path, copy)
        except OSError as e:
            raise CliError(
                f"{path}: cannot make a private copy to read it without changing it "
                f"({e.strerror}); free space in {tempfile.gettempdir()} or set TMPDIR",
                1,
            ) from None
        yield copy
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _load(path: str, shown_as: str, index: bool = True) -> Session:
    size = os.path.getsize(path)
    try:
        with Progress(f"reading {shown_as} ({human_bytes(size)})"):
            return Session.load(path, index=index)
    except SessionLocked:
        raise
    except NotATranscript as e:
        raise CliError(error_text(e, shown_as, path), 3) from None
    except (TranscriptError, OSError) as e:
        text = error_text(e, shown_as, path)
        if not isinstance(e, TranscriptError) or getattr(e, "line", None) is None:
            text += f" (`{command('check', shown_as)}` says more)"
        raise CliError(text, 1) from None


def _replayed_without_lock(path: str) -> Opened:
    """Where there is no writer's lock to load with (Windows): the read-only replay that
    ``check`` runs, up to a torn last line, as a closed session (nothing opened to write)."""
    from ..verdict import Kind, verdict

    with Progress(f"reading {path} ({human_bytes(os.path.getsize(path))})"):
        v = verdict(path)
    if v.error is not None or v.replayed is None:
        code = Kind.NOT_A_TRANSCRIPT.number if v.kind is Kind.NOT_A_TRANSCRIPT else 1
        raise CliError(error_text(v.error, path, path) if v.error else f"{path}: it does not replay", code)
    state, events = v.replayed
    session = Session(path, None, state, events, [], False)  # type: ignore[arg-type]  # closed: read only
    note = None
    if v.torn is not None:
        note = (f"its unfinished last line ({v.torn.removed:,} bytes at byte {v.torn.cut:,}) is left out, "
                "as a load would remove it; the file itself was not touched")
    return Opened(session, note)


@contextlib.contextmanager
def open_read_only(path: str, index: bool = True) -> Iterator[Opened]:
    """The replayed transcript at `path`, loaded without writing to it (see module doc).
    ``index=False``: a file no side index is worth keeping for (a temporary copy)."""
    require_file(path)
    if not _platform.HAS_LOCK:
        yield _replayed_without_lock(path)
        return
    why = load_would_write(path)
    if why is None and not os.access(path, os.W_OK):
        why = "you cannot write to it, and loading opens it for appending"
    if why is None:
        try:
            session = _load(path, path, index)
        except SessionLocked:
            why = "a live writer holds it (SessionLocked)"
        else:
            try:
                yield Opened(session, None)
            finally:
                session.close()
            return
    with private_copy(path) as copy:
        session = _load(copy, path)
        try:
            yield Opened(session, f"read from a private copy, the file itself was not touched: {why}")
        finally:
            session.close()


def peek(path: str, **kw: Any) -> Dict[str, Any]:
    """``Session.peek`` with a progress line."""
    size = os.path.getsize(path) if os.path.exists(path) else 0
    with Progress(f"reading {path} ({human_bytes(size)})"):
        return Session.peek(path, **kw)


def peek_transcript(path: str, **kw: Any) -> Dict[str, Any]:
    """``peek`` of a file that must be a transcript: a CliError (exit 3) when peek finds none."""
    view = peek(path, **kw)
    if "error" in view:
        raise CliError(f"{path}: not a transcript: {view['error']}", 3)
    return view
