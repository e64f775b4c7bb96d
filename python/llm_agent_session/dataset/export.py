"""``export(src, out)``: transcripts under SRC into the Parquet tables of OUT, incrementally.

A run compares each file under SRC with what the manifest recorded of it (size, mtime,
ctime, device, inode: a ``stat``, nothing read); only new and changed transcripts are read,
and only the buckets they (or transcripts gone from SRC) touch are rewritten
(``write.py``). A changed transcript is read whole again: its rows are replaced, whatever
changed in it (an append, a repair, a rewrite).
"""

from __future__ import annotations

import errno
import os
import socket
import stat as stat_module
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Set, Tuple, Union

from .. import _backend
from .._files import make_private_dirs
from .batches import empty_batch, session_batch
from .rows import BUCKETS, CHUNK, Head, NotATranscript, Source, read_head, read_transcript
from .schema import TABLE_NAMES
from .write import (
    LOCK, MANIFEST, PLACEHOLDER, STAGING, BucketFiles, DatasetError, NotADataset, bucket_key, collect_garbage,
    complete_publish, copied, empty_manifest, out_lock, publish, published, read_manifest, rebuild,
    remove_abandoned_staging, remove_orphans, split_key, staging_dir, write_manifest,
)

PathLike = Union[str, "os.PathLike[str]"]
EXPORTED, UNCHANGED, REMOVED, FAILED, SKIPPED = "exported", "unchanged", "removed", "failed", "skipped"


@dataclass
class FileResult:
    """What became of one file: ``exported`` (its rows written; `verdict` says whether it
    loads), ``unchanged``, ``removed`` (gone from SRC: its rows deleted), ``skipped`` (not
    a transcript) or ``failed`` (it could not be read; its earlier rows, if any, stay)."""

    path: str
    status: str
    reason: Optional[str] = None
    verdict: Optional[str] = None
    rows: Dict[str, int] = field(default_factory=dict)
    bytes: int = 0


@dataclass
class Report:
    files: List[FileResult]
    seconds: float
    out: str

    def count(self, status: str) -> int:
        return sum(1 for f in self.files if f.status == status)

    @property
    def rows(self) -> Dict[str, int]:
        """Rows written this run, per table (for the transcripts exported)."""
        return {t: sum(f.rows.get(t, 0) for f in self.files) for t in TABLE_NAMES}

    @property
    def bytes_read(self) -> int:
        return sum(f.bytes for f in self.files if f.status == EXPORTED)

    @property
    def would_fail(self) -> int:
        return sum(1 for f in self.files if f.verdict == "would-fail")

    def summary(self) -> str:
        """The final line: files by what became of them, rows per table, MB/s."""
        files = ", ".join(f"{self.count(s)} {s}" for s in (EXPORTED, UNCHANGED, REMOVED, FAILED, SKIPPED))
        rows = ", ".join(f"{n:,} {t}" for t, n in self.rows.items())
        rate = self.bytes_read / 1e6 / self.seconds if self.seconds > 0 else 0.0
        note = f" ({self.would_fail} would not load: see sessions.verdict)" if self.would_fail else ""
        return (f"{files}{note}; rows written: {rows}; {self.bytes_read / 1e6:,.1f} MB read in "
                f"{self.seconds:.2f} s ({rate:,.0f} MB/s)")


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


# -- building one bucket (in this process or a worker) -----------------------------------------


@dataclass
class BucketJob:
    """A bucket to build: the published sources it keeps, the transcripts it gains."""

    out: str
    staging: str
    date: str
    k: int
    old: Optional[BucketFiles]  # as the manifest named it when the run started
    keep: List[str]
    new: List[Tuple[Source, Head]]
    extras: bool
    chunk: int
    backend: str


@dataclass
class BucketResult:
    files: Optional[BucketFiles]
    kept: Optional[List[str]]  # the published sources it copied; None: it could not read them
    results: List[FileResult]
    entries: Dict[str, Dict[str, Any]]  # source key -> its manifest entry (exported ones)


def build_bucket(job: BucketJob) -> BucketResult:
    """The candidate files of one bucket: its kept rows copied, its new transcripts read. A
    transcript that fails before its first row is left out (failed, or skipped); one that
    fails midway makes the bucket start again without it."""
    _backend.use(job.backend)
    failed: Dict[str, FileResult] = {}
    stale = False
    while True:
        results: List[FileResult] = []
        entries: Dict[str, Dict[str, Any]] = {}
        files = BucketFiles(job.staging, job.date, job.k)

        def rows() -> Iterator[Tuple[str, str, Any]]:
            nonlocal stale
            if job.old is not None and job.keep and not stale:
                try:
                    yield from copied(job.out, job.old, job.keep, job.old.rows)
                except FileNotFoundError:  # superseded and collected meanwhile: rebuilt under the lock
                    stale = True
                    raise _Restart() from None
            for source, head in job.new:
                if source.key in failed:
                    continue
                yield from _transcript_rows(source, head, job, results, entries, failed)

        try:
            files.write(rows())
        except _Restart:
            continue
        results.extend(failed.values())
        return BucketResult(files if files.sources else None, None if stale else job.keep, results, entries)


