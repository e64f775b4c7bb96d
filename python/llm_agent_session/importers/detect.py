"""Which importer reads a file: Claude Code's session lines or Codex's rollout lines, told
by the shape of its first lines, whatever the file is called or wherever it was copied.

    format_of("~/.claude/projects/-home-me-proj/1234.jsonl")   # "claude-code"
    format_of("rollout-2025-09-10T12-00-00-0199.jsonl.zst")    # "codex" (decompressed to look)
    format_of("notes.jsonl")                                   # None

A Claude Code line is an object whose ``type`` is one Claude Code writes (``user``,
``assistant``, ``system``, ``summary``, ``file-history-snapshot``, ...) and that carries
one of its bookkeeping keys (``uuid``, ``parentUuid``, ``sessionId``, ``leafUuid``,
``messageId``). A Codex line is ``{"timestamp", "type", "payload"}`` with a rollout's
``type`` (``session_meta``, ``response_item``, ...); the flat layout of early Codex starts
with ``{"id", "timestamp", ...}`` and goes on with items or ``record_type`` lines. The
first lines that decide it, within the first 64 KiB (or the first line, where it is
longer: up to 16 MiB), decide the file; a transcript of this library (``session-meta``
first) is neither. Reading is bounded and never blocks (a FIFO
is opened without waiting, and found to be nothing)."""

from __future__ import annotations

import json
import os
import stat
from typing import Any, Callable, List, Optional

from .._files import open_to_read
from . import FORMATS

# The formats, as CLAUDE_CODE and CODEX name them (not imported: a walk that
# looks at files needs neither importer).
CLAUDE_CODE, CODEX = FORMATS

#: How much of a file's start is looked at (decompressed, for ``.jsonl.zst``) ...
HEAD = 64 << 10
#: ... and how far it is read on where its first line is longer (a pasted image).
LONGEST = 16 << 20
#: How many lines of that start are looked at.
LINES = 16

_CLAUDE_CODE_TYPES = frozenset((
    "user", "assistant", "system", "summary", "file-history-snapshot", "progress", "queue-operation", "last-prompt",
    "attachment", "content-replacement", "ai-title", "custom-title", "agent-name", "pr-link",
))
_CLAUDE_CODE_KEYS = ("uuid", "parentUuid", "sessionId", "leafUuid", "messageId")
_CODEX_TYPES = frozenset(("session_meta", "response_item", "event_msg", "turn_context", "compacted"))
_CODEX_ITEMS = frozenset(("message", "reasoning", "function_call", "function_call_output", "custom_tool_call",
                          "custom_tool_call_output", "local_shell_call", "web_search_call"))


def format_of(path: str) -> Optional[str]:
    """``"claude-code"``, ``"codex"`` or None: which importer reads the file at `path`, by
    the shape of its first lines (see the module's doc). A ``.jsonl.zst`` file is looked at
    decompressed; without the zstandard module, one named ``rollout-*`` is taken for Codex
    (its import then says what to install). OSError where the file cannot be read."""
    if path.endswith(".jsonl.zst"):
        head = _zstd_head(path)
        if head is None:
            return CODEX if os.path.basename(path).startswith("rollout-") else None
    else:
        head = _head(path)
    return _format_of_head(head, len(head) >= HEAD)  # (a shorter head is the whole file)


def _head(path: str) -> bytes:
    fd = open_to_read(path)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return b""
        with os.fdopen(os.dup(fd), "rb") as raw:
            return _read_head(raw.read)
    finally:
        os.close(fd)


def _read_head(read: Callable[[int], bytes]) -> bytes:
    """HEAD bytes, or more where they hold no whole line: on to the first newline, up to LONGEST."""
    head = read(HEAD)
    while len(head) < LONGEST and b"\n" not in head.lstrip():
        more = read(min(len(head), LONGEST - len(head)))
        if not more:
            break
        head += more
    return head


def _zstd_head(path: str) -> Optional[bytes]:
    """The first decompressed bytes, as ``_read_head`` takes them; None where zstandard
    is not installed."""
    try:
        import zstandard  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        return None
    fd = open_to_read(path)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return b""
        with os.fdopen(os.dup(fd), "rb") as raw:
            try:
                with zstandard.ZstdDecompressor().stream_reader(raw) as reader:
                    return _read_head(lambda n: bytes(reader.read(n)))
            except zstandard.ZstdError:
                return b""
    finally:
        os.close(fd)


def _format_of_head(head: bytes, cut: bool) -> Optional[str]:
    """The format the first lines of `head` show (`cut`: the file goes on past it)."""
    lines = head.split(b"\n")
    if cut:
        lines = lines[:-1]  # the last one may be cut off
    objects: List[Any] = []
    for raw in lines:
        if len(objects) >= LINES:
            break
        if not raw.strip():
            continue
        try:
            objects.append(json.loads(raw))
        except ValueError:
            objects.append(None)  # a torn or broken line: the next ones may still tell
    for k, obj in enumerate(objects):
        found = _format_of_line(obj, objects[k + 1:] if k == 0 else None)
        if found is not None:
            return found
    return None


def _format_of_line(obj: Any, after_first: Optional[List[Any]]) -> Optional[str]:
    """The format one line shows; `after_first`: the lines after it, where it is the first
    (the flat Codex layout is known by its first line and those after it)."""
    if not isinstance(obj, dict):
        return None
    kind = obj.get("type")
    if kind == "session-meta":
        return None  # a transcript of this library
    if kind in _CODEX_TYPES and isinstance(obj.get("payload"), dict) and "timestamp" in obj:
        return CODEX
    if kind in _CLAUDE_CODE_TYPES and any(isinstance(obj.get(key), str) for key in _CLAUDE_CODE_KEYS):
        return CLAUDE_CODE
    if after_first is not None and _legacy_codex_header(obj):
        if any(isinstance(o, dict) and "payload" not in o and ("record_type" in o or o.get("type") in _CODEX_ITEMS)
               for o in after_first):
            return CODEX
    return None


def _legacy_codex_header(obj: dict) -> bool:  # type: ignore[type-arg]
    return "type" not in obj and "payload" not in obj and isinstance(obj.get("id"), str) and "timestamp" in obj
