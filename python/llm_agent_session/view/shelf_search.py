"""The shelf's search box: a text searched for in every transcript on the shelf, the hits
handed to the page as they are found (``/api/shelf-search``, docs/viewer.md).

A search is ``search_many`` over the PATHs given (the shelf's walk: the same names) and the
Claude Code and Codex sessions imported into the cache so far, on a thread of its own; its
hits, in walk order, are kept (up to its limit) for the page to read from a cursor: each
ask returns the hits from ``from`` on, waiting up to ``WAIT`` seconds for the next ones
(a long poll: a hit reaches the page as soon as it is found, without a request per hit).

The viewer keeps one ``SearchCache`` (in memory) for its life: a text searched again reads
only what changed since (a transcript unchanged is not read; one that grew is read from its
old end). A search the page stops asking for (``IDLE`` seconds), or is told to stop
(``stop=1``: a new text was typed), is cancelled; the last few are kept by their text, so
asking again (the same text, or more hits) is answered from what they hold or the cache.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Any, Dict, List, Optional, Tuple

from ..search_many import Hit, Search, SearchCache, search_many
from ..secrets import Redactor
from ..visible import visible
from . import background
from .problems import Problem
from .shelf import Roots, Shelf

#: Hits a search keeps for the page unless it asks for more, and the most it may ask for.
LIMIT = 100
MAX_LIMIT = 10_000
#: How long one ask waits for hits beyond its cursor.
WAIT = 0.25
#: A search not asked about for this long is cancelled (its page went away).
IDLE = 5.0
#: The searches kept, by text (the newest first).
KEEP = 4


class ShelfSearch:
    """One text searched for in every transcript, on a thread: its hits as they come."""

    def __init__(self, text: str, ignore_case: bool, limit: int, paths: List[str],
                 names: List[str], cache: SearchCache, redactor: Optional[Redactor] = None) -> None:
        self.text, self.ignore_case, self.limit = text, ignore_case, limit
        self.redactor = redactor if redactor is not None else Redactor()
        self.names = names  # each path's name: a PATH's label, or an imported transcript's name
        self.hits: List[Tuple[str, Hit]] = []
        self.done = False
        self.cancelled = False
        self.error: Optional[str] = None
        self.asked = time.monotonic()
        self.changed = threading.Condition()
        self.search: Search = search_many(text, paths, ignore_case=ignore_case, limit=limit, details=limit,
                                          cache=cache)
        self.thread = threading.Thread(target=self._run, name="view-shelf-search", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        with background.searching():  # the secret count waits meanwhile
            self._take_hits()

    def _take_hits(self) -> None:
        try:
            for found in self.search:
                if found.problem is not None or not found.hits:
                    continue  # not a transcript (a Claude Code source: its import is searched), or unreadable
                name = self._name(found.root, found.relative)
                with self.changed:
                    self.hits.extend((name, hit) for hit in found.hits if hit.id is not None)
                    self.changed.notify_all()
        except Exception as e:  # a search that fails says so; the viewer goes on
            self.error = f"the search stopped: {type(e).__name__}: {e}"
        finally:
            with self.changed:
                self.done = True
                self.changed.notify_all()

    def _name(self, root: int, relative: str) -> str:
        return self.names[root] + "/" + relative if relative else self.names[root]

    def cancel(self) -> None:
        self.cancelled = True
        self.search.cancel()

    @property
    def complete(self) -> bool:
        """Every transcript searched (not stopped by its limit, nor cancelled)."""
        return self.done and not self.cancelled and len(self.hits) < self.limit and self.error is None

    def since(self, start: int, limit: int, wait: float, rows: Dict[str, Dict[str, Any]]) -> Dict[str, Any]:
        """The hits from the `start`-th on, up to the `limit`-th, waiting up to `wait`
        seconds for one (`rows`: the shelf's rows by name, for each hit's title and link)."""
        self.asked = time.monotonic()
        deadline = self.asked + wait
        with self.changed:
            while start < limit and len(self.hits) <= start and not self.done:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self.changed.wait(left)
            hits = self.hits[start:limit]
            held = len(self.hits)
            done = self.done or held >= limit
            more = held > limit or (held >= limit and not self.complete)
        progress = self.search.progress()
        return {
            "hits": [_hit(name, hit, rows.get(visible(name)), self.redactor) for name, hit in hits],
            "count": start + len(hits),
            "done": done,
            "more": more,  # stopped at the limit: ask again with a bigger one for the next hits
            "limit": limit,
            "searched": progress.searched, "found": progress.found, "bytes": progress.bytes,
            "cached": progress.cached,
            "error": None if self.error is None else visible(self.error),
        }


def _hit(name: str, hit: Hit, row: Optional[Dict[str, Any]], redactor: Redactor) -> Dict[str, Any]:
    """A hit as the page shows it: where (the transcript's name, its shelf title and link,
    the envelope's id, line and time) and the snippet cut around the match, each string
    made visible (the page sets them as text). Where the envelope holds a secret (and the
    viewer masks them), the snippet is the match alone: a snippet's edge may cut a secret
    where the rules no longer know it (``masked`` says so)."""
    snippet = hit.snippet or ""
    at, end = hit.match if hit.match is not None else (0, 0)
    masked = bool(snippet) and redactor.holds_at(hit.path, hit.offset)
    if masked:
        snippet, at, end = "…" + snippet[at:end] + "…", 1, 1 + end - at
    shown = visible(name)
    title = row.get("title") if row is not None else None
    return {
        "name": shown,
        "link": row.get("link") if row is not None else (name if shown == name else None),
        "title": redactor.text(title) if isinstance(title, str) else title,
        "masked": masked,
        "id": visible(hit.id or ""),
        "line": hit.line,
        "ts": visible(hit.ts) if hit.ts else None,
        "type": visible(hit.type) if hit.type else None,
        "role": visible(hit.role) if hit.role else None,
        "before": visible(snippet[:at]),
        "match": visible(snippet[at:end]),
        "after": visible(snippet[end:]),
    }


class Searches:
    """The shelf's searches: the last few by text, the one the page asks about running."""

    def __init__(self, roots: Roots, shelf: Shelf, cache: Optional[SearchCache] = None,
                 redactor: Optional[Redactor] = None) -> None:
        self.roots = roots
        self.shelf = shelf
        self.redactor = redactor if redactor is not None else Redactor()
        self.cache = cache or SearchCache()
        self.kept: "OrderedDict[Tuple[str, bool], ShelfSearch]" = OrderedDict()
        self.lock = threading.Lock()
        self.rows: Dict[str, Dict[str, Any]] = {}  # the shelf's rows by name, as read so far
        self.read = 0

    def ask(self, text: str, ignore_case: bool, start: int, limit: int, stop: bool = False,
            wait: float = WAIT) -> Dict[str, Any]:
        """``/api/shelf-search``: the hits of `text` from `start` on (the search started, or
        started again for more hits, as needed); `stop`: cancel it instead."""
        if not text:
            raise Problem(400, "the parameter q (the text to search for) is missing")
        if not 1 <= limit <= MAX_LIMIT:
            raise Problem(400, f"limit is a number of hits from 1 to {MAX_LIMIT:,}")
        key = (text, ignore_case)
        with self.lock:
            self._cancel_idle()
            found = self.kept.get(key)
            if stop:
                if found is not None:
                    found.cancel()
                return {"stopped": True}
            if found is None or (found.limit < limit and not found.complete) or found.cancelled:
                if found is not None:
                    found.cancel()
                try:
                    found = self._start(text, ignore_case, max(limit, found.limit if found else limit))
                except ValueError as e:
                    raise Problem(400, str(e))
                self.kept[key] = found
            self.kept.move_to_end(key)
            while len(self.kept) > KEEP:
                self.kept.popitem(last=False)[1].cancel()
            rows = self._rows()
        return found.since(max(start, 0), limit, wait, rows)

    def _start(self, text: str, ignore_case: bool, limit: int) -> ShelfSearch:
        paths: List[str] = []
        names: List[str] = []
        for root in self.roots.roots.values():
            paths.append(root.real)
            names.append(root.label)
        imported = list(self.roots.imported.copy().items())  # (a dict's copy is atomic under the GIL)
        for name, path in imported:  # a Claude Code or Codex session: its import
            paths.append(path)
            names.append(name)
        return ShelfSearch(text, ignore_case, limit, paths, names, self.cache, self.redactor)

    def _rows(self) -> Dict[str, Dict[str, Any]]:
        self.shelf.start()  # (the shelf is read from the first ask, of its rows or of a search)
        got = self.shelf.since(self.read)
        for row in got["rows"]:
            if row.get("name") is not None:
                self.rows[row["name"]] = row
        self.read = got["count"]
        return self.rows

    def _cancel_idle(self) -> None:
        now = time.monotonic()
        for search in self.kept.values():
            if not search.done and now - search.asked > IDLE:
                search.cancel()

    def close(self) -> None:
        with self.lock:
            for search in self.kept.values():
                search.cancel()
