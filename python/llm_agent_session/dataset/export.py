"""``export(src, out)``: transcripts under SRC into the Parquet tables of OUT, incrementally.

A run compares each file under SRC with what the manifest recorded of it (size, mtime,
ctime, device, inode: a ``stat``, nothing read); only new and changed transcripts are read,
and only the buckets they (or transcripts gone from SRC) touch are rewritten (``build.py``),
then committed in one transaction (``commit.py``). A changed transcript is read whole again
and its rows replaced, whatever changed in it (a repair, a rewrite), unless it only grew in
a way that leaves every row written before as it is: then only its new bytes are read
(``grow.py``).
"""

from __future__ import annotations

import errno
import os
import socket
import stat as stat_module
import time
from dataclasses import dataclass
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union

from .. import _backend
from .._files import make_private_dirs, name_as_text
from ..errors import CoreFailure
from .build import BucketJob, run_jobs
from .buckets import published
from .commit import Staged, Transaction, claim
from .errors import DatasetError, NotADataset
from .grow import Amendment, Grown, amendments, read_growth
from .layout import bucket_key, remove_abandoned_staging, split_key, staging_dir
from .manifest import Exported, Manifest, Skipped, read_manifest
from .report import FAILED, REMOVED, SKIPPED, UNCHANGED, FileResult, Report
from .rows import CHUNK, NotATranscript, read_head
from .sources import Head, Source

PathLike = Union[str, "os.PathLike[str]"]
#: Why a transcript whose name is not UTF-8 (on Linux a name is any bytes) is not exported.
NAME_NOT_UTF8 = ("its name is not UTF-8, which sessions.path (a Parquet string) cannot hold: rename it to "
                 "export it")


# -- finding the files ------------------------------------------------------------------------


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _walk(root: str) -> Iterator[Tuple[str, Optional[os.stat_result], Optional[str]]]:
    """Every file under `root` (a file: itself): (path, its stat, or why it has none).
    Symbolic links to files are followed, to directories not (so no loop can hold the
    walk); names starting with ``.`` (the library's temporary files, ``.git``) and
    ``*.repair`` (an interrupted repair's copy) are passed over."""
    if not os.path.isdir(root):
        yield _stat(root)
        return
    stack = [root]
    while stack:
        directory = stack.pop()
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError as e:
            yield directory, None, f"cannot list it: {e.strerror}"
            continue
        subdirs = []
        for entry in entries:
            if entry.name.startswith(".") or entry.name.endswith(".repair"):
                continue
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                is_dir = False
            if is_dir:
                subdirs.append(entry.path)
            else:
                yield _stat(entry.path)
        stack.extend(reversed(subdirs))


def _stat(path: str) -> Tuple[str, Optional[os.stat_result], Optional[str]]:
    try:
        return path, os.stat(path), None
    except OSError as e:
        if os.path.islink(path) and e.errno in (errno.ELOOP, errno.ENOENT):
            return path, None, "a symbolic link that leads nowhere (a loop, or its target is gone)"
        return path, None, f"cannot stat it: {e.strerror}"


# -- the run -------------------------------------------------------------------------------------


def _check_paths(srcs: Sequence[str], out: str) -> None:
    for src in srcs:
        if not os.path.exists(src):
            raise DatasetError(f"{src}: no such file or directory")
        real_src, real_out = os.path.realpath(src), os.path.realpath(out)
        if _inside(real_out, real_src):
            raise DatasetError(f"OUT ({out}) is inside SRC ({src}): choose an OUT outside the transcripts")
        if _inside(real_src, real_out):
            raise DatasetError(f"SRC ({src}) is inside OUT ({out}): choose an OUT of its own")
    if os.path.exists(out) and not os.path.isdir(out):
        raise NotADataset(f"OUT ({out}) is a file: it must be a directory (new, or made by this command)")
    if name_as_text(out) != out:  # pyarrow and DuckDB take only UTF-8 paths (SRC's names may be any bytes)
        raise DatasetError(f"OUT ({name_as_text(out)}) has a name that is not UTF-8, which the Parquet writer "
                           "and DuckDB cannot take: choose an OUT whose path is UTF-8")


def export(src: Union[PathLike, Sequence[PathLike]], out: PathLike, *, jobs: int = 1, extras: bool = True,
           on_file: Optional[Callable[[FileResult, int, int], None]] = None,
           waiting: Optional[Callable[[], None]] = None, chunk: int = CHUNK) -> Report:
    """Export the transcripts under `src` (files or directories, searched recursively) into
    the dataset directory `out`; see ``docs/dataset.md``. ``jobs``: processes reading
    transcripts side by side. ``on_file(result, done, total)`` after each file;
    ``waiting()`` if another export holds OUT's lock when this one publishes."""
    started = time.perf_counter()
    srcs = [os.path.abspath(os.fspath(s)) for s in ([src] if isinstance(src, (str, os.PathLike)) else src)]
    out = os.path.abspath(os.fspath(out))
    _check_paths(srcs, out)
    make_private_dirs(out)
    claim(out)
    host = socket.gethostname()
    found, passed_over = _find(srcs, host)
    total = len(found) + len(passed_over)
    results: List[FileResult] = []

    def done(result: FileResult) -> None:
        results.append(result)
        if on_file is not None:
            on_file(result, len(results), total)

    for result in passed_over:  # reported like every other file: a directory that cannot be listed is named
        done(result)
    with staging_dir(out) as staging:
        remove_abandoned_staging(out)
        run = _Run(out, staging, read_manifest(out), host, extras, chunk, done)
        changed = _changed(run, found)
        seen = {s.key for s in found}
        removed = [k for k, e in run.snapshot.sources.items()
                   if e.host == host and k not in seen and any(_inside(e.path, r) for r in srcs)]
        transaction = Transaction(out, staging, run.snapshot)
        bucket_jobs, amended = _bucket_jobs(run, changed, removed, transaction)
        for key, r in run_jobs(bucket_jobs, jobs, done).items():
            transaction.stage(key, Staged(r.files, r.kept, amended.get(key, Amendment())))
            for source, entry in r.entries.items():
                transaction.record(source, entry)
        # A changed file that could not be read keeps its published rows (and its old entry:
        # the next run tries it again): nothing of it is recorded.
        for key in removed:
            done(FileResult(run.snapshot.sources[key].path, REMOVED))
            transaction.drop(key)
        if transaction.needed():
            transaction.commit(waiting)
    return Report(results, time.perf_counter() - started, out)


