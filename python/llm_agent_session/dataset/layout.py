"""What is where in OUT, and the places a run works in (its staging directory, the lock).

The layout (``docs/dataset.md`` says what each reader may rely on)::

    OUT/_dataset.json                                      the manifest: the commit point
    OUT/<table> -> _views/<table>/<n>                      what engines read (a symbolic link)
    OUT/_views/<table>/<n>/date=D/part-<k>-<tag>.parquet   view n: one hard link per bucket
    OUT/_versions/<table>/date=D/part-<k>-<tag>.parquet    every file, never changed once written
    OUT/_versions/_ids/<session>-<tag>.ids                 a grown transcript's id hashes (grow.py)
    OUT/.lock                                              taken around a publish
    OUT/.staging-<run>/                                    a run's work until it is published

A session's rows of a table live in its bucket's file (``date`` from the session-meta
line, which never changes, ``k`` from its id, one of ``BUCKETS``), and the rows of what it
grew by since it was last exported whole in the partition's appendix bucket (``k`` =
``APPENDIX``): at most 8 files per table and partition, however many transcripts.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable, Iterator, Optional, Tuple

from .. import _platform
from .._files import write_all

MANIFEST = "_dataset.json"
VERSIONS = "_versions"
VIEWS = "_views"
LOCK = ".lock"
STAGING = ".staging-"
#: Home buckets per partition: a session's rows of a table are in one of this many files
#: (and what it grew by in one more, the partition's appendix: 8 files at most).
BUCKETS = 7
#: The appendix bucket's number: after the home buckets.
APPENDIX = BUCKETS
IDS = os.path.join(VERSIONS, "_ids")
#: The bucket kept when there is no session at all, so every table directory holds a file.
PLACEHOLDER = ("1970-01-01", 0)


def bucket_key(date: str, k: int) -> str:
    return f"{date}/{k}"


def split_key(key: str) -> Tuple[str, int]:
    date, k = key.rsplit("/", 1)
    return date, int(k)


def version_name(table: str, date: str, k: int, tag: str) -> str:
    return os.path.join(VERSIONS, table, f"date={date}", f"part-{k}-{tag}.parquet")


def view_name(table: str, view: int) -> str:
    return os.path.join(VIEWS, table, str(view))


def ids_path(directory: str, name: str) -> str:
    """An id side file `name` in `directory` (a staging directory, or ``OUT/_versions``)."""
    return os.path.join(directory, "_ids", name)


# -- writing files --------------------------------------------------------------------------------


def write_new(path: str, data: bytes, sync: bool) -> None:
    """A new private file at `path` holding `data` (fsynced if `sync`)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _platform.O_CLOEXEC, 0o600)
    try:
        write_all(fd, data)
        if sync:
            _platform.fsync(fd)
    finally:
        os.close(fd)


def _fsync(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | _platform.O_CLOEXEC)
    try:
        _platform.fsync(fd)
    finally:
        os.close(fd)


def fsync_all(paths: Iterable[str]) -> None:
    """fsync every file or directory of `paths`, many at once: a file system commits its
    journal once for all the fsyncs that wait on it (300 files: 1.2 s one by one, 0.05 s
    32 at a time, here)."""
    paths = sorted(set(paths))
    if len(paths) <= 1:
        for p in paths:
            _fsync(p)
        return
    with ThreadPoolExecutor(min(32, len(paths))) as pool:
        list(pool.map(_fsync, paths))


# -- staging and the lock ---------------------------------------------------------------------


@contextlib.contextmanager
def staging_dir(out: str) -> Iterator[str]:
    """A new ``OUT/.staging-<run>/`` this run holds locked (so another run's clean-up leaves
    it alone), removed at the end, whatever happens."""
    path = os.path.join(out, STAGING + uuid.uuid4().hex)
    os.mkdir(path, 0o700)
    fd = os.open(os.path.join(path, LOCK), os.O_WRONLY | os.O_CREAT | _platform.O_CLOEXEC, 0o600)
    try:
        _platform.fcntl.flock(fd, _platform.fcntl.LOCK_EX)
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
        os.close(fd)


def remove_abandoned_staging(out: str) -> None:
    """Delete the staging directories of runs that are gone (killed): their lock is free."""
    for name in os.listdir(out):
        if not name.startswith(STAGING):
            continue
        path = os.path.join(out, name)
        try:
            fd = os.open(os.path.join(path, LOCK), os.O_RDONLY | _platform.O_CLOEXEC)
        except OSError:
            shutil.rmtree(path, ignore_errors=True)  # killed before it made its lock file
            continue
        try:
            _platform.fcntl.flock(fd, _platform.fcntl.LOCK_EX | _platform.fcntl.LOCK_NB)
        except OSError:
            continue  # a live run's
        finally:
            os.close(fd)
        shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def out_lock(out: str, waiting: Optional[Callable[[], None]] = None) -> Iterator[None]:
    """Hold ``OUT/.lock`` (flock); `waiting()` is called if another run holds it first."""
    _platform.require_lock("exporting a dataset")
    fd = os.open(os.path.join(out, LOCK), os.O_WRONLY | os.O_CREAT | _platform.O_CLOEXEC, 0o600)
    try:
        try:
            _platform.fcntl.flock(fd, _platform.fcntl.LOCK_EX | _platform.fcntl.LOCK_NB)
        except OSError:
            if waiting is not None:
                waiting()
            _platform.fcntl.flock(fd, _platform.fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
