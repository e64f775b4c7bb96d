"""The transcripts under the PATHs given, by name, and the shelf: one row a transcript.

Each PATH is a *root* with a label (its base name, made unique). A transcript is named
``label`` (a file PATH) or ``label/relative/path.jsonl`` (a file under a directory PATH);
the page and the data API name transcripts only so. :meth:`Roots.resolve` turns a name back
into a file and is the one gate to the disk: no ``..``, no absolute path, no empty or
``.`` segment, no backslash or NUL, and the file found (symbolic links followed) must be a
regular file inside the root's own real path.

Directories are walked for ``*.jsonl`` files whose first line that is not blank is a
``session-meta`` envelope (``.artifacts`` directories and links that lead out of the root
are skipped). Each directory is walked once, known by its device and inode: a link to one
already walked (a loop, a link to an ancestor) is not followed, and links come after the
real directories, so a transcript is listed under its own path. A file or directory that
cannot be read is a row that says why (``unreadable``). The shelf's rows are made in a
background thread, in walk order, and the page reads them as they come (a row:
``shelf_row.describe``).

The walk finds Claude Code sessions and Codex rollouts too (``*.jsonl`` and
``*.jsonl.zst`` files whose first lines are theirs: ``importers.detect``), under the name
their import would have (``label/relative/path.jsonl``), and hands them to ``imports.py``,
which imports each into the cache and adds its rows when that is done; the gate then
resolves such a name to its import (``Roots.imported``), never to the source.
"""

from __future__ import annotations

import os
import stat
import threading
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterator, List, Optional, Protocol, Set, Tuple

from ..importers import detect
from ..verdict import is_transcript
from ..visible import visible
from .shelf_row import describe

SUFFIX = ".jsonl"
COMPRESSED = ".jsonl.zst"  # a Codex rollout, compressed
TRANSCRIPT = "transcript"  # what the walk's look says of a transcript (else a source's format, or None)


class NameRefused(ValueError):
    """A transcript name that tries to leave its root (``..``, absolute, ...)."""


@dataclass
class Root:
    label: str
    given: str  # the PATH as given
    real: str  # its real path
    is_file: bool
    source: Optional[str] = None  # a file PATH that is a Claude Code or Codex session: its format


