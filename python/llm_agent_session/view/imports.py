"""The Claude Code and Codex sessions under the PATHs, shown as they are written.

A file the shelf's walk finds (or a PATH) that is a Claude Code session or a Codex rollout
(``importers.detect``) is shown as the transcript its import makes in the cache
(``importers.cache``: never beside the source). :class:`Imports` does the importing, in
worker processes (the server's own thread stays free for the page):

1. first every source the walk found, the most recently changed first; each one's rows
   (its transcript's, and its sidechains') go on the shelf as its import finishes;
2. then, every ``POLL`` seconds, a ``stat`` of each source: one that changed is imported
   again (the importer appends only what is new), at most about a fifth of the time (a
   big session being written is not imported back to back); every ``RESCAN`` seconds the
   directories are walked again for sessions started since;
3. a page that follows a transcript (``/api/follow``) has its source imported at once
   when it changed, and waits for it (at most ``FOLLOW_WAIT``), so a line the agent writes
   is on the page within the follow's half second and one import.

A transcript asked for before its first import waits for it (``OPEN_WAIT``). An import
that could not go on from where it was is made again from the first line, with a note
on the transcript's page (``note``); one that fails leaves a row that says why.
"""

from __future__ import annotations

import os
import threading
import time
from typing import TYPE_CHECKING, Any, Dict, FrozenSet, List, Optional, Set, Tuple

from ..importers import cache
from ..visible import visible
from .shelf import TRANSCRIPT, Found, Shelf, look, row_of_file

if TYPE_CHECKING:
    import concurrent.futures

POLL = 0.5  # seconds between two looks at the sources (a stat each)
RESCAN = 5.0  # seconds between two walks for new sources
SPACING = 4.0  # a changed source waits this many times its last import's length (a fifth of the time, at most)
FOLLOW_WAIT = 5.0  # how long a follow waits for its source's import, at most
OPEN_WAIT = 120.0  # how long opening a transcript waits for its first import, at most
WORKERS = max(1, min(2, os.cpu_count() or 1))  # worker processes (0: import in this process)

URGENT, FIRST, CHANGED = 0, 1, 2  # the order imports are done in: asked for, the first pass, grown

Stat = Tuple[int, int, int, int]


def _stat(path: str) -> Optional[Stat]:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


class Unit:
    """One source file: its transcript in the cache, and where its import is."""

    def __init__(self, item: cache.Cached, name: str, listed_under: Optional[str]) -> None:
        self.item = item
        self.name = name  # its transcript's name on the shelf
        # The folder its sidechains are named under (None: a file PATH: not listed).
        self.listed_under = listed_under
        self.seen: Optional[Stat] = None  # the source as the last import found it
        self.wanted: Optional[int] = None  # asked for, at this priority
        self.running = False
        self.started = 0  # imports begun, and finished
        self.finished = 0
        self.took = 0.0  # seconds the last import took
        self.finished_at = 0.0
        self.outs: Set[str] = set()  # its transcripts that have rows
        self.error: Optional[str] = None  # why its last import failed
        self.note: Optional[str] = None  # what its page says (an import made again, and why)


