"""``export(src, out)``: transcripts under SRC into the Parquet tables of OUT, incrementally.

A run compares each file under SRC with what the manifest recorded of it (size, mtime,
ctime, device, inode: a ``stat``, nothing read); only new and changed transcripts are read,
and only the buckets they (or transcripts gone from SRC) touch are rewritten
(``write.py``). A changed transcript is read whole again and its rows replaced, whatever
changed in it (a repair, a rewrite), unless it only grew in a way that leaves every row
written before as it is: then only its new bytes are read (``grow.py``).
"""

from __future__ import annotations

import dataclasses
import errno
import multiprocessing
import os
import socket
import stat as stat_module
import time
import uuid
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Set, Tuple, Union

from .. import _backend, _platform
from .._files import make_private_dirs, name_as_text
from ..errors import CoreFailure
from .batches import empty_batch, session_batch
from .errors import DatasetError, NotADataset
from .grow import Growth, growth_batches, read_growth
from .layout import (
    APPENDIX, BUCKETS, IDS, LOCK, MANIFEST, PLACEHOLDER, STAGING, bucket_key, ids_path, out_lock, remove_abandoned_staging,
    split_key, staging_dir, write_new,
)
from .manifest import Exported, Manifest, SessionRow, Skipped, SourceEntry, ids_name, read_manifest, write_manifest
from .rows import CHUNK, CLEAN, NotATranscript, read_head, read_transcript
from .schema import TABLE_NAMES
from .sources import Head, Source
from .write import (
    GRACE, BucketFiles, collect_garbage, complete_publish, copied, publish, published, rebuild, remove_orphans, retire,
)

PathLike = Union[str, "os.PathLike[str]"]
#: Why a transcript whose name is not UTF-8 (on Linux a name is any bytes) is not exported.
NAME_NOT_UTF8 = ("its name is not UTF-8, which sessions.path (a Parquet string) cannot hold: rename it to "
                 "export it")
EXPORTED, UNCHANGED, REMOVED, FAILED, SKIPPED = "exported", "unchanged", "removed", "failed", "skipped"


@dataclass
class FileResult:
    """What became of one file: ``exported`` (its rows written; `verdict` says whether it
    loads; `grown`: only the bytes it grew by were read, their rows added), ``unchanged``,
    ``removed`` (gone from SRC: its rows deleted), ``skipped`` (not a transcript) or
    ``failed`` (it could not be read, or its name is not UTF-8; its earlier rows, if any,
    stay). `path` is the name as found, to open (a name that is not UTF-8 holds lone
    surrogates, as ``os.fsdecode`` makes them; the command line writes it with
    ``_files.name_as_text``)."""

    path: str
    status: str
    reason: Optional[str] = None
    verdict: Optional[str] = None
    rows: Dict[str, int] = field(default_factory=dict)
    bytes: int = 0
    grown: bool = False


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
        grown = sum(1 for f in self.files if f.grown)
        if grown:
            note += f" ({grown} read only where {'it' if grown == 1 else 'they'} grew)"
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
    # Transcripts that grew (``grow.py``): in their home bucket, the sessions row to put in
    # place of the published one; in the appendix bucket, (source, head, old entry, growth).
    substitute: Dict[str, SessionRow] = field(default_factory=dict)
    grown: List[Tuple[Source, Head, Exported, Growth]] = field(default_factory=list)
    # In their home bucket: the open operations' rows a grown transcript's new lines change.
    patches: Dict[str, Dict[str, Dict[str, Any]]] = field(default_factory=dict)


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
    carried = job.keep + [k for k in job.substitute if job.old is not None and k in job.old.sources]
    while True:
        results: List[FileResult] = []
        entries: Dict[str, SourceEntry] = {}
        files = BucketFiles(job.staging, job.date, job.k)
        # Only sessions rows (and open operations' rows) replaced: every other table is the
        # published file, linked.
        linked = None
        written: Sequence[str] = TABLE_NAMES
        if job.old is not None and not stale and not job.new and not job.grown and set(carried) == set(job.old.sources):
            linked = dataclasses.replace(job.old, directory=job.out)
            written = ("sessions", "tool_calls") if job.patches else ("sessions",)

        def rows() -> Iterator[Tuple[str, str, Any]]:
            nonlocal stale
            if job.old is not None and carried and not stale:
                substitute = {k: session_batch(row) for k, row in job.substitute.items()}
                try:
                    yield from copied(job.out, job.old, carried, job.old.rows, substitute, written, job.patches)
                except FileNotFoundError:  # superseded and collected meanwhile: rebuilt under the lock
                    stale = True
                    raise _Restart() from None
            for source, head in job.new:
                if source.key in failed:
                    continue
                yield from _transcript_rows(source, head, job, results, entries, failed)
            for source, head, entry, growth in job.grown:
                if source.key not in failed:
                    yield from _growth_rows(source, head, entry, growth, job, failed)

        try:
            files.write(rows(), linked, [t for t in TABLE_NAMES if t not in written])
        except _Restart:
            continue
        except FileNotFoundError:
            if linked is None:
                raise
            stale = True  # the published files were collected meanwhile: rebuilt under the lock
            continue
        for source, head, entry, growth in job.grown:
            if source.key in failed:
                continue
            results.append(FileResult(source.path, EXPORTED, None, CLEAN, dict(growth.rows, sessions=1),
                                      growth.stop - growth.start, grown=True))
            state = dataclasses.replace(growth.state, ids=_write_ids(job.staging, head, growth.ids))
            entries[source.key] = dataclasses.replace(
                entry, stamp=source.stamp, path=source.path, host=source.host, appended=files.rows[source.key],
                verdict=CLEAN, extras=job.extras, grow=state)
        results.extend(failed.values())
        return BucketResult(files if files.sources else None, None if stale else job.keep, results, entries)


