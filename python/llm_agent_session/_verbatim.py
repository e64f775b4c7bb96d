"""What ``Session.salvage`` and ``Session.fork`` share: reading a transcript's lines
(one scan) and copying chosen ones, byte for byte, into a new file."""

from __future__ import annotations

import os
from typing import Callable, List, Sequence, Tuple

from . import _backend, _platform
from ._files import write_all
from ._core import Scanned, Span

COPY_CHUNK = 1 << 20


def read_source(path: str, final_line: bool) -> Tuple[int, int, Scanned]:
    """An open descriptor on `path`, its size, and the scan of its lines (the caller closes it)."""
    fd = os.open(path, os.O_RDONLY | _platform.O_CLOEXEC | _platform.O_BINARY)
    try:
        size = os.fstat(fd).st_size
        return fd, size, _backend.core.scan(fd, 0, size, final_line, True, path=path)
    except BaseException:
        os.close(fd)
        raise


def copy_lines(src: int, spans: Sequence[Span]) -> Callable[[int], None]:
    """A writer for publish_new: each span's bytes, verbatim, each followed by ``\\n``."""

    def write(dst: int) -> None:
        batch: List[bytes] = []
        batched = 0
        for _, off, length in spans:
            batch.append(_platform.pread(src, length, off))
            batch.append(b"\n")
            batched += length + 1
            if batched >= COPY_CHUNK:
                write_all(dst, b"".join(batch))
                batch, batched = [], 0
        if batch:
            write_all(dst, b"".join(batch))

    return write
