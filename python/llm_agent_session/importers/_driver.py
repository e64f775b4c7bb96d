"""One import, whatever the format: read the source (with bounds), plan what one import
of the whole of it writes (``_plan``), then either make a new transcript (written under
a temporary name and published whole, so a failed import leaves nothing at OUT) or bring
the transcript an earlier import made to the same live messages and pending operations
(``_reconcile``), after checking that the part of the source it read then is byte for
byte unchanged. An append that fails is cut off again: OUT is left as it was."""

from __future__ import annotations

import concurrent.futures
import contextlib
import gc
import os
import traceback
from typing import Any, Callable, Dict, Iterator, List, Protocol, Sequence, Tuple, cast

from .. import Session, TranscriptError, __version__, _backend, _platform
from .._files import publish_new
from ._bulk import LineWriter, storable
from ._checkpoint import CHECKPOINT, last_checkpoint, source_digest
from ._plan import Record
from ._reconcile import append
from ._report import ImportReport, reason_of
from ._source import Line, Parsed, SourceError, parse_lines, read_source
from ._source_time import source_time


class Refused(Exception):
    """The import cannot go on; the message says why and what to do."""


class Job(Protocol):
    """What one import of a source's lines writes."""

    meta: Dict[str, Any]  # the session-meta of a new transcript
    meta_time: Any  # the source's time of the record the meta comes from (None: none)
    records: List[Record]
    checkpoint: Dict[str, Any]  # more to keep in the import-checkpoint (a format's own)


# (the source's lines, the report to count them in, whether OUT is new) -> the job
Plan = Callable[[List[Line], ImportReport, bool], Job]


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


def run_import(src: Any, out: Any, fmt: str, plan: Plan, redaction: Any = None) -> ImportReport:
    """Import ``src`` into ``out``; never raises on source content (the report says what failed).
    ``redaction``: a ``secrets.Policy`` whose masks the plan gets before anything is written."""
    if redaction is not None:
        from ._redact import masked

        plan = masked(plan, redaction)
    with _no_cyclic_gc():
        return _run_import(src, out, fmt, plan)


def _run_import(src: Any, out: Any, fmt: str, plan: Plan) -> ImportReport:
    src, out = os.fspath(src), os.fspath(out)
    report = ImportReport(src, out, fmt)
    try:
        data = read_source(src, report)
    except SourceError as e:
        return report.failed(str(e))
    try:
        if os.path.lexists(out):
            _append_new(data, src, out, fmt, plan, report)
        else:
            _create(data, src, out, fmt, plan, report)
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


def _checkpoint(src: str, fmt: str, data: bytes, parsed: Parsed, job: Job) -> Dict[str, Any]:
    payload = {
        "format": fmt,
        "source": os.path.abspath(src),
        "bytes": parsed.end,
        "lines": parsed.line_count,
        "digest": source_digest(data, parsed.end),
        "importer": f"llm-agent-session {__version__}",
    }
    payload.update(job.checkpoint)
    return cast(Dict[str, Any], storable(payload))


def _create(data: bytes, src: str, out: str, fmt: str, plan: Plan, report: ImportReport) -> None:
    parsed = parse_lines(data, 0, 1, report)
    job = plan(parsed.lines, report, True)

    def write(fd: int) -> None:
        writer = LineWriter(fd, report, parsed.reader)
        writer.line("session-meta", storable(job.meta), source_time(job.meta_time))
        for at, record in enumerate(job.records):
            writer.write(at, record)
        writer.line(CHECKPOINT, _checkpoint(src, fmt, data, parsed, job))  # the import's own time
        writer.flush()

    # Private until whole, then linked to OUT (never over a file that appeared meanwhile).
    os.close(publish_new(out, write, fsync=False, lock=False))


