"""Which histories hold secrets: transcripts, Claude Code and Codex session files
(``.jsonl.zst`` too, with the ``zstd`` extra) and a transcript's artifacts, each file read
once.

A file is read in blocks of whole lines; the core keeps the lines worth reading
(``prefilter.py``), and each of those is parsed and matched in full (``walk.py``): in a
transcript's envelope its payload, ids, references and digests left out; in any other
JSON line the whole value; a line that is not JSON (an artifact, a torn line), as text.
Nothing a scan answers holds a secret: a finding says its rule, where it is and its
fingerprint.
"""

from __future__ import annotations

import json
import os
import stat
from typing import Any, Callable, Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple

from .. import _backend
from .._pure.lines import ENVELOPE_KEYS
from .config import Fingerprints
from .match import Rules
from .prefilter import spec_of
from .redact import Finding, findings, structural
from .walk import sites

#: How much of a file is read at once (whole lines: a longer line is read whole).
BLOCK = 8 << 20

TRANSCRIPT, CLAUDE_CODE, CODEX, JSONL, TEXT = "transcript", "claude-code", "codex", "jsonl", "text"


class Located(NamedTuple):
    """A finding in a file: the line (1-based) and its byte offset, the envelope's id and
    type where the line is a transcript's envelope, and the finding (its path from the
    line's JSON value: ``payload...`` in an envelope)."""

    line: int
    offset: int
    envelope: Optional[str]
    type: Optional[str]
    finding: Finding


class FileScan(NamedTuple):
    """What a scan of one file found. ``error``: why it could not be read (then
    ``findings`` holds what was found before)."""

    path: str
    format: str
    findings: List[Located]
    lines: int
    bytes: int
    error: Optional[str] = None


def prefilter(rules: Rules) -> Any:
    """The running core's byte scan for `rules`, made once per core."""
    core = _backend.core
    cache: Dict[str, Any] = rules.__dict__.setdefault("_prefilters", {})
    made = cache.get(core.name)
    if made is None:
        made = cache[core.name] = core.secret_prefilter(spec_of(rules))
    return made


def line_findings(raw: bytes, fmt: str, rules: Rules, fingerprints: Fingerprints
                  ) -> Tuple[Optional[str], Optional[str], List[Finding]]:
    """One line's findings: (envelope id, envelope type, findings)."""
    if fmt != TEXT:
        try:
            value = json.loads(raw)
        except (ValueError, RecursionError):
            value = None
        else:
            if fmt == TRANSCRIPT and type(value) is dict and value.keys() == ENVELOPE_KEYS \
                    and type(value["payload"]) is dict and type(value["type"]) is str:
                type_ = value["type"]
                found = sites(value["payload"], rules, structural(type_), ("payload",))
                id_ = value["id"] if type(value["id"]) is str else None
                return id_, type_, findings(found, rules, fingerprints)
            return None, None, findings(sites(value, rules), rules, fingerprints)
    text = raw.decode("utf-8", "replace")
    return None, None, findings(sites(text, rules), rules, fingerprints)


def detect(first: bytes) -> str:
    """The format of a file from its first non-blank line."""
    try:
        value = json.loads(first)
    except (ValueError, RecursionError):
        return TEXT
    if type(value) is not dict:
        return JSONL
    if value.keys() == ENVELOPE_KEYS and value.get("type") == "session-meta":
        return TRANSCRIPT
    if "sessionId" in value or "parentUuid" in value or value.get("type") in ("summary", "file-history-snapshot"):
        return CLAUDE_CODE
    if value.get("type") in ("session_meta", "response_item", "event_msg", "turn_context") \
            or ("instructions" in value and "timestamp" in value):
        return CODEX
    return JSONL


