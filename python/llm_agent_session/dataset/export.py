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
from typing import Callable, Iterator, List, Optional, Sequence, Tuple, Union

from .._files import make_private_dirs, name_as_text
from .build import run_jobs
from .commit import Staged, Transaction, claim
from .errors import DatasetError, NotADataset
from .layout import remove_abandoned_staging, staging_dir
from .manifest import read_manifest
from .plan import Run, bucket_jobs, changed_sources
from .report import FAILED, REMOVED, SKIPPED, FileResult, Report
from .rows import CHUNK
from .sources import Source

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
           waiting: Optional[Callable[[], None]] = None, chunk: int = CHUNK, redact: bool = True) -> Report:
    """Export the transcripts under `src` (files or directories, searched recursively) into
    the dataset directory `out`; see ``docs/dataset.md``. ``jobs``: processes reading
    transcripts side by side. ``on_file(result, done, total)`` after each file;
    ``waiting()`` if another export holds OUT's lock when this one publishes. ``redact``
    (the default) masks what the secret rules find (docs/secrets.md): ``Report.masked``
    and each ``FileResult.masked`` count them; ``redact=False`` keeps them."""
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
        run = Run(out, staging, read_manifest(out), host, extras, chunk, done, redact)
        changed = changed_sources(run, found)
        seen = {s.key for s in found}
        removed = [k for k, e in run.snapshot.sources.items()
                   if e.host == host and k not in seen and any(_inside(e.path, r) for r in srcs)]
        transaction = Transaction(out, staging, run.snapshot)
        planned = bucket_jobs(run, changed, removed, transaction)
        built = run_jobs(planned, jobs, done)
        for job in planned:
            r = built[job.key]
            transaction.stage(job.key, Staged(r.files, r.kept, job.amendment))
            for source, entry in r.entries.items():
                transaction.record(source, entry)
        # A changed file that could not be read keeps its published rows (and its old entry:
        # the next run tries it again): nothing of it is recorded.
        for key in removed:
            done(FileResult(run.snapshot.sources[key].path, REMOVED))
            transaction.drop(key)
        if transaction.needed():
            transaction.commit(waiting)
    return Report(results, time.perf_counter() - started, out, redact)


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


__all__ = ["export", "Report", "FileResult"]
