"""A file found under SRC (``Source``: where, and its stamp) and where its rows go (``Head``)."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass

from .layout import BUCKETS
from .manifest import Stamp


@dataclass(frozen=True)
class Source:
    """A file as found under SRC: where, and what a re-run compares to see it unchanged."""

    key: str  # host:path, the manifest's key
    path: str
    host: str
    size: int
    mtime_ns: int
    ctime_ns: int
    dev: int
    ino: int

    @classmethod
    def of(cls, path: str, host: str, st: os.stat_result) -> "Source":
        return cls(f"{host}:{path}", path, host, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_dev, st.st_ino)

    @property
    def stamp(self) -> Stamp:
        return Stamp(self.size, self.mtime_ns, self.ctime_ns, self.dev, self.ino)


@dataclass(frozen=True)
class Head:
    """Where a transcript's rows go: its session id, and the date its first line says."""

    session_id: str
    date: str
    bucket: int


def bucket_of(session_id: str) -> int:
    return int.from_bytes(hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).digest()[:4], "big") % BUCKETS


def session_id_of(source: Source) -> str:
    """A transcript file's id in the dataset: its host and path, hashed."""
    return hashlib.sha256(source.key.encode("utf-8", "surrogateescape")).hexdigest()[:32]
