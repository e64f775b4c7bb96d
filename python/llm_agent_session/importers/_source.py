"""Reading a source transcript: its bytes (``.zst`` when zstandard is installed), then
its lines from an offset, each parsed leniently: a malformed line is reported with its
number and offset and never stops the read; an unfinished last line (a writer still
mid-line) is left for the next import instead of being called malformed."""

from __future__ import annotations

import json
from typing import Any, Dict, List, NamedTuple

from .. import _backend
from ..canonical import refuse_constant
from ._report import ImportReport, reason_of


class SourceError(Exception):
    """The source cannot be read at all (missing, unreadable, zstd without the module)."""


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


def read_source(path: str, report: ImportReport) -> bytes:
    """The source's bytes, decompressed for ``.zst``; SourceError with what to do if not possible."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as e:
        raise SourceError(f"cannot read {path}: {e.strerror or e}") from None
    if not path.endswith(".zst"):
        return raw
    try:
        import zstandard  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        raise SourceError(
            f"{path} is zstd-compressed and the zstandard module is not installed; "
            "pip install 'llm-agent-session[zstd]' (or zstandard), or decompress it with unzstd"
        ) from None
    try:
        stream = zstandard.ZstdDecompressor().decompressobj()
        data = bytes(stream.decompress(raw))
    except zstandard.ZstdError as e:
        raise SourceError(f"{path}: not zstd data, or damaged ({e}); decompress what you can with unzstd") from None
    if not stream.eof:
        report.warn(f"{path}: the zstd stream ends early (a torn file): imported what decompressed")
    return data


# One decoder for every line (json.loads with an argument builds a new one per call).
_decode = json.JSONDecoder(parse_constant=refuse_constant).decode


def _loads(raw: bytes) -> Any:
    return _decode(raw.decode("utf-8"))  # invalid UTF-8 is a UnicodeDecodeError, a ValueError


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