class _Restart(Exception):
    pass


def _transcript_rows(source: Source, head: Head, job: BucketJob, results: List[FileResult],
                     entries: Dict[str, Dict[str, Any]], failed: Dict[str, FileResult]
                     ) -> Iterator[Tuple[str, str, Any]]:
    try:
        t = read_transcript(source, head, extras=job.extras, chunk=job.chunk)
    except NotATranscript as e:
        results.append(FileResult(source.path, SKIPPED, str(e)))
        entries[source.key] = dict(source.stamp(), path=source.path, host=source.host, skipped=str(e))
        return
    except OSError as e:
        failed[source.key] = FileResult(source.path, FAILED, f"cannot read it: {e.strerror or e}")
        return
    started = False
    try:
        for table, batch in t.batches():
            started = True
            yield source.key, table, batch
    except (OSError, ValueError) as e:  # it changed under the read, or vanished
        failed[source.key] = FileResult(source.path, FAILED, f"it changed while it was read ({e}); run again")
        if started:
            raise _Restart() from None
        return
    yield source.key, "sessions", session_batch(t.session)
    rows = dict(t.counts)
    results.append(FileResult(source.path, EXPORTED, t.session["reason"], t.session["verdict"], rows, source.size))
    entries[source.key] = dict(source.stamp(), path=source.path, host=source.host, session_id=head.session_id,
                               date=head.date, bucket=head.bucket, rows=rows, verdict=t.session["verdict"],
                               extras=job.extras)


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


def _claim(out: str) -> None:
    """Make `out` a dataset directory (an empty manifest) unless it is one; refuse a
    directory that holds anything else. Under the lock, so that a second run starting
    while the first publishes for the first time sees the manifest, not a stranger's files."""
    def refuse_strangers() -> None:
        if any(not n.startswith(STAGING) and n != LOCK for n in os.listdir(out)):
            raise NotADataset(f"OUT ({out}) is a directory with other files in it: give a new or empty "
                               "directory, or one this command made")

    if os.path.exists(os.path.join(out, MANIFEST)):
        return
    refuse_strangers()  # before the lock file is made: nothing is written into a stranger's directory
    with out_lock(out):
        if os.path.exists(os.path.join(out, MANIFEST)):
            return
        refuse_strangers()
        with staging_dir(out) as staging:
            write_manifest(out, staging, empty_manifest())


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
    _claim(out)
    host = socket.gethostname()
    found: List[Source] = []
    results: List[FileResult] = []
    for root in srcs:
        for path, st, why in _walk(root):
            if st is None:
                results.append(FileResult(path, SKIPPED if why and why.startswith("a symbolic link") else FAILED, why))
            elif not stat_module.S_ISREG(st.st_mode):
                kind = "a directory (a symbolic link to one is not followed)" if stat_module.S_ISDIR(st.st_mode) else \
                    "not a regular file (a FIFO, a socket or a device)"
                results.append(FileResult(path, SKIPPED, kind))
            else:
                found.append(Source.of(path, host, st))
    total = len(found) + len(results)

    def done(result: FileResult) -> None:
        results.append(result)
        if on_file is not None:
            on_file(result, len(results), total)

    with staging_dir(out) as staging:
        remove_abandoned_staging(out)
        snapshot = read_manifest(out)
        sources = snapshot["sources"]
        changed: List[Source] = []
        for s in found:
            entry = sources.get(s.key)
            if entry is not None and all(entry.get(k) == v for k, v in s.stamp().items()) and (
                    "skipped" in entry or entry.get("extras") == extras):
                done(FileResult(s.path, SKIPPED if "skipped" in entry else UNCHANGED, entry.get("skipped")))
            else:
                changed.append(s)
        seen = {s.key for s in found}
        removed = [k for k, e in sources.items()
                   if e.get("host") == host and k not in seen and any(_inside(e["path"], r) for r in srcs)]
        jobs_by_bucket: Dict[str, List[Tuple[Source, Head]]] = {}
        entries: Dict[str, Dict[str, Any]] = {}
        for s in changed:
            try:
                head = read_head(s)
            except NotATranscript as e:
                entries[s.key] = dict(s.stamp(), path=s.path, host=host, skipped=str(e))
                done(FileResult(s.path, SKIPPED, str(e)))
                continue
            except OSError as e:
                done(FileResult(s.path, FAILED, f"cannot read it: {e.strerror or e}"))
                continue
            jobs_by_bucket.setdefault(bucket_key(head.date, head.bucket), []).append((s, head))
        # Sources whose published rows go: changed (re-read now), removed, or now skipped.
        leaving = {s.key for s in changed} | set(removed)
        touched = dict.fromkeys(jobs_by_bucket)
        for key in leaving:
            entry = sources.get(key)
            if entry is not None and "bucket" in entry:
                touched[bucket_key(entry["date"], entry["bucket"])] = None
        bucket_jobs = []
        for key in touched:
            date, k = split_key(key)
            old = published(snapshot, key)
            keep = [s for s in old.sources if s not in leaving] if old else []
            bucket_jobs.append(BucketJob(out, staging, date, k, old, keep, jobs_by_bucket.get(key, []), extras,
                                         chunk, _backend.core.name))
        built = _run_jobs(bucket_jobs, jobs, done)
        for r in built.values():
            entries.update(r.entries)
        for key in removed:
            done(FileResult(sources[key]["path"], REMOVED))
        exported = {s for s, e in entries.items() if "skipped" not in e}
        # A changed file that could not be read keeps its published rows (and its old entry:
        # the next run tries it again).
        leaving = set(entries) | set(removed)
        if (not built and not removed and not entries and snapshot["buckets"] and not snapshot.get("publishing")
                and not _expired(snapshot)):
            return Report(results, time.perf_counter() - started, out)
        with out_lock(out, waiting):
            _commit(out, staging, snapshot, bucket_jobs, built, entries, leaving, exported)
    return Report(results, time.perf_counter() - started, out)