def _growth_rows(source: Source, head: Head, entry: Exported, growth: Growth, job: BucketJob,
                 failed: Dict[str, FileResult]) -> Iterator[Tuple[str, str, Any]]:
    """A grown transcript's rows in the appendix: those it had there, then the new ones."""
    yield source.key, "sessions", empty_batch("sessions")  # listed even with no row here
    if job.old is not None and source.key in job.old.sources:
        try:
            yield from copied(job.out, job.old, [source.key], job.old.rows, patches={source.key: growth.patches})
        except FileNotFoundError:
            raise _Restart() from None
    assert entry.grow is not None
    common = (head.session_id, entry.grow.session.agent, entry.grow.session.model)
    try:
        for table, batch in growth_batches(source, growth, entry.grow, common, job.extras, job.chunk):
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
        t = read_transcript(source, head, extras=job.extras, chunk=job.chunk)
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
    results.append(FileResult(source.path, EXPORTED, t.session.reason, t.session.verdict, rows, source.size))
    grow = None if t.grow is None else dataclasses.replace(t.grow, ids=_write_ids(job.staging, head, t.ids))
    entries[source.key] = Exported(source.stamp, source.path, source.host, head.session_id, head.date, head.bucket,
                                   rows, t.session.verdict, job.extras, grow)


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


