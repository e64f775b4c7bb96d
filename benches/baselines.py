"""What users would otherwise do, and the physical limits, for the ratio table.

- ``json_lines`` / ``orjson_lines``: read the file and parse each line with stdlib
  ``json.loads`` / ``orjson.loads``, keeping the parsed objects (as a reader would).
- ``orjson_discard``: the same with ``orjson.loads``, each parsed object dropped at once
  (the stricter baseline of issue #17: no memory held, no allocator pressure).
- ``limit_read``: read the bytes (1 MiB ``readinto``) and count the newlines: no reader of
  a JSONL file can do less.
- ``limit_copy``: copy ``n`` bytes to a new file in the kernel (``copy_file_range``), fsync
  it: the least a verbatim repair or salvage can do.
- ``raw_append``: an ``os.write`` of an already serialised line to an ``O_APPEND`` fd.
"""

from __future__ import annotations

import json
import os
from typing import Any, List

try:
    import orjson
except ImportError:  # a bench-only dependency: pip install 'llm-agent-session[bench]'
    orjson = None

CHUNK = 1 << 20


def _parsed_lines(path: str, loads: Any, offset: int) -> List[Any]:
    out = []
    append = out.append
    with open(path, "rb") as fh:
        if offset:
            fh.seek(offset)
        for line in fh:
            if line.strip():
                append(loads(line))
    return out


def json_lines(path: str, offset: int = 0) -> List[Any]:
    return _parsed_lines(path, json.loads, offset)


def orjson_lines(path: str, offset: int = 0) -> List[Any]:
    return _parsed_lines(path, orjson.loads, offset)


def orjson_discard(path: str, offset: int = 0) -> int:
    loads = orjson.loads
    n = 0
    with open(path, "rb") as fh:
        if offset:
            fh.seek(offset)
        for line in fh:
            if line.strip():
                loads(line)
                n += 1
    return n


def limit_read(path: str, offset: int = 0) -> int:
    buf = bytearray(CHUNK)
    mv = memoryview(buf)
    count = 0
    fd = os.open(path, os.O_RDONLY)
    try:
        if offset:
            os.lseek(fd, offset, os.SEEK_SET)
        while True:
            n = os.readv(fd, [mv])
            if not n:
                break
            count += buf.count(b"\n", 0, n)
    finally:
        os.close(fd)
    return count


def limit_copy(src: str, dst: str, nbytes: int) -> None:
    fin = os.open(src, os.O_RDONLY)
    fout = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        left = nbytes
        copy_range = getattr(os, "copy_file_range", None)
        while left > 0:
            if copy_range is not None:
                n = copy_range(fin, fout, min(left, 1 << 30))
            else:  # pragma: no cover - not Linux
                data = os.read(fin, min(left, CHUNK))
                n = os.write(fout, data)
            if n <= 0:
                break
            left -= n
        os.fsync(fout)
    finally:
        os.close(fin)
        os.close(fout)


def limit_repair(src: str, good_prefix: int, tmp: str) -> int:
    """The least a torn-tail load can do: copy the good prefix, fsync, rename it over the
    original, then read the bytes it replays."""
    limit_copy(src, tmp, good_prefix)
    os.rename(tmp, src)
    dfd = os.open(os.path.dirname(os.path.abspath(src)), os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)
    return limit_read(src)
