"""What the command line tells a user to do next: always a command they can paste.

The library's own messages advise Python calls (``Session.salvage(path, out)``, "read
it with Session.peek"); a user at a shell needs ``llm-agent-session salvage FILE OUT``.
Errors with a place in the file are rebuilt from their parts (line, byte, reason); the
rest have the library's advice swapped for the command that does the same.
"""

from __future__ import annotations

import os
import re
import shlex
from typing import Callable, List, Optional, Tuple

from .. import CorruptTranscript, DanglingReference, NotATranscript, SessionLocked, UnsupportedVersion
from .output import CliError

PROG = "llm-agent-session"


def command(*words: str) -> str:
    """A command line a user can paste (file names quoted for the shell)."""
    return " ".join([PROG, *(shlex.quote(w) if w not in ("ID", "OUT") else w for w in words)])


def new_name(path: str, what: str) -> str:
    """A name for a new file beside `path`: ``run.jsonl`` -> ``run.salvaged.jsonl``."""
    stem, ext = os.path.splitext(path)
    return f"{stem}.{what}{ext or '.jsonl'}"


def salvage_hint(path: str) -> str:
    return f"{salvage_command(path)} copies every line that parses into a new file"


def fork_hint(path: str) -> str:
    return (
        f"{fork_command(path)} keeps everything up to and including the envelope ID "
        f"(`{command('show', '--raw', path)}` lists the ids)"
    )


def peek_hint(path: str) -> str:
    return f"`{command('peek', path)}`"


def recovery(error: BaseException, path: str) -> str:
    """What to run about a transcript `load` refuses."""
    if isinstance(error, UnsupportedVersion):
        return (
            "It was written by a newer version of llm-agent-session (or is not one of its files); "
            "upgrade the package to read it. Nothing was changed."
        )
    if isinstance(error, NotATranscript):
        return "Transcripts start with a session-meta line; check the path."
    if isinstance(error, DanglingReference):
        return f"Nothing was changed; {fork_hint(path)}, or {salvage_hint(path)}."
    return f"Nothing was changed; {salvage_hint(path)}, or {fork_hint(path)}."


def salvage_command(path: str) -> str:
    return f"`{command('salvage', path, new_name(path, 'salvaged'))}`"


def fork_command(path: str) -> str:
    return f"`{command('fork', path, new_name(path, 'fork'), '--through', 'ID')}`"


# The library's advice in Python terms, and the command that does the same (the
# library's sentence around it still reads right).
_REWRITES: List[Tuple["re.Pattern[str]", Callable[[str], str]]] = [
    (re.compile(r"`?Session\.salvage\(path, out\)`?"), salvage_command),
    (re.compile(r"`?Session\.fork(?:\([^)]*\))?`?"), fork_command),
    (re.compile(r"(?:read it )?(?:without opening it )?with `?Session\.peek`?"),
     lambda p: f"read it without opening it with {peek_hint(p)}"),
    (re.compile(r"\(see message_ids or events\)"), lambda p: f"(`{command('show', '--raw', p)}` lists every envelope id)"),
    (re.compile(r" written by `?Session\.create`?"), lambda p: ""),
    (re.compile(r"open it again with `?Session\.load`?"), lambda p: f"open it again (`{command('repair', p)}`)"),
    (re.compile(r"`?Session\.load`? the transcript again"), lambda p: f"`{command('repair', p)}`"),
]


def error_text(error: BaseException, path: str, copy: Optional[str] = None) -> str:
    """The library's error about `path` (read as `copy`, when a private copy was read),
    with a command to run instead of a Python call."""
    line = getattr(error, "line", None)
    if isinstance(error, (CorruptTranscript, UnsupportedVersion)) and line is not None:
        offset = getattr(error, "offset", None) or 0
        reason = str(getattr(error, "reason", "") or error)
        return f"{path}: line {line:,} (byte {offset:,}): {reason.rstrip('.')}. {recovery(error, path)}"
    if isinstance(error, OSError) and error.strerror and error.filename is not None:
        text = f"{error.filename}: {error.strerror}"
    else:
        text = str(error)
    if copy:
        text = text.replace(copy, path)
    for pattern, replacement in _REWRITES:
        text = pattern.sub(lambda _m: replacement(path), text)
    return text


def operation_failure(e: BaseException, path: str, out: Optional[str] = None) -> CliError:
    """The CliError for ``repair``, ``salvage`` or ``fork`` failing on `path` (or on the new file `out`)."""
    if isinstance(e, SessionLocked):
        return CliError(f"{error_text(e, path)} (stop the process that has it open, or wait for it to finish)", 1)
    if isinstance(e, NotATranscript):
        return CliError(error_text(e, path), 3)
    if isinstance(e, FileExistsError):
        return CliError(f"{e.filename or out or path}: already exists; it is never overwritten, name a new file", 1)
    return CliError(error_text(e, path), 1)