def _blocks(path: str, between: Optional[Callable[[], None]] = None) -> Iterator[bytes]:
    """The file's bytes in blocks (decompressed for ``.zst``), `between` called before each read."""
    wait = between if between is not None else _go_on
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a regular file")
        with os.fdopen(fd, "rb", buffering=0) as fh:
            fd = -1
            if path.endswith(".zst"):
                try:
                    import zstandard  # type: ignore[import-not-found, unused-ignore]
                except ImportError:
                    raise OSError("a .zst file needs the zstandard module: pip install "
                                  "'llm-agent-session[zstd]' (or decompress it with unzstd)") from None
                reader = zstandard.ZstdDecompressor().stream_reader(fh)
                while True:
                    wait()
                    data = reader.read(BLOCK)
                    if not data:
                        return
                    yield data
            while True:
                wait()
                data = fh.read(BLOCK)
                if not data:
                    return
                yield data
    finally:
        if fd >= 0:
            os.close(fd)


def _go_on() -> None:
    pass


def scan_file(path: str, rules: Rules, fingerprints: Fingerprints, fmt: Optional[str] = None,
              between: Optional[Callable[[], None]] = None) -> FileScan:
    """Every secret in the file at `path`. `fmt`: read it as this format (``text`` for an
    artifact); by default the first line says. `between`: called before each block is
    read (a caller's chance to let more urgent work go first)."""
    keep = prefilter(rules)
    found: List[Located] = []
    line_no, offset, carry = 1, 0, b""
    size = 0
    try:
        for data in _blocks(path, between):
            size += len(data)
            buf = carry + data if carry else data
            cut = buf.rfind(b"\n") + 1
            if cut == 0:
                carry = buf
                continue
            whole, carry = buf[:cut], buf[cut:]
            if fmt is None:
                fmt = detect(_first_line(whole))
            line_no, offset = _block(whole, fmt, keep, rules, fingerprints, line_no, offset, found)
        if carry:
            if fmt is None:
                fmt = detect(_first_line(carry))
            line_no, offset = _block(carry, fmt, keep, rules, fingerprints, line_no, offset, found)
            line_no += 1
    except (OSError, EOFError) as e:
        return FileScan(path, fmt or TEXT, found, line_no - 1, size, _error_text(e))
    except Exception as e:  # a zstd stream that is damaged, say
        if type(e).__name__ != "ZstdError":
            raise
        return FileScan(path, fmt or TEXT, found, line_no - 1, size, f"not a readable zstd stream ({e})")
    return FileScan(path, fmt or TEXT, found, line_no - 1, size)


def _error_text(e: BaseException) -> str:
    if isinstance(e, OSError) and e.strerror:
        return e.strerror if e.filename is None else f"{e.strerror}"
    return str(e)


def _first_line(buf: bytes) -> bytes:
    for line in buf.split(b"\n", 64):
        if line.strip():
            return line
    return b""


def _block(buf: bytes, fmt: str, keep: Any, rules: Rules, fingerprints: Fingerprints, line_no: int, offset: int,
           found: List[Located]) -> Tuple[int, int]:
    """The findings of a block of whole lines (the last may lack its ``\\n``); the line
    number and offset of the line after it."""
    counted = 0
    for start, end in keep.lines(buf):
        line_no += buf.count(b"\n", counted, start)
        counted = start
        id_, type_, got = line_findings(buf[start:end], fmt, rules, fingerprints)
        for f in got:
            found.append(Located(line_no, offset + start, id_, type_, f))
    line_no += buf.count(b"\n", counted)
    return line_no, offset + len(buf)


def histories(paths: Sequence[str], on_error: Optional[Callable[[str, str], None]] = None
              ) -> Iterator[Tuple[str, Optional[str]]]:
    """The files to scan under `paths`, each with the format to read it as (None: its
    first line says): a file named is read whatever its name; in a directory, every
    ``*.jsonl``, ``*.jsonl.zst`` and what a transcript's ``<stem>.artifacts/`` holds (as
    text), in sorted order, symbolic links to directories not followed."""
    for top in paths:
        if not os.path.isdir(top):
            yield top, None
            continue
        for root, dirs, files in os.walk(top, onerror=None if on_error is None else
                                         (lambda e: on_error(e.filename or top, e.strerror or str(e)))):
            dirs.sort()
            artifacts = os.path.basename(root).endswith(".artifacts")
            for name in sorted(files):
                if artifacts:
                    yield os.path.join(root, name), TEXT
                elif name.endswith((".jsonl", ".jsonl.zst")):
                    yield os.path.join(root, name), None
