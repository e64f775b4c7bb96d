"""Claude Code sessions and Codex rollouts imported into the cache, for a reader that
shows them as they are written (``llm-agent-session view``), never writing beside them.

Each source file is imported into ``<cache>/view-imports/<digest>/`` (the cache:
``LLM_AGENT_SESSION_CACHE``, else the user cache directory's ``llm-agent-session``),
where ``<digest>`` names the folder the source is in (a SHA-256 of its real path), so a
session has the same transcript in the cache however it was reached; below it, the
layout ``import`` makes: ``<session>.jsonl``, its sidechains in
``<session>/sidechains/``, a Claude Code subagent in ``<session>/subagents/`` of its
session's folder. Folders are 0700, files 0600. Everything there is disposable:
:func:`clear` deletes it (``llm-agent-session view --clear-cache``), and the next look
imports again.

:func:`refresh` brings one source's transcripts up to date: the importer's incremental
import (a file that has not changed costs a hash of its bytes; one that grew gets what
is new). Where that import is refused (the part of the source imported before has
changed since, or the transcript in the cache is not one an import finished: a viewer
killed mid-write), the source is imported again from its first line into a fresh file
that replaces the old one, and the outcome says so in a note; if that fails too, the old
transcript is put back, with a note saying why. One import at a time per transcript,
across processes (a lock file in ``view-imports/.locks``).

    item = cached("/home/me/.claude/projects/-home-me-proj/1234.jsonl", "claude-code")
    outcome = refresh(item)   # {"status", "error", "note", "outputs": [[transcript, None], ...]}
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Dict, FrozenSet, Iterator, List, Optional, Tuple

from .. import _backend, _platform
from .._cache import cache_dir
from .._files import make_private_dirs, open_fd
from ._report import ImportReport
from .detect import CLAUDE_CODE, CODEX

if TYPE_CHECKING:
    import concurrent.futures

FOLDER = "view-imports"
_LOCKS = ".locks"

Row = Dict[str, Any]


def directory() -> str:
    """Where the imports are kept: ``view-imports`` in the cache directory."""
    return os.path.join(cache_dir(), FOLDER)


@dataclass(frozen=True)
class Cached:
    """One source file and the transcript it is imported into, in the cache."""

    format: str  # "claude-code" or "codex"
    source: str  # the source file's real path
    out: str  # its transcript in the cache
    subagent: bool = False  # a Claude Code subagent's file (``<session>/subagents/agent-*.jsonl``)
    parent_out: Optional[str] = None  # a subagent's session's transcript, where its session file exists


def cached(path: str, fmt: str) -> Cached:
    """Where the source `path` (of format `fmt`) is imported in the cache (see the module's doc)."""
    real = os.path.realpath(path)
    folder, name = os.path.split(real)
    if fmt == CLAUDE_CODE and os.path.basename(folder) == "subagents":
        session = os.path.dirname(folder)  # .../<project>/<session-uuid>
        mirror = _mirror(os.path.dirname(session))
        stem = os.path.basename(session)
        main = os.path.join(mirror, stem + ".jsonl")
        return Cached(fmt, real, os.path.join(mirror, stem, "subagents", name), True,
                      main if os.path.isfile(session + ".jsonl") else None)
    if fmt == CODEX:
        from . import codex

        name = codex.out_name(name)
    return Cached(fmt, real, os.path.join(_mirror(folder), name))


def _mirror(folder: str) -> str:
    return os.path.join(directory(), hashlib.sha256(os.fsencode(folder)).hexdigest()[:32])


def refresh(item: Cached, known: FrozenSet[str] = frozenset(),
            row_of: Optional[Callable[[str], Row]] = None) -> Dict[str, Any]:
    """Bring `item`'s transcripts up to date (see the module's doc). The outcome:
    ``status`` and ``error`` (of the main transcript's import, as the importer reports
    them), ``note`` (what the reader should know: an import made again from the first
    line, and why; None otherwise) and ``outputs``: ``[transcript, row]`` for each
    transcript the source gives (its own first, then its sidechains), with ``row_of``'s
    row for those not in `known` (None for the others, or without ``row_of``)."""
    with _locked(item.out):
        report = _import(item)
        note = None
        why = _failure(report)
        if why is not None and os.path.lexists(item.out):
            report, note = _afresh(item, report, why)
        outputs: List[List[Any]] = []
        for each in _flat(report):
            out = each["out"]
            if os.path.isfile(out) and all(out != o for o, _ in outputs):
                outputs.append([out, row_of(out) if row_of is not None and out not in known else None])
        return {"status": report["status"], "error": report["error"], "note": note, "outputs": outputs}


def _import(item: Cached) -> ImportReport:
    from . import claude_code, codex  # (here: a viewer that finds no session never loads them)

    if item.format == CODEX:
        return codex.import_transcript(item.source, item.out)
    if item.subagent:
        return claude_code.import_subagent(item.source, item.out, parent_out=item.parent_out)
    return claude_code.import_transcript(item.source, item.out, subagents=False)


def _flat(report: ImportReport) -> Iterator[ImportReport]:
    yield report
    for child in report["transcripts"]:
        yield from _flat(child)


def _failure(report: ImportReport) -> Optional[str]:
    """Why the import (or one of its sidechains') failed; None where none did."""
    for each in _flat(report):
        if each["status"] == "failed":
            return str(each["error"])
    return None


def _afresh(item: Cached, first: ImportReport, why: str) -> Tuple[ImportReport, str]:
    """Import `item` again from its first line, over what an earlier import made (`first`:
    the report of the import refused, `why`); where that fails too, put that back. The
    report of what is there now, and the note that says what happened."""
    tag = f".was-{uuid.uuid4().hex[:12]}"
    made = [item.out]
    if item.format == CLAUDE_CODE and not item.subagent:
        made.append(os.path.join(item.out[: -len(".jsonl")], "sidechains"))
    aside = [(path, path + tag) for path in made if os.path.lexists(path)]
    for path, moved in aside:
        os.rename(path, moved)
    try:
        report = _import(item)
    except BaseException:
        _put_back(aside)
        raise
    again = _failure(report)
    if again is None:
        for _, moved in aside:
            _remove(moved)
        return report, f"the import could not go on from where it was ({why}): imported again from its first line"
    _put_back(aside)
    return first, (f"the import could not go on from where it was ({why}), nor start again from the first line "
                    f"({again}): showing what was imported before")


def _put_back(aside: List[Tuple[str, str]]) -> None:
    for path, moved in aside:
        _remove(path)  # what a failed import left there
        os.rename(moved, path)


def _remove(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            os.remove(path)


@contextlib.contextmanager
def _locked(out: str) -> Iterator[None]:
    """Held while `out` is imported: two viewers of one source import it in turn."""
    if _platform.fcntl is None:  # no flock (Windows): an import needs one anyway, and says so
        yield
        return
    folder = os.path.join(directory(), _LOCKS)
    make_private_dirs(folder)
    name = hashlib.sha256(os.fsencode(out)).hexdigest()[:32]
    fd = open_fd(os.path.join(folder, name), os.O_RDWR | os.O_CREAT)
    try:
        _platform.fcntl.flock(fd, _platform.fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def clear() -> Tuple[str, int, int]:
    """Delete every import the cache holds: the folder, and how many files and bytes were
    in it. OSError where it cannot be deleted (a symbolic link there is not followed)."""
    where = directory()
    if os.path.islink(where):
        raise OSError(f"{where} is a symbolic link, not this program's folder: not deleted")
    files = size = 0
    for folder, _, names in os.walk(where):
        for name in names:
            files += 1
            with contextlib.suppress(OSError):
                size += os.lstat(os.path.join(folder, name)).st_size
    if os.path.isdir(where):
        shutil.rmtree(where)
    return where, files, size


def worker_pool(workers: int) -> "concurrent.futures.ProcessPoolExecutor":
    """A pool of `workers` processes for :func:`refresh`, running this process's core.
    Spawned, not forked: a server's threads would be copied mid-flight."""
    import concurrent.futures
    import multiprocessing

    return concurrent.futures.ProcessPoolExecutor(
        max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
        initializer=_backend.use, initargs=(_backend.core.name,))
