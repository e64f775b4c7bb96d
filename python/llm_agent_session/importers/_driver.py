"""One import, whatever the format: read the source, then either make a new transcript
(written under a temporary name and published whole, so a failed import leaves nothing
at OUT) or append what is new to the transcript an earlier import made, after checking
that the part of the source it imported then is byte for byte unchanged."""

from __future__ import annotations

import concurrent.futures
import contextlib
import gc
import os
import traceback
from typing import Any, Callable, Dict, Iterator, List, Optional, Protocol, Sequence, Tuple

from .. import Session, TranscriptError, __version__, _backend
from ._report import ImportReport, reason_of
from ._source import SourceError, read_source
from ._bulk import BulkWriter
from ._writer import SessionWriter, Writer, _storable, last_checkpoint, publish, source_digest, temp_path_for


class Refused(Exception):
    """The import cannot go on; the message says why and what to do."""


class Job(Protocol):
    """A source prepared for writing: what it adds and how far into the source that goes."""

    meta: Dict[str, Any]
    end: int
    line_count: int
    reader: Any  # the native source reader (``_source.Parsed.reader``), or None

    def write(self, writer: Writer) -> Dict[str, Any]:
        """Append the records; return the state a later import resumes from."""


Prepare = Callable[[bytes, Optional[Dict[str, Any]], ImportReport], Job]


@contextlib.contextmanager
def _no_cyclic_gc() -> Iterator[None]:
    """The cyclic collector paused: an import builds a source's worth of small dicts and
    lists (trees, no cycles), and each 700 of them set off a collection that walks them
    all again (a third of reading a Claude Code file). Reference counting still frees."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def run_import(src: Any, out: Any, fmt: str, prepare: Prepare) -> ImportReport:
    """Import ``src`` into ``out``; never raises on source content (the report says what failed)."""
    with _no_cyclic_gc():
        return _run_import(src, out, fmt, prepare)


def _run_import(src: Any, out: Any, fmt: str, prepare: Prepare) -> ImportReport:
    src, out = os.fspath(src), os.fspath(out)
    report = ImportReport(src, out, fmt)
    try:
        data = read_source(src, report)
    except SourceError as e:
        return report.failed(str(e))
    try:
        if os.path.lexists(out):
            _append_new(data, src, out, fmt, prepare, report)
        else:
            _create(data, src, out, fmt, prepare, report)
    except Refused as e:
        report.failed(str(e))
    except (TranscriptError, OSError) as e:
        report.failed(f"{out}: {reason_of(e)}")
    except Exception as e:  # noqa: BLE001 - a bug here must not stop a tree import; say so
        where = traceback.extract_tb(e.__traceback__)[-1]
        report.failed(
            f"internal error while importing {src} ({type(e).__name__}: {reason_of(e)}, at "
            f"{os.path.basename(where.filename)}:{where.lineno}); please report it"
        )
    return report


def _checkpoint(src: str, fmt: str, data: bytes, job: Job, resume: Dict[str, Any]) -> Dict[str, Any]:
    return {
        "format": fmt,
        "source": os.path.abspath(src),
        "bytes": job.end,
        "lines": job.line_count,
        "digest": source_digest(data, job.end),
        "resume": resume,
        "importer": f"llm-agent-session {__version__}",
    }


def _create(data: bytes, src: str, out: str, fmt: str, prepare: Prepare, report: ImportReport) -> None:
    job = prepare(data, None, report)
    temp = temp_path_for(out)
    Session.create(temp, _storable(job.meta)).close()  # the meta line, in a private file of our own
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC)
        try:
            writer = BulkWriter(fd, report, job.reader)
            writer.checkpoint(_checkpoint(src, fmt, data, job, job.write(writer)))
        finally:
            os.close(fd)
        publish(temp, out)
    except BaseException:
        if os.path.lexists(temp):
            os.unlink(temp)
        raise
    report["written"] += 1  # the session-meta line


def _append_new(data: bytes, src: str, out: str, fmt: str, prepare: Prepare, report: ImportReport) -> None:
    try:
        session = Session.load(out)
    except (TranscriptError, OSError) as e:
        raise Refused(f"{out} exists and does not load ({reason_of(e)}); choose a new OUT") from None
    with session:
        cp, after = last_checkpoint(session)
        if cp is None:
            raise Refused(f"{out} exists and was not made by an import (it has no import checkpoint); choose a new OUT")
        if cp.get("format") != fmt:
            raise Refused(f"{out} is an import of a {cp.get('format')} source, not {fmt}; choose a new OUT")
        if after:
            raise Refused(
                f"{out} has {after} envelope(s) after its last import checkpoint (an import was interrupted, "
                "or another program appended); import into a new OUT"
            )
        done = cp.get("bytes")
        if not isinstance(done, int) or done > len(data) or source_digest(data, done) != cp.get("digest"):
            raise Refused(
                f"the part of {src} imported into {out} before (its first {done} bytes) has changed since; "
                "import into a new OUT"
            )
        if done == len(data):
            report["status"] = "unchanged"
            return
        job = prepare(data, cp, report)
        if job.end <= done:
            report["status"] = "unchanged"  # only an unfinished last line: nothing whole yet
            return
        writer = SessionWriter(session, report)
        writer.checkpoint(_checkpoint(src, fmt, data, job, job.write(writer)))
        report["status"] = "appended"


def run_files(
    calls: Sequence[Tuple[Callable[..., ImportReport], Tuple[str, str]]], on_file: Any = None, workers: int = 1
) -> List[ImportReport]:
    """``fn(*args)`` for each ``(fn, args)`` of a tree import (each one file's import, its
    own output), in order; ``on_file(report, done, total)`` after each, in order.

    With ``workers`` > 1, that many processes import files side by side (one core each;
    an import is CPU-bound and holds the GIL). A worker that dies fails its file's report
    and nothing else. The workers run the backend this process runs."""
    total = len(calls)
    reports: List[ImportReport] = []

    def done(report: ImportReport) -> None:
        reports.append(report)
        if on_file is not None:
            on_file(report, len(reports), total)

    if workers <= 1 or total <= 1:
        for fn, args in calls:
            done(fn(*args))
        return reports
    with concurrent.futures.ProcessPoolExecutor(
        min(workers, total), initializer=_backend.use, initargs=(_backend.core.name,)
    ) as pool:
        futures = [pool.submit(fn, *args) for fn, args in calls]
        for (fn, args), future in zip(calls, futures):
            try:
                report = future.result()
            except Exception as e:  # noqa: BLE001 - a worker killed or broken: this file fails, not the tree
                report = ImportReport(args[0], args[1], "").failed(
                    f"the worker importing {args[0]} failed ({type(e).__name__}: {reason_of(e)}); import it alone"
                )
            done(report)
    return reports


def mirror_files(src_dir: str, pick: Callable[[str], bool]) -> List[str]:
    """The files under ``src_dir`` (relative paths, sorted) that ``pick`` accepts."""
    found = []
    for root, dirs, files in os.walk(src_dir):
        dirs.sort()
        for name in sorted(files):
            rel = os.path.relpath(os.path.join(root, name), src_dir)
            if pick(rel):
                found.append(rel)
    return found