def _claim(out: str) -> None:
    """Make `out` a dataset directory unless it is one: an empty manifest marked as awaiting
    its first export, then every table published empty (a file with its schema), so that
    from then on, whatever stops the export, OUT reads as "no dataset yet" and a reader
    that globs a table finds it, empty. Refuse a directory that holds anything else. Under
    the lock, so that a second run starting while the first publishes for the first time
    sees the manifest, not a stranger's files."""
    def refuse_strangers() -> None:
        if any(not n.startswith(STAGING) and n != LOCK for n in os.listdir(out)):
            raise NotADataset(f"OUT ({out}) is a directory with other files in it: give a new or empty "
                               "directory, or one this command made")

    if os.path.exists(os.path.join(out, MANIFEST)) and read_manifest(out).buckets:
        return
    if not os.path.exists(os.path.join(out, MANIFEST)):
        refuse_strangers()  # before the lock file is made: nothing is written into a stranger's directory
    with out_lock(out):
        with staging_dir(out) as staging:
            if not os.path.exists(os.path.join(out, MANIFEST)):
                refuse_strangers()
                write_manifest(out, staging, Manifest())
            manifest = read_manifest(out)
            if not manifest.buckets:  # (also where a run was stopped between the two)
                publish(out, staging, manifest, {bucket_key(*PLACEHOLDER): _empty_bucket(staging)}, [], time.time())


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
    passed_over: List[FileResult] = []  # what the walk could not list or stat, or will not read
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
        snapshot = read_manifest(out)
        sources = snapshot.sources
        changed: List[Source] = []
        for s in found:
            entry = sources.get(s.key)
            if entry is not None and entry.stamp == s.stamp and (isinstance(entry, Skipped) or entry.extras == extras):
                done(FileResult(s.path, SKIPPED, entry.reason) if isinstance(entry, Skipped) else
                     FileResult(s.path, UNCHANGED))
            else:
                changed.append(s)
        seen = {s.key for s in found}
        removed = [k for k, e in sources.items()
                   if e.host == host and k not in seen and any(_inside(e.path, r) for r in srcs)]
        jobs_by_bucket: Dict[str, List[Tuple[Source, Head]]] = {}
        entries: Dict[str, SourceEntry] = {}
        grown = _growths(out, snapshot, changed, host, extras, chunk)
        for s in changed:
            if s.key in grown:
                continue
            try:
                head = read_head(s)
            except NotATranscript as e:
                entries[s.key] = Skipped(s.stamp, s.path, host, str(e))
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
            touched.update(dict.fromkeys(_buckets_of(sources.get(key))))
        touched.update(dict.fromkeys(bucket_key(h.date, APPENDIX) for _, h, _ in grown.values()))
        substitutes = _substitutes(grown)
        patches = {key: {s: grown[s][2].patches for s in rows if grown[s][2].patch_home}
                   for key, rows in substitutes.items()}
        bucket_jobs = []
        for key in touched:
            date, k = split_key(key)
            old = published(snapshot, key)
            keep = [s for s in old.sources if s not in leaving] if old else []
            bucket_jobs.append(BucketJob(
                out, staging, date, k, old, keep, jobs_by_bucket.get(key, []), extras, chunk, _backend.core.name,
                substitutes.get(key, {}),
                [(s, h, _exported(snapshot, s.key), g) for s, h, g in grown.values() if bucket_key(date, APPENDIX) == key],
                patches.get(key, {})))
        built = _run_jobs(bucket_jobs, jobs, done)
        for r in built.values():
            entries.update(r.entries)
        for key in removed:
            done(FileResult(sources[key].path, REMOVED))
        exported = {s for s, e in entries.items() if isinstance(e, Exported)}
        # A changed file that could not be read keeps its published rows (and its old entry:
        # the next run tries it again).
        leaving = set(entries) | set(removed)
        if (not built and not removed and not entries and not snapshot.no_dataset_yet
                and not snapshot.publishing and not _expired(snapshot)):
            return Report(results, time.perf_counter() - started, out)
        with out_lock(out, waiting):
            _commit(out, staging, snapshot, bucket_jobs, built, entries, leaving, exported, substitutes, patches)
    return Report(results, time.perf_counter() - started, out)


def _buckets_of(entry: Optional[SourceEntry]) -> List[str]:
    """The buckets a manifest entry's rows are in: its home bucket, and the appendix if it grew."""
    return entry.buckets if isinstance(entry, Exported) else []


def _exported(manifest: Manifest, key: str) -> Exported:
    entry = manifest.exported(key)
    assert entry is not None, key
    return entry


def _growths(out: str, snapshot: Manifest, changed: List[Source], host: str, extras: bool,
             chunk: int) -> Dict[str, Tuple[Source, Head, Growth]]:
    """The changed transcripts that only grew (``grow.py``), read as far as the checks go."""
    grown: Dict[str, Tuple[Source, Head, Growth]] = {}
    for s in changed:
        entry = snapshot.exported(s.key)
        if entry is None or entry.grow is None or entry.host != host:
            continue
        home = published(snapshot, entry.home)
        if home is None or s.key not in home.sources:
            continue
        try:
            growth = read_growth(s, entry, out, extras, chunk)
        except (OSError, ValueError, CoreFailure):
            growth = None  # it changed while it was read: exported whole, which decides
        if growth is not None:
            grown[s.key] = (s, Head(entry.session_id, entry.date, entry.bucket), growth)
    return grown


def _substitutes(grown: Dict[str, Tuple[Source, Head, Growth]]) -> Dict[str, Dict[str, SessionRow]]:
    """Per home bucket, the sessions rows its grown transcripts get."""
    out: Dict[str, Dict[str, SessionRow]] = {}
    for s, head, growth in grown.values():
        out.setdefault(bucket_key(head.date, head.bucket), {})[s.key] = growth.session
    return out


