"""The exceptions (the README's "Errors"), and the one place core failures become them.

Both cores (pure and native) report a failure as plain data, ``CoreFailure(kind,
line, offset, reason)``; :func:`public_error` turns it into the public exception
with the file name and advice, so both backends give the same class and text.
"""

from __future__ import annotations

from typing import Optional


class TranscriptError(Exception):
    """Base class of every error this library raises about a transcript."""


class NotATranscript(TranscriptError):
    """The file is empty, or its first line is not a ``session-meta`` envelope."""


class _Located(TranscriptError):
    """An error about a place in a file: ``path``, ``line`` (1-based), byte ``offset``, ``reason``."""

    def __init__(
        self,
        message: str,
        *,
        path: Optional[str] = None,
        line: Optional[int] = None,
        offset: Optional[int] = None,
        reason: Optional[str] = None,
    ) -> None:
        super().__init__(message)
        self.path = path
        self.line = line
        self.offset = offset
        self.reason = reason if reason is not None else message


class CorruptTranscript(_Located):
    """The file is damaged in a way no crash produces; ``line``/``offset`` say where."""


class UnsupportedVersion(_Located):
    """An envelope's ``v`` is not the integer 1."""


class DanglingReference(CorruptTranscript):
    """A compaction, elision or settle names what is not there.

    Raised before anything is written by ``append_*``; when met on load it is a
    :class:`CorruptTranscript` (it is one by inheritance) with line and offset.
    """


class SessionLocked(TranscriptError):
    """Another session, in this or another process, holds the transcript."""


class SessionClosed(TranscriptError):
    """The session was closed; open it again with ``Session.load``."""


class SessionBroken(TranscriptError):
    """The session can no longer append safely (failed rollback, file replaced, fork)."""


class TranscriptConflict(TranscriptError):
    """``sync_messages`` was given a list that contradicts the transcript."""


class ToolOperationError(TranscriptError):
    """A tool operation cannot be settled as asked."""


class UnknownToolOperation(DanglingReference, ToolOperationError):
    """A settle names an operation that is not pending (unknown or already settled)."""


class InvalidToolOutcome(ToolOperationError, ValueError):
    """An outcome outside ``completed``, ``failed`` and ``outcome-unknown``."""


class CoreFailure(Exception):
    """A failure reported by a core (pure or native) as plain data.

    ``kind`` is one of ``corrupt``, ``dangling``, ``unknown-op``, ``version``,
    ``not-a-transcript``; ``line`` is 1-based, ``offset`` the byte offset of the
    line's first byte. Never escapes the package: see :func:`public_error`.
    """

    def __init__(self, kind: str, line: int, offset: int, reason: str) -> None:
        super().__init__(kind, line, offset, reason)
        self.kind = kind
        self.line = line
        self.offset = offset
        self.reason = reason


_ADVICE = {
    "corrupt": (
        "The file was damaged in a way a crash does not produce (an edit, a bad merge, a "
        "second writer). Nothing was changed; `Session.salvage(path, out)` copies every "
        "line that still parses into a new file."
    ),
    "dangling": (
        "The line refers to something the transcript does not hold. Nothing was changed; "
        "`Session.salvage(path, out)` or `Session.fork` can recover the part before it."
    ),
    "unknown-op": (
        "The line settles a tool operation that is not pending. Nothing was changed; "
        "`Session.salvage(path, out)` can recover the other lines."
    ),
    "version": (
        "It was written by a newer version of llm-agent-session (or is not one of its "
        "files); upgrade the package to read it. Nothing was changed."
    ),
    "not-a-transcript": (
        "Transcripts start with a session-meta line written by `Session.create`; check the path."
    ),
}


_POWER_LOSS_ADVICE = (
    "The lines before it are intact. Nothing was changed; `Session.salvage(path, out)` copies "
    "every line that still parses into a new file."
)


def public_error(failure: CoreFailure, path: str) -> TranscriptError:
    """The public exception for a core failure met while reading ``path``."""
    where = f"{path}: line {failure.line} (byte {failure.offset})"
    if failure.kind == "not-a-transcript":
        if failure.line:
            text = f"{where}: {failure.reason}. {_ADVICE['not-a-transcript']}"
        else:
            text = f"{path}: {failure.reason}. {_ADVICE['not-a-transcript']}"
        return NotATranscript(text)
    cls = {
        "corrupt": CorruptTranscript,
        "dangling": DanglingReference,
        "unknown-op": UnknownToolOperation,
        "version": UnsupportedVersion,
    }.get(failure.kind, CorruptTranscript)
    advice = _ADVICE.get(failure.kind, _ADVICE["corrupt"])
    if "power loss" in failure.reason:
        advice = _POWER_LOSS_ADVICE
    return cls(
        f"{where}: {failure.reason}. {advice}",
        path=path,
        line=failure.line,
        offset=failure.offset,
        reason=failure.reason,
    )