class Imports:
    """The sources of a shelf's roots, imported and kept up to date (see the module's doc)."""

    def __init__(self, shelf: Shelf, workers: int = WORKERS) -> None:
        self.shelf = shelf
        self.roots = shelf.roots
        self.workers = workers
        self.units: Dict[str, Unit] = {}  # by the name of its transcript
        self.by_name: Dict[str, Unit] = {}  # every name listed for a unit's transcripts
        self.cond = threading.Condition()
        self.queue: List[Tuple[int, int, Unit]] = []
        self.order = 0
        self.first: List[Unit] = []  # the walk's, until walked()
        self.started = False
        self.closed = False
        self.pool: Optional["concurrent.futures.ProcessPoolExecutor"] = None
        self.pool_failures = 0
        self.looked: Dict[str, Tuple[int, Optional[str]]] = {}  # a rescan's memo: path -> (size, what it is)
        shelf.sources = self

    # -- what the shelf hands over ------------------------------------------------------------

    def found(self, entry: Found) -> None:
        """A source the walk found: imported when the walk is done (``walked``)."""
        unit = self._unit(entry)
        if unit is not None:
            with self.cond:
                self.first.append(unit)

    def walked(self) -> None:
        """Import what the walk found, the most recently changed first."""
        with self.cond:
            first, self.first = self.first, []
        mtimes = {id(u): (_stat(u.item.source) or (0, 0, 0, 0))[3] for u in first}
        for unit in sorted(first, key=lambda u: -mtimes[id(u)]):
            self._ask(unit, FIRST)

    def wait_listed(self) -> None:
        with self.cond:
            while any(u.finished == 0 for u in self.units.values() if u.wanted is not None or u.running):
                self.cond.wait(1.0)

    def _unit(self, entry: Found) -> Optional[Unit]:
        if entry.source is None or entry.path is None:
            return None
        with self.cond:
            unit = self.units.get(entry.name)
            if unit is None:
                root = self.roots.roots[entry.name.split("/")[0]]
                under = None if root.is_file else entry.name.rpartition("/")[0]
                unit = Unit(cache.cached(entry.path, entry.source), entry.name, under)
                self.units[entry.name] = self.by_name[entry.name] = unit
            return unit

    # -- what a page asks for -----------------------------------------------------------------

    def prepare(self, name: str) -> None:
        """Before `name` is opened: where it is a source's transcript not imported yet, its
        import, waited for; FileNotFoundError where it cannot be imported. Nothing for any
        other name (NameRefused for one that leaves its root, as the gate says)."""
        unit = self._unit_of(name)
        if unit is None:
            return
        if unit.finished == 0:
            self._wait(unit, OPEN_WAIT)
        if name not in self.roots.imported:
            why = unit.error or "its import has not finished yet: try again in a moment"
            raise FileNotFoundError(f"{unit.item.source} could not be imported: {why}")

    def catch_up(self, name: str) -> None:
        """For a follow: where `name`'s source changed since its last import, that import
        now (or, for a big one, once it has rested as long as its last import took: one
        session followed takes at most half a core), waited for (at most FOLLOW_WAIT)."""
        unit = self.by_name.get(name)
        if unit is None or not unit.finished or _stat(unit.item.source) in (unit.seen, None):
            return
        rest = unit.finished_at + unit.took - time.monotonic()
        if rest > 0:
            time.sleep(min(rest, FOLLOW_WAIT))
        self._wait(unit, FOLLOW_WAIT)

    def note(self, name: str) -> Optional[str]:
        """What the page of `name` should say about its import (None: nothing)."""
        unit = self.by_name.get(name)
        return None if unit is None or unit.note is None else visible(unit.note)

    def _unit_of(self, name: str) -> Optional[Unit]:
        unit = self.by_name.get(name)
        if unit is not None:
            return unit
        found = self.roots.source_of(name)  # a deep link before the walk got there
        if found is None:
            return None
        path, fmt, main = found
        return self._unit(Found(main, source=fmt, path=path))

    # -- the order of work --------------------------------------------------------------------

    def _ask(self, unit: Unit, priority: int) -> None:
        with self.cond:
            self._start()
            if unit.wanted is None or priority < unit.wanted:
                unit.wanted = priority
                self.order += 1
                self.queue.append((priority, self.order, unit))
                self.queue.sort(key=lambda entry: entry[:2])
                self.cond.notify_all()

    def _wait(self, unit: Unit, timeout: float) -> None:
        """Ask for an import of `unit` begun from now, and wait until it is done."""
        end = time.monotonic() + timeout
        with self.cond:
            target = unit.started + 1
        self._ask(unit, URGENT)
        with self.cond:
            while unit.finished < target and not self.closed:
                left = end - time.monotonic()
                if left <= 0:
                    return
                self.cond.wait(left)

    def _start(self) -> None:
        """The dispatchers and the poller, on first use (under self.cond)."""
        if self.started:
            return
        self.started = True
        for k in range(max(1, self.workers)):
            threading.Thread(target=self._dispatch, name=f"view-import-{k}", daemon=True).start()
        threading.Thread(target=self._poll, name="view-import-poll", daemon=True).start()

    def _next(self) -> Optional[Unit]:
        with self.cond:
            while not self.closed:
                while self.queue:
                    priority, _, unit = self.queue.pop(0)
                    if unit.wanted == priority and not unit.running:
                        unit.wanted, unit.running = None, True
                        unit.started += 1
                        return unit
                self.cond.wait()
        return None

    def _dispatch(self) -> None:
        while True:
            unit = self._next()
            if unit is None:
                return
            seen = _stat(unit.item.source)
            begun = time.monotonic()
            outcome = self._refresh(unit.item, frozenset(unit.outs))
            self._done(unit, seen, time.monotonic() - begun, outcome)

    def _refresh(self, item: cache.Cached, known: FrozenSet[str]) -> Dict[str, Any]:
        try:
            if self.workers > 0:
                try:
                    return self._in_pool(item, known)
                except Exception:  # a worker killed, a pool that cannot start: here instead
                    pass
            return cache.refresh(item, known, row_of_file)
        except Exception as e:  # a bug, a full disk: this source's row says so, the others go on
            return {"status": "failed", "error": f"{type(e).__name__}: {e}", "note": None, "outputs": []}

    def _in_pool(self, item: cache.Cached, known: FrozenSet[str]) -> Dict[str, Any]:
        """``cache.refresh`` in a worker process. Where the pool fails, a new one next
        time; where that fails too, every import is made in this process from then on."""
        with self.cond:
            if self.pool is None:
                self.pool = cache.worker_pool(self.workers)
            pool = self.pool
        try:
            return pool.submit(cache.refresh, item, known, row_of_file).result()
        except Exception:
            with self.cond:
                if self.pool is pool:
                    self.pool = None
                    self.pool_failures += 1
                    if self.pool_failures >= 2:
                        self.workers = 0
            pool.shutdown(wait=False, cancel_futures=True)
            raise

    def _done(self, unit: Unit, seen: Optional[Stat], took: float, outcome: Dict[str, Any]) -> None:
        names: List[str] = []
        rows: List[Dict[str, Any]] = []
        main_dir = os.path.dirname(unit.item.out)
        for out, row in outcome["outputs"]:
            if out == unit.item.out:
                name: Optional[str] = unit.name
            elif unit.listed_under is not None:
                name = unit.listed_under + "/" + os.path.relpath(out, main_dir).replace(os.sep, "/")
            else:
                name = None  # a file PATH's sidechain: not listed
            if name is None:
                continue
            self.roots.imported[name] = out
            if out not in unit.outs and row is not None:
                unit.outs.add(out)
                names.append(name)
                rows.append(row)
        failed = outcome["status"] == "failed"
        with self.cond:
            for name in names:
                self.by_name[name] = unit
            unit.seen, unit.took, unit.finished_at = seen, took, time.monotonic()
            unit.error = str(outcome["error"]) if failed else None
            if outcome["note"] is not None:
                unit.note = outcome["note"]
            listed_failure = failed and not unit.outs and unit.finished == 0
        if names:
            self.shelf.add_rows(names, rows)
        elif listed_failure:
            why = visible(str(outcome["error"]))
            self.shelf.add_rows([unit.name], [{"error": why, "verdict": "unreadable", "why": why}], linked=False)
        with self.cond:
            unit.running = False
            unit.finished += 1
            if unit.wanted is not None:  # asked for again while it ran
                self.queue.append((unit.wanted, 0, unit))
                self.queue.sort(key=lambda entry: entry[:2])
            self.cond.notify_all()

    # -- the sources as they change -----------------------------------------------------------

    def _poll(self) -> None:
        rescan = time.monotonic() + RESCAN
        while not self.closed:
            time.sleep(POLL)
            now = time.monotonic()
            with self.cond:
                units = [u for u in self.units.values() if u.finished and u.wanted is None and not u.running
                         and now - u.finished_at >= SPACING * u.took]
            for unit in units:
                if _stat(unit.item.source) not in (unit.seen, None):
                    self._ask(unit, CHANGED)
            if now >= rescan:
                self._rescan()
                rescan = time.monotonic() + RESCAN

    def _rescan(self) -> None:
        """Walk the directory roots that hold sources again, for sessions started since."""
        with self.cond:
            tops = {u.name.split("/")[0] for u in self.units.values() if u.listed_under is not None}
        if not tops:
            return
        for entry in self.roots.walk(self._look_again, only=tops):
            if entry.source is not None and entry.name not in self.units:
                unit = self._unit(entry)
                if unit is not None:
                    self._ask(unit, CHANGED)

    def _look_again(self, path: str) -> Optional[str]:
        """What a file is, as the walk's look says: a source stays one; anything else is
        looked at again only where its size changed (a session file just made is empty)."""
        now = _stat(path)
        seen = self.looked.get(path)
        if seen is not None and (seen[1] not in (None, TRANSCRIPT) or now is not None and seen[0] == now[2]):
            return seen[1]
        found = look(path)
        if now is not None:
            self.looked[path] = (now[2], found)
        return found

    def close(self) -> None:
        """Stop: no more imports; the worker processes end at once (an import cut short is
        made again from its first line next time: the cache is disposable)."""
        with self.cond:
            self.closed = True
            pool, self.pool = self.pool, None
            self.cond.notify_all()
        if pool is not None:
            processes = list(getattr(pool, "_processes", {}).values())
            pool.shutdown(wait=False, cancel_futures=True)
            for process in processes:
                process.terminate()
