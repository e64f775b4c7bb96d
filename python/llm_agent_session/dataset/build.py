"""Building one bucket's candidate files, in this process or a worker: the rows it keeps
from the published files, its new transcripts read whole, its grown ones' new rows.

A run builds each bucket it touches in its staging directory without a lock, from the
manifest as it read it (``export.py``); the commit (``commit.py``) checks each candidate
against the manifest as it is then.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import uuid
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from .. import _backend, _platform
from ..errors import CoreFailure
from .batches import empty_batch
from .buckets import BucketFiles, copied
from .grow import Amendment, Grown
from .layout import bucket_key, ids_path, write_new
from .manifest import Exported, Skipped, SourceEntry
from .report import EXPORTED, FAILED, SKIPPED, FileResult
from .rows import CLEAN, NotATranscript, read_transcript
from .schema import TABLE_NAMES
from .sessions import session_batch
from .sources import Head, Source


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
    # What transcripts that grew (``grow.py``) change in it: their sessions rows and
    # patches in their home bucket; their patches and new rows in the appendix.
    amendment: Amendment = field(default_factory=Amendment)
    redact: bool = True  # mask what the secret rules find

    @property
    def key(self) -> str:
        return bucket_key(self.date, self.k)


@dataclass
class BucketResult:
    files: Optional[BucketFiles]
    kept: Optional[List[str]]  # the published sources it copied; None: it could not read them
    results: List[FileResult]
    entries: Dict[str, SourceEntry]  # source key -> its manifest entry (exported ones)


def build_bucket(job: BucketJob) -> BucketResult:
    """The candidate files of one bucket: its kept rows copied, its new transcripts read. A
    transcript that fails before its first row is left out (failed, or skipped); one that
    fails midway makes the bucket start again without it."""
    _backend.use(job.backend)
    failed: Dict[str, FileResult] = {}
    stale = False
    amendment = job.amendment
    carried = job.keep + [k for k in amendment.sessions if job.old is not None and k in job.old.sources]
    while True:
        results: List[FileResult] = []
        entries: Dict[str, SourceEntry] = {}
        files = BucketFiles(job.staging, job.date, job.k)
        # Only sessions rows (and open operations' rows) replaced: every other table is the
        # published file, linked.
        linked = None
        written: Sequence[str] = TABLE_NAMES
        if job.old is not None and not stale and not job.new and not amendment.grown and \
                set(carried) == set(job.old.sources):
            linked = dataclasses.replace(job.old, directory=job.out)
            written = amendment.tables

        def rows() -> Iterator[Tuple[str, str, Any]]:
            nonlocal stale
            if job.old is not None and carried and not stale:
                try:
                    yield from amendment.applied(copied(job.out, job.old, carried, job.old.rows, written))
                except FileNotFoundError:  # superseded and collected meanwhile: rebuilt under the lock
                    stale = True
                    raise _Restart() from None
            for source, head in job.new:
                if source.key in failed:
                    continue
                yield from _transcript_rows(source, head, job, results, entries, failed)
            for grown in amendment.grown:
                if grown.source.key not in failed:
                    yield from _growth_rows(grown, job, failed)

        try:
            files.write(rows(), linked, [t for t in TABLE_NAMES if t not in written])
        except _Restart:
            continue
        except FileNotFoundError:
            if linked is None:
                raise
            stale = True  # the published files were collected meanwhile: rebuilt under the lock
            continue
        for grown in amendment.grown:
            source, growth = grown.source, grown.growth
            if source.key in failed:
                continue
            results.append(FileResult(source.path, EXPORTED, None, CLEAN, dict(growth.rows, sessions=1),
                                      growth.stop - growth.start, grown=True))
            state = dataclasses.replace(growth.state, ids=_write_ids(job.staging, grown.head, growth.ids))
            entries[source.key] = dataclasses.replace(
                grown.entry, stamp=source.stamp, path=source.path, host=source.host, appended=files.rows[source.key],
                verdict=CLEAN, extras=job.extras, grow=state)
        results.extend(failed.values())
        return BucketResult(files if files.sources else None, None if stale else job.keep, results, entries)


def _growth_rows(grown: Grown, job: BucketJob, failed: Dict[str, FileResult]) -> Iterator[Tuple[str, str, Any]]:
    """A grown transcript's rows in the appendix: those it had there (amended), then the new ones."""
    source = grown.source
    yield source.key, "sessions", empty_batch("sessions")  # listed even with no row here
    if job.old is not None and source.key in job.old.sources:
        try:
            yield from job.amendment.applied(copied(job.out, job.old, [source.key], job.old.rows))
        except FileNotFoundError:
            raise _Restart() from None
    try:
        for table, batch in grown.new_rows(job.extras, job.chunk):
            yield source.key, table, batch
    except (OSError, ValueError, CoreFailure) as e:
        failed[source.key] = FileResult(source.path, FAILED, f"it changed while it was read ({e}); run again")
        raise _Restart() from None