def _append_new(data: bytes, src: str, out: str, fmt: str, plan: Plan, report: ImportReport) -> None:
    try:
        session = Session.load(out)
    except (TranscriptError, OSError) as e:
        raise Refused(f"{out} exists and does not load ({reason_of(e)}); choose a new OUT") from None
    with session:
        plan = _as_scrubbed(session, plan)
        cp, after = last_checkpoint(session)
        if cp is None:
            raise Refused(f"{out} exists and was not made by an import (it has no import checkpoint); choose a new OUT")
        if cp.get("format") != fmt:
            raise Refused(f"{out} is an import of a {cp.get('format')} source, not {fmt}; choose a new OUT")
        if after:
            raise Refused(
                f"{out} has {after} envelope(s) after its last import checkpoint: another program appended to it "
                "(an import that fails takes back what it wrote, but one killed mid-write cannot); "
                "import into a new OUT"
            )
        done = cp.get("bytes")
        if not isinstance(done, int) or done > len(data) or source_digest(data, done) != cp.get("digest"):
            raise Refused(
                f"the part of {src} imported into {out} before (its first {done} bytes) has changed since; "
                "import into a new OUT"
            )
        if done == len(data):
            _unchanged(report, cp)
            return
        now = ImportReport(src, out, fmt)
        parsed = parse_lines(data, 0, 1, now)
        if parsed.end <= done:
            report["pending_tail"] = now["pending_tail"]
            _unchanged(report, cp)  # only an unfinished last line: nothing whole yet
            return
        # What the last import read, planned again (the plan of a source depends on it alone).
        was = ImportReport(src, out, fmt)
        before = plan([ln for ln in parsed.lines if ln.offset < done], was, False)
        job = plan(parsed.lines, now, False)
        old_lines = cp.get("lines")
        report.count_new(now, was, old_lines if isinstance(old_lines, int) else 0, done)

        def write(writer: LineWriter) -> None:
            append(session, before.records, job.records, writer)
            writer.line(CHECKPOINT, _checkpoint(src, fmt, data, parsed, job))

        _write_at_end(out, session, report, parsed, write)
        report["status"] = "appended"


def _as_scrubbed(session: Session, plan: Plan) -> Plan:
    """`plan`, masked by the default policy where OUT was scrubbed (``secrets.scrub``) and
    the import was given none: else what is new would bring the masked secrets back."""
    from ._redact import is_masked, masked

    if is_masked(plan) or not any(e.type == "scrub" for e in session.events):
        return plan
    from ..secrets import Policy

    return cast(Plan, masked(plan, Policy()))


_CHECKPOINT_KEYS = ("format", "source", "bytes", "lines", "digest", "importer", "resume")


def _unchanged(report: ImportReport, cp: Dict[str, Any]) -> None:
    """Nothing to import: the format's own checkpoint fields (a Job's ``checkpoint``) come
    back as the report's ``_<name>`` keys, which the format's import reads and removes."""
    report["status"] = "unchanged"
    for key, value in cp.items():
        if key not in _CHECKPOINT_KEYS:
            report["_" + key] = value


def _write_at_end(out: str, session: Session, report: ImportReport, parsed: Parsed,
                  write: Callable[[LineWriter], None]) -> None:
    """Run ``write`` on a writer at the end of ``out`` (which ``session`` holds locked);
    if anything fails, cut the file back to where it ended."""
    fd = os.open(out, os.O_WRONLY | os.O_APPEND | _platform.O_CLOEXEC)
    try:
        end = os.fstat(fd).st_size
        try:
            # The lines of the run-context sections OUT already carries (digest -> id).
            writer = LineWriter(fd, report, parsed.reader, dict(session._state.section_lines))
            write(writer)
            writer.flush()
        except BaseException:
            os.ftruncate(fd, end)  # nothing of a failed import stays behind
            raise
    finally:
        os.close(fd)


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


def refuse_out_inside(src_dir: str, out_dir: str) -> None:
    """ValueError if the directory ``out_dir`` is ``src_dir`` or inside it: the next run
    would import the transcripts this one writes, one level deeper each time."""
    src_real, out_real = os.path.realpath(src_dir), os.path.realpath(out_dir)
    if os.path.commonpath([src_real, out_real]) == src_real:
        raise ValueError(
            f"OUT {out_dir} is inside SRC {src_dir}: each run would import the transcripts the last one "
            "wrote; choose an OUT outside SRC"
        )


def mirror_files(src_dir: str, pick: Callable[[str], bool]) -> List[str]:
    """The files under ``src_dir`` (relative paths, sorted) that ``pick`` accepts; what
    each is (a FIFO, a device) is for its import to find out and report."""
    found = []
    for root, dirs, files in os.walk(src_dir):
        dirs.sort()
        for name in sorted(files):
            rel = os.path.relpath(os.path.join(root, name), src_dir)
            if pick(rel):
                found.append(rel)
    return found