def _expired(manifest: Dict[str, Any]) -> bool:
    from .write import GRACE

    return any(time.time() - when >= GRACE for _, when in manifest.get("retired", []))


def _run_jobs(bucket_jobs: List[BucketJob], jobs: int, done: Callable[[FileResult], None]
              ) -> Dict[str, BucketResult]:
    built: Dict[str, BucketResult] = {}
    if jobs <= 1 or len(bucket_jobs) <= 1:
        for job in bucket_jobs:
            r = build_bucket(job)
            built[bucket_key(job.date, job.k)] = r
            for f in r.results:
                done(f)
        return built
    # Processes: an export is CPU-bound, and the GIL would serialise threads. The platform's
    # way of starting them (as `import --jobs` does); pyarrow re-creates its thread pools
    # in a forked child.
    with ProcessPoolExecutor(min(jobs, len(bucket_jobs))) as pool:
        futures = {pool.submit(build_bucket, job): job for job in bucket_jobs}
        for future, job in futures.items():
            key = bucket_key(job.date, job.k)
            try:
                r = future.result()
            except Exception as e:  # noqa: BLE001 - a worker killed: its files fail, not the run
                r = BucketResult(None, None, [FileResult(s.path, FAILED, f"the worker reading it failed ({e})")
                                              for s, _ in job.new], {})
            built[key] = r
            for f in r.results:
                done(f)
    return built


def _commit(out: str, staging: str, snapshot: Dict[str, Any], bucket_jobs: List[BucketJob],
            built: Dict[str, BucketResult], entries: Dict[str, Dict[str, Any]], leaving: Set[str],
            exported: Set[str]) -> None:
    """Under OUT's lock: the manifest read again, the candidates checked against it (a bucket
    another run published meanwhile is rebuilt from both), the commit."""
    now = time.time()
    manifest = read_manifest(out)
    complete_publish(out, staging, manifest)
    remove_orphans(out, manifest)
    collect_garbage(out, manifest, now)
    sources = manifest["sources"]
    # Where the leaving sources' rows are now (another run may have moved them).
    affected = {bucket_key(j.date, j.k) for j in bucket_jobs}
    for key in leaving:
        e = sources.get(key)
        if e is not None and "bucket" in e:
            affected.add(bucket_key(e["date"], e["bucket"]))
    before = {key: published(manifest, key) for key in affected}  # read while the sources are still listed
    for key in leaving:
        sources.pop(key, None)
    sources.update(entries)
    ready: Dict[str, BucketFiles] = {}
    gone: List[str] = []
    for key in sorted(affected):
        date, k = split_key(key)
        now_published = before[key]
        keep = [s for s in now_published.sources if s not in leaving] if now_published else []
        r = built.get(key)
        ours = [s for s in (r.files.sources if r and r.files else []) if s in exported]
        was = snapshot["buckets"].get(key, {}).get("tag")
        is_now = manifest["buckets"].get(key, {}).get("tag")
        if r is not None and r.files is not None and r.kept == keep and was == is_now:
            ready[key] = r.files  # nobody published this bucket meanwhile: the candidate holds
        elif keep or ours:
            ready[key] = rebuild(out, staging, date, k, now_published, keep, r.files if r else None, ours)
        if key not in ready or not ready[key].sources:
            ready.pop(key, None)
            if key in manifest["buckets"]:
                gone.append(key)
    placeholder = bucket_key(*PLACEHOLDER)
    left = set(manifest["buckets"]) - set(gone) | set(ready)
    if not left:
        ready[placeholder] = _empty_bucket(staging)
    elif left != {placeholder} and placeholder in left and not _sources_of(manifest, ready, placeholder):
        ready.pop(placeholder, None)
        gone.append(placeholder)
    publish(out, staging, manifest, ready, gone, now)


def _sources_of(manifest: Dict[str, Any], ready: Dict[str, BucketFiles], key: str) -> List[str]:
    if key in ready:
        return ready[key].sources
    return list(manifest["buckets"].get(key, {}).get("sources", []))


def _empty_bucket(staging: str) -> BucketFiles:
    files = BucketFiles(staging, *PLACEHOLDER)
    files.write(())
    return files


__all__ = ["export", "Report", "FileResult", "BUCKETS", "empty_batch"]
