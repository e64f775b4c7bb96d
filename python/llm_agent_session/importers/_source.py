"""Reading a source transcript: its bytes (``.zst`` when zstandard is installed), read with
bounds, then its lines, each parsed leniently: a malformed line is reported with its
number and offset and never stops the read; an unfinished last line (a writer still
mid-line) is left for the next import instead of being called malformed.

The bounds keep one hostile or broken file from taking the import of a whole tree down
with it: only a regular file is read (a FIFO, a device or a symlink to one fails, and
the open never blocks), and a source whose bytes (decompressed) pass
``MAX_SOURCE_BYTES``, whose lines pass ``MAX_LINES``, or one of whose lines passes
``MAX_LINE_BYTES`` fails with a reason before anything is parsed."""

from __future__ import annotations

import json
import os
import stat
from typing import Any, Dict, List, NamedTuple

from .. import _backend
from .._files import open_to_read
from ..canonical import int_to_str, refuse_constant, str_to_int
from ._report import ImportReport, reason_of

MAX_SOURCE_BYTES = 1 << 30  # 1 GiB, decompressed: sessions are tens of MB; a zstd bomb is not
MAX_LINE_BYTES = 256 << 20  # 256 MiB: the longest real lines (an image, a tool's output) are a few MB
MAX_LINES = 10_000_000  # each line costs the reader a few dozen bytes, blank ones too
_ZSTD_STEP = 1 << 10  # compressed bytes fed at a time: zstd expands 1 KiB to at most ~32 MiB


class SourceError(Exception):
    """The source cannot be read at all (missing, unreadable, not a regular file, past a
    bound, zstd without the module)."""


class Line(NamedTuple):
    number: int  # 1-based, counted over the whole source
    offset: int  # byte offset of the line's first byte
    obj: Dict[str, Any]


class Parsed(NamedTuple):
    lines: List[Line]
    end: int  # bytes consumed: just past the last whole line (or the last parseable line)
    line_count: int  # lines consumed in total, from the start of the source
    # The native reader (``_native.SourceReader``), whose ``encode`` writes the strings it
    # read as they were in the source; None on the pure backend.
    reader: Any = None


def _size(n: int) -> str:
    return f"{n / (1 << 30):g} GiB" if n >= 1 << 30 else f"{n / (1 << 20):g} MiB" if n >= 1 << 20 else f"{n:,} bytes"


def _kind_of(mode: int) -> str:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory")):
        if test(mode):
            return name
    return "not a regular file"


def _too_big(path: str) -> SourceError:
    return SourceError(
        f"{path} holds more than {_size(MAX_SOURCE_BYTES)} (decompressed), the importers' bound: not imported "
        "(a damaged or hostile file?); if it is a real session, split it and import the parts"
    )


