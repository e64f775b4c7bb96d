"""The native core (the extension ``_native``, built from ``rust/``) as a ``_core.Core``.

Its functions answer the ``_core`` named types themselves; ``replay`` and ``scan``
are given the path to reopen the file by where ``/proc/self/fd`` cannot serve.
Importing this fails with ``ImportError`` where the extension is not built, or is
built without file I/O (Windows: an empty module), so is no core.
"""

from __future__ import annotations

from typing import Optional, Tuple

from . import _platform
from ._core import AppendSize, EncodeEnvelope, HistoryRead, IndexedReplay, IndexTable, Replayed, Scanned
from ._native import append_size as _append_size
from ._native import copy_prefix, find_hits, find_lines, first_line_is_meta, identical_prefix, search_files, tail_check
from ._native import encode_envelope as _encode_envelope
from ._native import history as _history
from ._native import replay as _replay
from ._native import index_table as _index_table
from ._native import make_index as make_index
from ._native import replay_indexed as _replay_indexed
from ._native import scan as _scan
from ._native import dataset_pass as dataset_pass
from ._native import usage_pass as usage_pass
from ._native import secret_prefilter as secret_prefilter

__all__ = ["name", "tail_check", "copy_prefix", "replay", "replay_indexed", "make_index", "index_table", "scan", "history", "encode_envelope", "append_size",
           "identical_prefix", "find_lines", "find_hits", "dataset_pass", "usage_pass",
           "secret_prefilter", "first_line_is_meta", "search_files"]

name = "native"
encode_envelope: Optional[EncodeEnvelope] = _encode_envelope
append_size: Optional[AppendSize] = _append_size


def replay(fd: int, size: int, path: Optional[str] = None) -> Replayed:
    return _replay(fd, size, _platform.reopen_path(path))


def replay_indexed(
    fd: int,
    size: int,
    then: Tuple[int, int, int, int, int],
    now: Tuple[int, int, int, int, int],
    secret: Tuple[int, int],
    index_fd: Optional[int] = None,
    index_max: int = 0,
    write: bool = False,
    extend: bool = True,
    key: Optional[Tuple[int, int]] = None,
    path: Optional[str] = None,
) -> IndexedReplay:
    return _replay_indexed(
        fd, size, then, now, secret, index_fd, index_max, write, extend, key, _platform.reopen_path(path)
    )


def index_table(
    fd: int,
    size: int,
    then: Tuple[int, int, int, int, int],
    secret: Tuple[int, int],
    index_fd: int,
    index_max: int,
    want_survey: bool = False,
    path: Optional[str] = None,
) -> Optional[IndexTable]:
    return _index_table(fd, size, then, secret, index_fd, index_max, want_survey, _platform.reopen_path(path))


def scan(
    fd: int,
    start: int,
    size: int,
    final_line: bool = False,
    want_ids: bool = False,
    want_survey: bool = False,
    path: Optional[str] = None,
) -> Scanned:
    return _scan(fd, start, size, final_line, want_ids, want_survey, _platform.reopen_path(path))


def history(fd: int, size: int, keep_payloads: bool = True, path: Optional[str] = None) -> Optional[HistoryRead]:
    return _history(fd, size, keep_payloads, _platform.reopen_path(path))