class Roots:
    """The PATHs given, as roots the viewer serves from."""

    def __init__(self, paths: List[str]) -> None:
        self.roots: Dict[str, Root] = {}
        # The transcripts imported from sources (imports.py), by name: where each is in the cache.
        self.imported: Dict[str, str] = {}
        for given in paths:
            real = os.path.realpath(given)
            base = os.path.basename(os.path.normpath(os.path.abspath(given))) or "root"
            label, n = base, 1
            while label in self.roots:
                n += 1
                label = f"{base}-{n}"
            is_file = os.path.isfile(real)
            self.roots[label] = Root(label, given, real, is_file, _source_of_file(real) if is_file else None)

    def _split(self, name: str) -> Tuple[Root, List[str]]:
        """The root a name is under, and its segments; NameRefused for a name that tries
        to leave it, FileNotFoundError for a root never given."""
        if not isinstance(name, str) or not name or "\x00" in name or "\\" in name:
            raise NameRefused("a transcript name is label/relative/path, without NUL or backslash")
        if name.startswith("/") or os.path.isabs(name):
            raise NameRefused("absolute paths are refused: name a transcript as listed on the shelf")
        parts = name.split("/")
        if any(p in ("", ".", "..") for p in parts):
            raise NameRefused("'..', '.' and empty segments are refused: name a transcript as listed on the shelf")
        root = self.roots.get(parts[0])
        if root is None:
            raise FileNotFoundError(f"no PATH given is called {parts[0]!r}")
        return root, parts

    def _inside(self, root: Root, parts: List[str]) -> str:
        """The real path `parts` name under the directory `root`; NameRefused where it leads out."""
        path = os.path.realpath(os.path.join(root.real, *parts[1:]))
        if os.path.commonpath([path, root.real]) != root.real:
            raise NameRefused("that name leads out of its PATH (a symbolic link?): refused")
        return path

    def resolve(self, name: str) -> str:
        """The real path of the transcript `name`; NameRefused for a name that leaves its
        root, FileNotFoundError for one that names nothing servable. A source's name (a
        Claude Code or Codex session) resolves to its import in the cache, once imported."""
        root, parts = self._split(name)
        imported = self.imported.get(name)
        if imported is not None:
            path = imported
        elif root.is_file:
            if len(parts) != 1:
                raise FileNotFoundError(f"{parts[0]!r} is a file, not a directory")
            if root.source is not None:
                raise FileNotFoundError(f"{parts[0]!r} is a {root.source} session not imported (yet)")
            path = root.real
        else:
            if len(parts) == 1 or not parts[-1].endswith(SUFFIX):
                raise FileNotFoundError("the viewer serves only *.jsonl files under a directory PATH")
            path = self._inside(root, parts)
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            raise FileNotFoundError("not a regular file")
        return path

    def source_of(self, name: str) -> Optional[Tuple[str, str, str]]:
        """Where the transcript `name` comes from, when it is a source's (a Claude Code or
        Codex session, or a Claude Code sidechain: the session it is in): ``(the source
        file, its format, the name of its session's transcript)``; None for anything else.
        The gate's rules hold (NameRefused for a name that leaves its root)."""
        root, parts = self._split(name)
        if root.is_file:
            return (root.real, root.source, name) if root.source is not None and len(parts) == 1 else None
        if len(parts) == 1 or not parts[-1].endswith(SUFFIX):
            return None
        candidates = [parts, parts[:-1] + [parts[-1] + ".zst"]]
        if len(parts) >= 4 and parts[-2] == "sidechains":  # <session>/sidechains/<root>.jsonl
            candidates.append(parts[:-3] + [parts[-3] + SUFFIX])
        for each in candidates:
            path = self._inside(root, each)
            kind = look(path) if os.path.isfile(path) else None
            if kind not in (None, TRANSCRIPT):
                return path, str(kind), "/".join(each if each[-1].endswith(SUFFIX) else each[:-1] + [parts[-1]])
        return None

    def walk(self, looking: Optional[Callable[[str], Optional[str]]] = None,
             only: Optional[Set[str]] = None) -> Iterator["Found"]:
        """Every transcript and source under the roots (`only`: those with these labels),
        and every file or directory that could not be read, in walk order. `looking` tells
        what a file is (``TRANSCRIPT``, a source's format, or None: passed over); by
        default ``look``, at each file's first lines."""
        for root in self.roots.values():
            if only is not None and root.label not in only:
                continue
            if root.is_file:
                yield Found(root.label, source=root.source, path=root.real)
                continue
            for path, unreadable, is_dir, kind in _walk(root.real, looking or look):
                relative = os.path.relpath(path, root.real).replace(os.sep, "/")
                if kind == detect.CODEX:
                    from ..importers import codex

                    relative = codex.out_name(relative)  # its transcript's name, as import names it
                name = root.label if relative == "." else root.label + "/" + relative
                source = kind if kind not in (None, TRANSCRIPT) else None
                yield Found(name, unreadable, is_dir, source, path if source else None)


def look(path: str, given: bool = False) -> Optional[str]:
    """What the file at `path` is: ``TRANSCRIPT``, a source's format (``importers.detect``)
    or None. A file given as a PATH that is neither is a transcript (load's verdict will
    say what it is). OSError where it cannot be read."""
    if not path.endswith(COMPRESSED) and is_transcript(path):
        return TRANSCRIPT
    found = detect.format_of(path)
    return found if found is not None or not given else TRANSCRIPT


def _source_of_file(path: str) -> Optional[str]:
    """The format of a file PATH that is a source; None for a transcript or anything else
    (its row, or the command line, says what it is)."""
    try:
        kind = look(path, given=True)
    except OSError:
        return None
    return kind if kind != TRANSCRIPT else None