def _read_regular(path: str) -> bytes:
    """The bytes of the regular file at ``path`` (through symlinks), at most the bound."""
    try:
        fd = open_to_read(path)
    except OSError as e:
        raise SourceError(f"cannot read {path}: {e.strerror or e}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise SourceError(f"{path} is {_kind_of(st.st_mode)}, not a regular file: skipped")
        if st.st_size > MAX_SOURCE_BYTES:
            raise _too_big(path)
        chunks = []
        total = 0
        want = st.st_size + 1  # one read in the common case; a file still growing reads on
        while True:
            chunk = os.read(fd, max(want, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > MAX_SOURCE_BYTES:
                raise _too_big(path)
            want = 0
    except OSError as e:
        raise SourceError(f"cannot read {path}: {e.strerror or e}") from None
    finally:
        os.close(fd)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


def _decompress(path: str, raw: bytes, report: ImportReport) -> bytes:
    try:
        import zstandard  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        raise SourceError(
            f"{path} is zstd-compressed and the zstandard module is not installed; "
            "pip install 'llm-agent-session[zstd]' (or zstandard), or decompress it with unzstd"
        ) from None
    stream = zstandard.ZstdDecompressor().decompressobj()
    out: List[bytes] = []
    total = 0
    view = memoryview(raw)
    try:
        # Fed a little at a time, so that a bomb is stopped near the bound, not after it.
        for at in range(0, len(raw), _ZSTD_STEP):
            piece = stream.decompress(view[at: at + _ZSTD_STEP])
            if piece:
                out.append(piece)
                total += len(piece)
                if total > MAX_SOURCE_BYTES:
                    raise _too_big(path)
            if stream.eof:
                break
    except zstandard.ZstdError as e:
        raise SourceError(f"{path}: not zstd data, or damaged ({e}); decompress what you can with unzstd") from None
    if not stream.eof:
        report.warn(f"{path}: the zstd stream ends early (a torn file): imported what decompressed")
    return b"".join(out)


def _check_lines(path: str, data: bytes) -> None:
    """SourceError if ``data`` has more lines than ``MAX_LINES``, or one longer than ``MAX_LINE_BYTES``."""
    if data.count(b"\n") >= MAX_LINES:
        raise SourceError(f"{path} has more than {MAX_LINES:,} lines, the importers' bound: not imported "
                          "(a damaged or hostile file?); if it is a real session, split it and import the parts")
    if len(data) <= MAX_LINE_BYTES:
        return
    pos, number = 0, 1
    while pos < len(data):
        nl = data.find(b"\n", pos)
        stop = len(data) if nl < 0 else nl
        if stop - pos > MAX_LINE_BYTES:
            raise SourceError(
                f"{path}: line {number} (byte {pos:,}) is longer than {_size(MAX_LINE_BYTES)}, the importers' "
                "bound: not imported (a damaged or hostile file?)"
            )
        pos, number = stop + 1, number + 1


def read_source(path: str, report: ImportReport) -> bytes:
    """The source's bytes, decompressed for ``.zst``; SourceError, saying what to do, if not possible."""
    data = _read_regular(path)
    if path.endswith(".zst"):
        data = _decompress(path, data, report)
    _check_lines(path, data)
    return data


# One decoder for every line (json.loads with an argument builds a new one per call), and
# one for a line with an integer past CPython's 4,300-digit limit (its ``parse_int`` is a
# Python call per integer, so it reads only the lines the first one refuses for that).
_decode = json.JSONDecoder(parse_constant=refuse_constant).decode
_decode_big = json.JSONDecoder(parse_constant=refuse_constant, parse_int=str_to_int).decode


def _loads(raw: bytes) -> Any:
    text = raw.decode("utf-8")  # invalid UTF-8 is a UnicodeDecodeError, a ValueError
    try:
        return _decode(text)
    except ValueError as e:
        if "digits" not in str(e):
            raise
        return _decode_big(text)


_big_int_text = json.encoder._make_iterencode  # type: ignore[attr-defined]


def json_text(value: Any, sort_keys: bool = False, default: Any = None) -> str:
    """``json.dumps(value, ensure_ascii=False)``, integers past 4,300 digits included
    (``json.dumps`` refuses them: a source may hold one)."""
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=sort_keys, default=default)
    except ValueError as e:
        if "digits" not in str(e):
            raise
    encoder = json.JSONEncoder(ensure_ascii=False, sort_keys=sort_keys, default=default)
    chunks = _big_int_text(
        {}, encoder.default, json.encoder.encode_basestring, None, _float_text, ": ", ", ",
        sort_keys, False, True, _intstr=int_to_str,
    )(value, 0)
    return "".join(chunks)


def _float_text(f: float) -> str:
    """A float as ``json.dumps`` writes it (``Infinity`` for 1e999, which ``json`` reads)."""
    if f != f:
        return "NaN"
    if f in (float("inf"), float("-inf")):
        return "Infinity" if f > 0 else "-Infinity"
    return float.__repr__(f)


def _native_reader(data: bytes, offset: int) -> Any:
    """The native core's reader of the source (``_native.SourceReader``), on that backend:
    its ``lines`` hold each line's dict where the line is a plain JSON object, else None
    (then ``_loads`` reads it, so every verdict and error message is the reference's)."""
    if _backend.core.name != "native":
        return None
    from .. import _native

    return _native.SourceReader(data, offset)


def parse_lines(data: bytes, offset: int, first_line: int, report: ImportReport) -> Parsed:
    """Every whole line of ``data`` from ``offset`` (line numbers from ``first_line``)."""
    out: List[Line] = []
    reader = _native_reader(data, offset)
    # One entry per line, split as below: the native dicts, or None where _loads decides.
    built: List[Any] = reader.lines if reader is not None else []
    index = -1
    number = first_line - 1
    pos = offset
    size = len(data)
    end = offset
    while pos < size:
        nl = data.find(b"\n", pos)
        last = nl == -1
        stop = size if last else nl
        number += 1
        index += 1
        native = built[index] if built else None
        if native is not None:
            out.append(Line(number, pos, native))
        elif (chunk := data[pos:stop]).strip(b" \t\r"):
            try:
                obj = _loads(chunk)
                problem = None if isinstance(obj, dict) else f"a JSON {type(obj).__name__}, not an object"
            except (ValueError, RecursionError) as e:
                obj, problem = None, reason_of(e)
            if problem is not None:
                if last:
                    # A writer may be halfway through this line: leave it for the next import.
                    report["pending_tail"] = stop - pos
                    number -= 1
                    break
                report.malformed_line(number, pos, problem)
            else:
                out.append(Line(number, pos, obj))
        pos = stop + 1
        end = min(pos, size)
    report["lines"] = number - (first_line - 1)
    report["bytes"] = end - offset
    return Parsed(out, end, number, reader)