def _expired(manifest: Manifest) -> bool:
    return any(time.time() - r.when >= GRACE for r in manifest.retired)


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
    # in a forked child. Each ends with this process, even killed (_platform.die_with_parent).
    context = multiprocessing.get_context()
    parent = None if context.get_start_method() == "forkserver" else os.getpid()
    with ProcessPoolExecutor(min(jobs, len(bucket_jobs)), mp_context=context, initializer=_platform.die_with_parent,
                             initargs=(parent,)) as pool:
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


def _commit(out: str, staging: str, snapshot: Manifest, bucket_jobs: List[BucketJob],
            built: Dict[str, BucketResult], entries: Dict[str, SourceEntry], leaving: Set[str],
            exported: Set[str], substitutes: Dict[str, Dict[str, SessionRow]],
            patches: Dict[str, Dict[str, Dict[str, Dict[str, Any]]]]) -> None:
    """Under OUT's lock: the manifest read again, the candidates checked against it (a bucket
    another run published meanwhile is rebuilt from both), the commit."""
    now = time.time()
    manifest = read_manifest(out)
    complete_publish(out, staging, manifest)
    manifest.awaiting = False  # this commit is an export
    remove_orphans(out, manifest)
    collect_garbage(out, manifest, now)
    sources = manifest.sources
    # Where the leaving sources' rows are now (another run may have moved them).
    affected = {bucket_key(j.date, j.k) for j in bucket_jobs}
    for key in leaving:
        affected.update(_buckets_of(sources.get(key)))
    before = {key: published(manifest, key) for key in affected}  # read while the sources are still listed
    superseded = [ids_name(sources.get(key)) for key in leaving]
    for key in leaving:
        sources.pop(key, None)
    sources.update(entries)
    still = {ids_name(e) for e in sources.values()}
    retire(manifest, [os.path.join(IDS, n) for n in superseded if n and n not in still], now)
    ready: Dict[str, BucketFiles] = {}
    gone: List[str] = []
    for key in sorted(affected):
        date, k = split_key(key)
        now_published = before[key]
        keep = [s for s in now_published.sources if s not in leaving] if now_published else []
        r = built.get(key)
        ours = [s for s in (r.files.sources if r and r.files else []) if s in exported]
        was, is_now = _tag(snapshot, key), _tag(manifest, key)
        if r is not None and r.files is not None and r.kept == keep and was == is_now:
            ready[key] = r.files  # nobody published this bucket meanwhile: the candidate holds
        else:
            # A grown transcript whose home candidate is missing: its published rows, its new sessions row.
            substitute = {s: row for s, row in substitutes.get(key, {}).items() if s in exported and s not in ours}
            carried = [s for s in now_published.sources if s not in leaving or s in substitute] if now_published else []
            if carried or ours:
                ready[key] = rebuild(out, staging, date, k, now_published, carried, r.files if r else None, ours,
                                     substitute, {s: p for s, p in patches.get(key, {}).items() if s in substitute})
        if key not in ready or not ready[key].sources:
            ready.pop(key, None)
            if key in manifest.buckets:
                gone.append(key)
    placeholder = bucket_key(*PLACEHOLDER)
    left = set(manifest.buckets) - set(gone) | set(ready)
    if not left:
        ready[placeholder] = _empty_bucket(staging)
    elif left != {placeholder} and placeholder in left and not _sources_of(manifest, ready, placeholder):
        ready.pop(placeholder, None)
        gone.append(placeholder)
    publish(out, staging, manifest, ready, gone, now)


def _tag(manifest: Manifest, key: str) -> Optional[str]:
    bucket = manifest.buckets.get(key)
    return bucket.tag if bucket is not None else None


def _sources_of(manifest: Manifest, ready: Dict[str, BucketFiles], key: str) -> List[str]:
    if key in ready:
        return ready[key].sources
    bucket = manifest.buckets.get(key)
    return list(bucket.sources) if bucket is not None else []


def _empty_bucket(staging: str) -> BucketFiles:
    files = BucketFiles(staging, *PLACEHOLDER)
    files.write(())
    return files


__all__ = ["export", "Report", "FileResult", "BUCKETS", "empty_batch"]
