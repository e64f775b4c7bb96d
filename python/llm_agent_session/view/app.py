"""The viewer's routes: a flat table of thin handlers over the library (docs/viewer.md).

The page is one static file (``static/index.html``) for every page URL (``/`` the shelf,
``/t/NAME`` a transcript, ``?at=ID`` a place in it); it asks the JSON endpoints under
``/api/`` for everything else. Handlers are plain functions run in Starlette's thread
pool; the transcript logic is in ``transcript.py`` (peek, the index, the history),
``shelf.py`` (names and rows), ``render.py`` (an envelope as the page shows it) and the
library's ``search`` module.
"""

from __future__ import annotations

import json
import os
import queue
import threading
from collections import OrderedDict
from typing import Any, Dict, Iterator, List, Optional, Tuple

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from .. import search as text_search
from ..verdict import Verdict
from ..visible import json_visible, visible
from . import render
from .security import Guard, Policy
from .shelf import NameRefused, Roots, Shelf, verdict_words
from .transcript import JUMPS, Transcript, time_key

STATIC = os.path.join(os.path.dirname(__file__), "static")

LIMIT = 20_000  # characters of one value in a window; the rest on request ("more")
MAX_WINDOW = 200  # envelopes in one window
KEEP_OPEN = 3  # transcripts kept open (a 1 GB one holds about 0.2 GB)
# Bytes scanned between two reports of a search's progress: 1 MiB first (the first hits
# show at once), doubling to 64 MiB (a report per ~50 ms of scan on a 1 GB file).
FIRST_CHUNK = 1 << 20
SEARCH_CHUNK = 64 << 20
#: The names of the groups whose bits are set, for each set of bits (sorted, as sent).
GROUP_NAMES = [sorted(text_search.groups_named(bits)) for bits in range(16)]
MAX_HITS = 100_000  # hits sent for one search (the count goes on)