def _find(srcs: Sequence[str], host: str) -> Tuple[List[Source], List[FileResult]]:
    """The regular files under `srcs`, and what the walk could not list or stat, or will not read."""
    found: List[Source] = []
    passed_over: List[FileResult] = []
    for root in srcs:
        for path, st, why in _walk(root):
            if st is None:
                passed_over.append(FileResult(path, SKIPPED if why and why.startswith("a symbolic link") else FAILED,
                                              why))
            elif not stat_module.S_ISREG(st.st_mode):
                kind = "a directory (a symbolic link to one is not followed)" if stat_module.S_ISDIR(st.st_mode) else \
                    "not a regular file (a FIFO, a socket or a device)"
                passed_over.append(FileResult(path, SKIPPED, kind))
            elif name_as_text(path) != path:
                passed_over.append(FileResult(path, FAILED, NAME_NOT_UTF8))
            else:
                found.append(Source.of(path, host, st))
    return found, passed_over


@dataclass(frozen=True)
class _Run:
    """One export: where, the manifest as it read it, its settings, where each file's result goes."""

    out: str
    staging: str
    snapshot: Manifest
    host: str
    extras: bool
    chunk: int
    done: Callable[[FileResult], None]


def _changed(run: _Run, found: List[Source]) -> List[Source]:
    """The files of `found` not as the manifest recorded them (the others reported unchanged,
    or skipped again)."""
    changed: List[Source] = []
    for s in found:
        entry = run.snapshot.sources.get(s.key)
        if entry is not None and entry.stamp == s.stamp and (isinstance(entry, Skipped) or entry.extras == run.extras):
            run.done(FileResult(s.path, SKIPPED, entry.reason) if isinstance(entry, Skipped) else
                     FileResult(s.path, UNCHANGED))
        else:
            changed.append(s)
    return changed


def _bucket_jobs(run: _Run, changed: List[Source], removed: List[str], transaction: Transaction
                 ) -> Tuple[List[BucketJob], Dict[str, Amendment]]:
    """The buckets to build: those the changed transcripts go to (their first line read),
    those the changed and removed ones leave, the appendix of those that only grew; and
    what the grown ones change in each (``grow.amendments``). A changed file that is no
    transcript now is recorded skipped at once."""
    sources = run.snapshot.sources
    grown = _growths(run, changed)
    by_bucket: Dict[str, List[Tuple[Source, Head]]] = {}
    for s in changed:
        if s.key in grown:
            continue
        try:
            head = read_head(s)
        except NotATranscript as e:
            transaction.record(s.key, Skipped(s.stamp, s.path, run.host, str(e)))
            run.done(FileResult(s.path, SKIPPED, str(e)))
            continue
        except OSError as e:
            run.done(FileResult(s.path, FAILED, f"cannot read it: {e.strerror or e}"))
            continue
        by_bucket.setdefault(bucket_key(head.date, head.bucket), []).append((s, head))
    # Sources whose published rows go: changed (re-read now), removed, or now skipped.
    leaving = {s.key for s in changed} | set(removed)
    touched = dict.fromkeys(by_bucket)
    for key in leaving:
        entry = sources.get(key)
        touched.update(dict.fromkeys(entry.buckets if isinstance(entry, Exported) else []))
    touched.update(dict.fromkeys(g.appendix for g in grown.values()))
    amended = amendments(grown.values())
    bucket_jobs = []
    for key in touched:
        date, k = split_key(key)
        old = published(run.snapshot, key)
        keep = [s for s in old.sources if s not in leaving] if old else []
        bucket_jobs.append(BucketJob(run.out, run.staging, date, k, old, keep, by_bucket.get(key, []), run.extras,
                                     run.chunk, _backend.core.name, amended.get(key, Amendment())))
    return bucket_jobs, amended


def _growths(run: _Run, changed: List[Source]) -> Dict[str, Grown]:
    """The changed transcripts that only grew (``grow.py``), read as far as the checks go."""
    grown: Dict[str, Grown] = {}
    for s in changed:
        entry = run.snapshot.exported(s.key)
        if entry is None or entry.grow is None or entry.host != run.host:
            continue
        home = published(run.snapshot, entry.home)
        if home is None or s.key not in home.sources:
            continue
        try:
            growth = read_growth(s, entry, run.out, run.extras, run.chunk)
        except (OSError, ValueError, CoreFailure):
            growth = None  # it changed while it was read: exported whole, which decides
        if growth is not None:
            grown[s.key] = Grown(s, entry, growth)
    return grown


__all__ = ["export", "Report", "FileResult"]