def _write_ids(staging: str, head: Head, ids: bytes) -> str:
    """A new id side file (``grow.py``) in the staging directory; its name. The publish
    fsyncs it with the bucket files, many at once."""
    name = f"{head.session_id}-{uuid.uuid4().hex[:16]}.ids"
    path = ids_path(staging, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    write_new(path, ids, sync=False)
    return name


class _Restart(Exception):
    pass


def _transcript_rows(source: Source, head: Head, job: BucketJob, results: List[FileResult],
                     entries: Dict[str, SourceEntry], failed: Dict[str, FileResult]
                     ) -> Iterator[Tuple[str, str, Any]]:
    try:
        t = read_transcript(source, head, extras=job.extras, chunk=job.chunk, redact=job.redact)
    except NotATranscript as e:
        results.append(FileResult(source.path, SKIPPED, str(e)))
        entries[source.key] = Skipped(source.stamp, source.path, source.host, str(e))
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
    results.append(FileResult(source.path, EXPORTED, t.session.reason, t.session.verdict, rows, source.size,
                              masked=t.masked or 0))
    grow = None if t.grow is None else dataclasses.replace(t.grow, ids=_write_ids(job.staging, head, t.ids))
    entries[source.key] = Exported(source.stamp, source.path, source.host, head.session_id, head.date, head.bucket,
                                   rows, t.session.verdict, job.extras, grow, redacted=t.masked)


def run_jobs(bucket_jobs: List[BucketJob], jobs: int, done: Callable[[FileResult], None]) -> Dict[str, BucketResult]:
    """Every bucket built, by key (`jobs` processes side by side); `done` after each file."""
    built: Dict[str, BucketResult] = {}
    if jobs <= 1 or len(bucket_jobs) <= 1:
        for job in bucket_jobs:
            r = build_bucket(job)
            built[job.key] = r
            for f in r.results:
                done(f)
        return built
    # Processes: an export is CPU-bound, and the GIL would serialise threads. The platform's
    # way of starting them (as `import --jobs` does); pyarrow re-creates its thread pools
    # in a forked child. Each ends with this process, even killed (_platform.die_with_parent).
    context = multiprocessing.get_context()
    parent = None if context.get_start_method() == "forkserver" else os.getpid()
    with ProcessPoolExecutor(min(jobs, len(bucket_jobs)), mp_context=context, initializer=_platform.die_with_parent,
                             initargs=(parent,)) as pool:
        futures = {pool.submit(build_bucket, job): job for job in bucket_jobs}
        for future, job in futures.items():
            try:
                r = future.result()
            except Exception as e:  # noqa: BLE001 - a worker killed: its files fail, not the run
                r = BucketResult(None, None, [FileResult(s.path, FAILED, f"the worker reading it failed ({e})")
                                              for s, _ in job.new], {})
            built[job.key] = r
            for f in r.results:
                done(f)
    return built