class Problem(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class Viewer:
    """What the routes serve: the roots, the shelf, the open transcripts."""

    def __init__(self, roots: Roots, shelf: Optional[Shelf] = None) -> None:
        self.roots = roots
        self.shelf = shelf or Shelf(roots)
        self.open: "OrderedDict[str, Transcript]" = OrderedDict()
        self.lock = threading.Lock()
        self.opening: Dict[str, threading.Lock] = {}
        self.removals: Dict[Tuple[int, int], Dict[str, Tuple[int, str]]] = {}

    def transcript(self, link: str) -> Transcript:
        """The open transcript a link names (opened on first use); Problem 403/404."""
        name = self.shelf.name_of(link)
        try:
            path = self.roots.resolve(name)
        except NameRefused as e:
            raise Problem(403, str(e))
        except (OSError, ValueError) as e:
            raise Problem(404, f"no transcript {visible(name)!s}: {visible(str(e))}")
        with self.lock:
            opening = self.opening.setdefault(name, threading.Lock())
        with opening:  # one peek per transcript, however many requests ask at once
            with self.lock:
                found = self.open.get(name)
                if found is not None and found.path == path:
                    self.open.move_to_end(name)
                    return found
            opened = Transcript(name, path)  # outside self.lock: other transcripts go on
            with self.lock:
                self.open[name] = opened
                while len(self.open) > KEEP_OPEN:
                    self.open.popitem(last=False)
            return opened

    def renderer(self, t: Transcript, limit: int = LIMIT) -> render.Renderer:
        history = t.history
        removals: Dict[str, Tuple[int, str]] = {}
        if history is not None:
            key = (id(history), history.count)
            with self.lock:
                cached = self.removals.get(key)
            if cached is None:
                with t.lock:
                    cached = {}
                    for message_id, removal in list(history.removed.items()):
                        n, first = cached.get(removal.by, (0, message_id))
                        cached[removal.by] = (n + 1, first)
                with self.lock:
                    self.removals = {key: cached}
            removals = cached
        return render.Renderer(history, removals, limit)


def _viewer(request: Request) -> Viewer:
    return request.app.state.viewer  # type: ignore[no-any-return]


def _int(request: Request, name: str, default: Optional[int] = None) -> int:
    raw = request.query_params.get(name)
    if raw is None:
        if default is None:
            raise Problem(400, f"the parameter {name} is missing")
        return default
    try:
        return int(raw)
    except ValueError:
        raise Problem(400, f"the parameter {name} must be a whole number")


def _transcript(request: Request) -> Transcript:
    link = request.query_params.get("t")
    if not link:
        raise Problem(400, "the parameter t (the transcript's name) is missing")
    return _viewer(request).transcript(link)


def _answer(handler: Any) -> Any:
    """A handler whose Problem becomes a JSON error with its status."""

    def run(request: Request) -> Response:
        try:
            result = handler(request)
        except Problem as p:
            return JSONResponse({"error": visible(str(p))}, status_code=p.status, headers={"cache-control": "no-store"})
        if isinstance(result, Response):
            return result
        return JSONResponse(result, headers={"cache-control": "no-store"})

    run.__name__ = handler.__name__
    return run


# -- pages ------------------------------------------------------------------------------


def page(request: Request) -> Response:
    return FileResponse(os.path.join(STATIC, "index.html"), headers={"cache-control": "no-store"})


# -- the data API -----------------------------------------------------------------------


@_answer
def api_shelf(request: Request) -> Any:
    viewer = _viewer(request)
    viewer.shelf.start()
    return viewer.shelf.since(max(_int(request, "from", 0), 0))


def _info(t: Transcript) -> Dict[str, Any]:
    v = t.verdict
    state = t.live()
    return {
        "name": visible(t.name),
        "generation": t.generation,
        "count": t.count,
        "size": t.size,
        "end": t.end,
        "meta": json.loads(json_visible(json.dumps(t.meta, ensure_ascii=False))),
        "title": visible(t.meta["title"]) if isinstance(t.meta.get("title"), str) else None,
        "warnings": len(t.warnings),
        "first_warnings": [visible(w) for w in t.warnings[:20]],
        "error": visible(t.error) if t.error else None,
        "ready": t.ready,
        "verdict": None if v is None else _verdict(v),
        "live": None if state is None else len(state.ids),
        # pending(): not every operation's state (a native read would build them all)
        "pending": None if t.history is None else len(t.history.pending()),
        "problems": None if t.history is None else [
            {"i": p.index, "id": visible(p.id), "reason": visible(p.reason)} for p in t.history.problems[:20]],
    }


def _verdict(v: Verdict) -> Dict[str, Any]:
    """Load's verdict in the shelf's words (``kind`` as the dataset names it, ``code`` the
    exit code check returns for it)."""
    text, why = verdict_words(v)
    return {"kind": v.kind.value, "code": v.kind.number, "text": text, "why": why}


@_answer
def api_transcript(request: Request) -> Any:
    return _info(_transcript(request))


@_answer
def api_window(request: Request) -> Any:
    t = _transcript(request)
    start = _int(request, "from", 0)
    count = min(max(_int(request, "count", 50), 0), MAX_WINDOW)
    mode = request.query_params.get("mode", "history")
    r = _viewer(request).renderer(t)
    if mode == "live":
        state = t.live()
        if state is None:
            return {"ready": False, "count": None, "items": []}
        with t.lock:
            ids, messages = list(state.ids[start:start + count]), list(state.messages[start:start + count])
            total = len(state.ids)
        items = []
        for offset, (entry_id, message) in enumerate(zip(ids, messages)):
            items.append(r.live(start + offset, entry_id, message, _is_compaction(t, entry_id)))
        return {"ready": True, "count": total, "items": items, "generation": t.generation}
    if mode != "history":
        raise Problem(400, "mode is history or live")
    items = [r.envelope(i, e) for i, e in t.window(start, count)]
    return {"ready": True, "count": t.count, "items": items, "generation": t.generation}


def _is_compaction(t: Transcript, entry_id: str) -> bool:
    i = t.index_of_id(entry_id, scan=False)
    return i is not None and t.envelope(i).type == "compaction"


@_answer
def api_envelope(request: Request) -> Any:
    """One envelope: by ``i`` or ``id``; ``full=1``: nothing shortened; ``raw=1``: its line."""
    t = _transcript(request)
    if "id" in request.query_params:
        i = t.index_of_id(request.query_params["id"])
        if i is None:
            raise Problem(404, "no envelope with that id in this transcript")
    else:
        i = _int(request, "i")
    if not 0 <= i < t.count:
        raise Problem(404, f"no envelope at {i}: the transcript holds {t.count:,}")
    if request.query_params.get("raw") == "1":
        return {"i": i, "raw": json_visible(t.line(i).decode("utf-8", "replace"))}
    full = request.query_params.get("full") == "1"
    return _viewer(request).renderer(t, 0 if full else LIMIT).envelope(i, t.envelope(i))


@_answer
def api_locate(request: Request) -> Any:
    """Where to jump: ``id`` (any envelope, live or not), ``time`` (the first envelope in
    file order at or after it), or ``kind`` (``JUMPS``) after or before ``from``."""
    t = _transcript(request)
    q = request.query_params
    if "id" in q:
        if t.history is None and not t.ready["index"]:
            return {"i": None, "wait": True}  # the offsets the id's line is placed by: a moment
        i = t.index_of_id(q["id"])
        live = None
        state = t.live()
        if state is not None and i is not None:
            with t.lock:
                live = state.position(q["id"]) if hasattr(state, "position") else None
        return {"i": i, "live": live}
    if "time" in q:
        key = time_key(_normal_time(q["time"]))
        if key < 0:
            raise Problem(400, "time is YYYY-MM-DDTHH:MM[:SS[.ffffff]][Z] (UTC)")
        if not t.ready["index"]:
            return {"i": None, "wait": True}
        return {"i": t.index_of_time(key)}
    if "kind" in q:
        kind = q["kind"]
        if kind not in JUMPS:
            raise Problem(400, f"kind is one of {', '.join(JUMPS)}")
        if kind not in ("tool-call", "compaction", "rewind") and t.history is None or not t.ready["index"]:
            return {"i": None, "wait": True}
        return {"i": t.next_of(kind, _int(request, "from", -1), q.get("dir") == "back")}
    raise Problem(400, "say id, time or kind")


def _normal_time(text: str) -> str:
    text = text.strip().replace(" ", "T")
    if len(text) == 10:
        text += "T00:00"
    if len(text) == 16:
        text += ":00"
    return text


@_answer
def api_follow(request: Request) -> Any:
    """Read what was appended since (``Session.peek`` from the last end, with the file's
    identity): the new count, and a new generation when the file was replaced."""
    t = _transcript(request)
    t.refresh()
    state = t.live()
    return {"count": t.count, "generation": t.generation, "size": t.size, "ready": t.ready,
            "live": None if state is None else len(state.ids)}


@_answer
def api_search(request: Request) -> Any:
    """Search the whole file; streamed as JSON lines: ``{"hits": [[i, [groups]], ...],
    "scanned": bytes, "size": bytes}`` as found, then ``{"done": true, "total": n}``."""
    t = _transcript(request)
    text = request.query_params.get("q", "")
    if not text:
        raise Problem(400, "q (the text to search for) is empty")
    ignore_case = request.query_params.get("case") != "1"
    want = 0b1111 if request.query_params.get("extras") == "1" else 0b0111  # bits of text_search.GROUPS
    start = max(_int(request, "from", 0), 0)
    try:
        needle = text_search.needle(text, ignore_case)
    except ValueError as e:
        raise Problem(400, str(e))
    if b"\n" in needle:
        raise Problem(400, "q holds a newline, which no line holds")

    def scan(found: "queue.Queue[Any]") -> None:
        """The scan, in its own thread (the core releases the GIL): the core finds the
        lines and says where in each envelope the text is while the line is in memory;
        this thread only places the hits."""
        try:
            fd = os.open(t.path, os.O_RDONLY)
        except OSError as e:
            found.put(e)
            return
        try:
            end, at, chunk = t.end, start, FIRST_CHUNK
            while at < end and not stop.is_set():
                lines, groups, at = text_search.find_hits(fd, needle, at, min(at + chunk, end), ignore_case)
                chunk = min(chunk * 2, SEARCH_CHUNK)
                found.put((lines, groups, at, end))
            found.put(None)
        except Exception as e:  # reported in the stream
            found.put(e)
        finally:
            os.close(fd)

    def stream() -> Iterator[bytes]:
        found: "queue.Queue[Any]" = queue.Queue(maxsize=64)
        threading.Thread(target=scan, args=(found,), name="view-search", daemon=True).start()
        total = sent = candidates = scanned = 0
        size = t.end
        try:
            while True:
                item = found.get()
                if item is None:
                    break
                if isinstance(item, Exception):
                    yield (json.dumps({"error": visible(str(item))}) + "\n").encode()
                    return
                lines, line_groups, scanned, size = item
                candidates += len(lines)
                hits: List[Any] = []
                for i, found_in in zip(t.indexes_of_offsets(lines), line_groups):
                    groups = found_in & want if found_in > 0 else 0
                    if groups and i is not None:
                        total += 1
                        if sent < MAX_HITS:
                            hits.append([i, GROUP_NAMES[groups]])
                            sent += 1
                yield (json.dumps({"hits": hits, "total": total, "lines": candidates, "scanned": scanned,
                                   "size": size}) + "\n").encode()
            yield (json.dumps({"done": True, "total": total, "lines": candidates, "scanned": size,
                               "size": size}) + "\n").encode()
        finally:
            stop.set()

    stop = threading.Event()
    if not t.ready["index"]:  # the hits are placed by the index: ask again in a moment
        return Response(b'{"wait": true}\n', media_type="application/x-ndjson", headers={"cache-control": "no-store"})
    return StreamingResponse(stream(), media_type="application/x-ndjson", headers={"cache-control": "no-store"})


class _PageFiles(StaticFiles):
    """The page's files, asked for again on every load (``no-cache``: a 304 by the ETag
    while unchanged). Left to a browser's own guess, each file would be kept for a time of
    its own: after an upgrade, one module of the new page beside another of the old."""

    def file_response(self, *args: Any, **kwargs: Any) -> Response:
        response = super().file_response(*args, **kwargs)
        response.headers["cache-control"] = "no-cache"
        return response


def app(viewer: Viewer, policy: Policy) -> Guard:
    """The ASGI application: the routes inside the security wrapper."""
    routes = [
        Route("/", page),
        Route("/t/{name:path}", page),
        Route("/api/shelf", api_shelf),
        Route("/api/transcript", api_transcript),
        Route("/api/window", api_window),
        Route("/api/envelope", api_envelope),
        Route("/api/locate", api_locate),
        Route("/api/search", api_search),
        Route("/api/follow", api_follow),
        Mount("/static", _PageFiles(directory=STATIC), name="static"),
    ]
    inner = Starlette(routes=routes)
    inner.state.viewer = viewer
    return Guard(inner, policy)  # type: ignore[arg-type]  # Starlette types scopes as MutableMapping