@dataclass(frozen=True)
class Found:
    """A transcript the walk found, a Claude Code or Codex session (``source``, its
    format, at ``path``), or a file or directory it could not read (why)."""

    name: str
    unreadable: Optional[str] = None
    directory: bool = False
    source: Optional[str] = None
    path: Optional[str] = None


def _walk(top: str, look: Callable[[str], Optional[str]]) -> Iterator[Tuple[str, Optional[str], bool, Optional[str]]]:
    """``(path, None, False, kind)`` for each transcript or source under `top` (its real
    path; `kind` what `look` says of it), and ``(path, why, is_dir, None)`` for each file
    or directory that cannot be read. Each directory
    is walked once, known by its device and inode, so a link to a directory already walked
    (an ancestor among them: a loop) is not followed again; links are followed after the
    real directories, so a transcript is listed under its own path, not a link's."""
    seen: Set[Tuple[int, int]] = set()
    links: List[str] = []

    def first_time(path: str) -> bool:
        st = os.stat(path)
        key = (st.st_dev, st.st_ino)
        if key in seen:
            return False
        seen.add(key)
        return True

    def tree(start: str) -> Iterator[Tuple[str, Optional[str], bool, Optional[str]]]:
        stack = [start]
        while stack:  # depth-first, in name order, without recursion (a deep tree is fine)
            directory = stack.pop()
            try:
                entries = sorted(os.scandir(directory), key=lambda e: e.name)
            except OSError as e:
                yield directory, f"cannot list it: {e.strerror or e}", True, None
                continue
            subdirs = []
            for entry in entries:
                try:
                    if entry.is_dir():
                        if entry.name.endswith(".artifacts") or not _inside(entry.path, top):
                            continue
                        if entry.is_symlink():
                            links.append(entry.path)
                        elif first_time(entry.path):
                            subdirs.append(entry.path)
                    elif entry.name.endswith((SUFFIX, COMPRESSED)) and entry.is_file() and _inside(entry.path, top):
                        kind = look(entry.path)
                        if kind is not None:
                            yield entry.path, None, False, kind
                except OSError as e:
                    yield entry.path, f"cannot read it: {e.strerror or e}", entry.is_dir(follow_symlinks=False), None
            stack.extend(reversed(subdirs))

    try:
        first_time(top)
    except OSError as e:
        yield top, f"cannot read it: {e.strerror or e}", True, None
        return
    yield from tree(top)
    while links:
        link = links.pop(0)
        try:
            again = not first_time(link)
        except OSError as e:
            yield link, f"cannot read it: {e.strerror or e}", True, None
            continue
        if not again:
            yield from tree(link)


def _inside(path: str, top: str) -> bool:
    real = os.path.realpath(path)
    return os.path.commonpath([real, top]) == top and (real != top or not os.path.isdir(real))


BATCH = 100  # rows made in this process before the pool takes over, and per task after


def _unreadable(why: str) -> Dict[str, Any]:
    return {"error": visible(why), "verdict": "unreadable", "why": visible(why)}


def _row(roots: Roots, name: str) -> Dict[str, Any]:
    try:
        path = roots.resolve(name)
    except (OSError, ValueError) as e:
        return _unreadable(str(e))
    return row_of_file(path, name)


def row_of_file(path: str, name: Optional[str] = None) -> Dict[str, Any]:
    """The row of the transcript at `path` (its real path), or an ``unreadable`` one that
    says why, listed as `name` (an import's worker process makes its transcripts' rows with this too)."""
    try:
        return describe(path, name)
    except (OSError, ValueError) as e:
        return _unreadable(str(e))
    except Exception as e:  # a file this code did not foresee costs its own row, never the shelf
        return _unreadable(f"its row could not be made ({type(e).__name__}: {e})")


def _rows(roots: Roots, names: List[str]) -> List[Dict[str, Any]]:
    return [_row(roots, name) for name in names]


def _submit(pool: Any, roots: Roots, names: List[str]) -> Any:
    try:
        return pool.submit(_rows, roots, names)
    except Exception:  # a broken pool (a worker was killed): _done makes them here
        return None


def _done(roots: Roots, item: Any) -> Any:
    names, future = item
    try:
        if future is not None:
            return names, future.result()
    except Exception:  # the worker died (killed, out of memory): these rows are made here
        pass
    return names, _rows(roots, names)


def _pool() -> Any:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    # spawn: the server has threads, which a fork would copy mid-flight.
    return ProcessPoolExecutor(max_workers=max(1, min(2, os.cpu_count() or 1)),
                               mp_context=multiprocessing.get_context("spawn"))


class Sources(Protocol):
    """Where the shelf hands the Claude Code and Codex sessions its walk finds (imports.py):
    their rows come from there, as their imports finish."""

    def found(self, entry: Found) -> None: ...

    def walked(self) -> None:
        """Every source under the roots has been handed over: import them."""

    def wait_listed(self) -> None:
        """Return once every source handed over has its row (imported, or why not)."""


class Shelf:
    """The rows of every transcript under the roots, made in the background."""

    def __init__(self, roots: Roots) -> None:
        self.roots = roots
        self.rows: List[Dict[str, Any]] = []
        self.done = False
        self.lock = threading.Lock()
        self._thread: Optional[threading.Thread] = None
        self.sources: Optional[Sources] = None  # set by imports.Imports
        # A name the page cannot carry as it is (control or bidi characters, undecodable
        # bytes) is linked by an alias, "~N", valid for this run.
        self.aliases: Dict[str, str] = {}

    def alias(self, name: str) -> str:
        key = f"~{len(self.aliases)}"
        self.aliases[key] = name
        return key

    def name_of(self, link: str) -> str:
        """The transcript name a link from the page stands for."""
        with self.lock:
            return self.aliases.get(link, link)

    def start(self) -> None:
        with self.lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._fill, name="view-shelf", daemon=True)
                self._thread.start()

    def _fill(self) -> None:
        """Rows in walk order: the first BATCH here, the rest by a pool of processes (a row
        costs about 1.4 ms of mostly Python, so 10,000 of them want both cores). A file or
        directory the walk could not read is a row that says why."""
        pool = None
        try:
            batch: List[str] = []
            pending: List[Any] = []
            for found in self.roots.walk():
                if found.source is not None and self.sources is not None:
                    self.sources.found(found)  # its row comes when its import is done
                    continue
                if found.unreadable is not None:
                    while pending:  # the rows before it first: walk order
                        self._add(*_done(self.roots, pending.pop(0)))
                    if batch:
                        self._add(batch, _rows(self.roots, batch))
                        batch = []
                    self._add([found.name], [_unreadable(found.unreadable)], linked=not found.directory)
                    continue
                batch.append(found.name)
                if len(self.rows) + len(batch) <= BATCH:
                    self._add(batch, _rows(self.roots, batch))
                    batch = []
                elif len(batch) >= BATCH:
                    pool = pool or _pool()
                    pending.append((batch, _submit(pool, self.roots, batch)))
                    batch = []
                    while len(pending) > 4:
                        self._add(*_done(self.roots, pending.pop(0)))
            if batch:
                if pool is None:
                    self._add(batch, _rows(self.roots, batch))
                else:
                    pending.append((batch, _submit(pool, self.roots, batch)))
            for item in pending:
                self._add(*_done(self.roots, item))
            if self.sources is not None:
                self.sources.walked()
                self.sources.wait_listed()
        finally:
            self.done = True
            if pool is not None:
                pool.shutdown(wait=False, cancel_futures=True)

    def add_rows(self, names: List[str], rows: List[Dict[str, Any]], linked: bool = True) -> None:
        """Rows made elsewhere (an import's), after those there (`linked`: each opens its transcript)."""
        self._add(names, rows, linked)

    def _add(self, names: List[str], rows: List[Dict[str, Any]], linked: bool = True) -> None:
        with self.lock:
            for name, row in zip(names, rows):
                row["name"] = visible(name)
                row["link"] = None if not linked else name if visible(name) == name else self.alias(name)
                self.rows.append(row)

    def since(self, start: int) -> Dict[str, Any]:
        with self.lock:
            return {"rows": self.rows[start:], "count": len(self.rows), "done": self.done}
