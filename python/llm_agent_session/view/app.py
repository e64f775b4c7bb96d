"""The viewer's routes: a flat table of thin handlers (docs/viewer.md).

The page is one static file (``static/index.html``) for every page address (``/`` the
shelf, ``/t/NAME`` a transcript, ``?at=ID`` a place in it: ``links.py``); it asks the JSON
endpoints under ``/api/`` for everything else. A handler reads its request's parameters
and calls the viewer's state and view model (``model.py``) or the open transcript
(``transcript.py``: its window, jumps and search); a ``Problem`` raised on the way is
answered as ``{"error": ...}`` with its status. Handlers are plain functions run in
Starlette's thread pool. Every request has passed the security wrapper first
(``security.py``).
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any, Callable, Dict, Iterator, Optional, Tuple

from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from ..visible import visible
from . import background, model
from .links import TRANSCRIPT_PAGE, link
from .model import Viewer
from .problems import Problem
from .security import Guard, NetworkPolicy
from .shelf_search import LIMIT, Searches
from .transcript import Transcript
from .transcript_search import Reports

STATIC = os.path.join(os.path.dirname(__file__), "static")
NO_STORE = {"cache-control": "no-store"}


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
    name = request.query_params.get("t")
    if not name:
        raise Problem(400, "the parameter t (the transcript's name) is missing")
    return _viewer(request).transcript(name)


def _answer(handler: Callable[[Request], Any]) -> Callable[[Request], Response]:
    """A handler whose answer is JSON (or its own Response), and whose Problem becomes a
    JSON error with its status."""

    def run(request: Request) -> Response:
        try:
            result = handler(request)
        except Problem as p:
            return JSONResponse({"error": visible(str(p))}, status_code=p.status, headers=NO_STORE)
        if isinstance(result, Response):
            return result
        return JSONResponse(result, headers=NO_STORE)

    run.__name__ = handler.__name__
    return run


def page(request: Request) -> Response:
    files: _PageFiles = request.app.state.files
    return files.page()


async def static(request: Request) -> Response:
    """A file of the page, from memory (async: no thread of the pool for it)."""
    files: _PageFiles = request.app.state.files
    return files.answer(request.path_params["name"], request)


@_answer
def api_shelf(request: Request) -> Any:
    return _viewer(request).shelf_rows(_int(request, "from", 0))


@_answer
def api_transcript(request: Request) -> Any:
    t = _transcript(request)
    return model.info(t, _viewer(request).imports.note(t.name))


@_answer
def api_window(request: Request) -> Any:
    t = _transcript(request)
    answer = model.window(t, _int(request, "from", 0), _int(request, "count", 50),
                          request.query_params.get("mode", "history"))
    # The passes over big files may start (background.py) once this answer is sent: set
    # before, their first steps held the GIL while it waited to go out (up to 90 ms of a
    # reopened 10 GB transcript's first screen).
    return JSONResponse(answer, headers=NO_STORE, background=BackgroundTask(background.FIRST_WINDOW.set))


@_answer
def api_envelope(request: Request) -> Any:
    """One envelope: by ``i`` or ``id``; ``full=1``: nothing shortened; ``raw=1``: its line."""
    t, q = _transcript(request), request.query_params
    i = model.position_of(t, q["id"]) if "id" in q else _int(request, "i")
    if q.get("raw") == "1":
        return model.raw_line(t, i)
    return model.envelope(t, i, full=q.get("full") == "1")


@_answer
def api_locate(request: Request) -> Any:
    """Where to jump: ``id`` (any envelope, live or not), ``time`` (the first envelope in
    file order at or after it), or ``kind`` after or before ``from`` (``dir=back``);
    ``window=N``: with the window of N that holds it, as ``/api/window`` answers it."""
    t, q = _transcript(request), request.query_params
    if "id" in q:
        found = t.locate_id(q["id"])
    elif "time" in q:
        found = t.locate_time(q["time"])
    elif "kind" in q:
        found = t.locate_kind(q["kind"], _int(request, "from", -1), q.get("dir") == "back")
    else:
        raise Problem(400, "say id, time or kind")
    return model.with_window(t, found, _int(request, "window", 0))


@_answer
def api_search(request: Request) -> Any:
    """Search the whole file, streamed as JSON lines (``transcript_search.py``)."""
    t, q = _transcript(request), request.query_params
    start = _int(request, "from", 0)
    reports = t.search(q.get("q", ""), ignore_case=q.get("case") != "1", extras=q.get("extras") == "1", start=start)
    if reports is None:  # the hits are placed by the index: ask again in a moment
        return Response(b'{"wait": true}\n', media_type="application/x-ndjson", headers=NO_STORE)
    return StreamingResponse(_json_lines(reports), media_type="application/x-ndjson", headers=NO_STORE)


def _json_lines(reports: Reports) -> Iterator[bytes]:
    try:
        for report in reports:
            yield (json.dumps(report) + "\n").encode()
    finally:
        reports.close()  # the scan stops (the client went away)


class _PageFiles:
    """The page's files (``static/``), read once into memory and answered from there: a
    fresh server answered its first load's 21 files from disk through the thread pool in
    130-500 ms, most of a reopened transcript's first screen. Each is asked for again on
    every load (``no-cache``: a 304 by its ETag while unchanged). Left to a browser's own
    guess, each file would be kept for a time of its own: after an upgrade, one module of
    the new page beside another of the old."""

    TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8",
             ".html": "text/html; charset=utf-8", ".svg": "image/svg+xml"}

    def __init__(self, folder: str) -> None:
        self.files: Dict[str, Tuple[bytes, str, str]] = {}
        for where, _, names in os.walk(folder):
            for name in names:
                full = os.path.join(where, name)
                with open(full, "rb") as f:
                    data = f.read()
                kind = self.TYPES.get(os.path.splitext(name)[1], "application/octet-stream")
                tag = '"' + hashlib.sha256(data).hexdigest()[:32] + '"'
                self.files[os.path.relpath(full, folder).replace(os.sep, "/")] = (data, kind, tag)

    def page(self) -> Response:
        """The page itself, for every page address: never kept (``no-store``)."""
        data, kind, _ = self.files["index.html"]
        return Response(data, media_type=kind, headers=NO_STORE)

    def answer(self, name: str, request: Request) -> Response:
        found = self.files.get(name)
        if found is None:
            return Response("not found", status_code=404, media_type="text/plain")
        data, kind, tag = found
        headers = {"cache-control": "no-cache", "etag": tag}
        if tag in request.headers.get("if-none-match", ""):
            return Response(status_code=304, headers=headers)
        return Response(data, media_type=kind, headers=headers)


@_answer
def api_shelf_search(request: Request) -> Any:
    """Search every transcript on the shelf for ``q`` (``case=1``: match case), the hits
    from ``from`` on (at most ``limit`` in all; ``stop=1``: cancel it): ``shelf_search.py``."""
    q = request.query_params
    searches: Searches = request.app.state.searches
    return searches.ask(q.get("q", ""), ignore_case=q.get("case") != "1", start=_int(request, "from", 0),
                        limit=_int(request, "limit", LIMIT), stop=q.get("stop") == "1")


@_answer
def api_follow(request: Request) -> Any:
    t = _transcript(request)
    _viewer(request).catch_up(t)
    return model.follow(t)


@_answer
def api_reveal(request: Request) -> Any:
    """One masked secret: the envelope (``i`` or ``id``) and the marker's fingerprint ``fp``."""
    t, q = _transcript(request), request.query_params
    i = model.position_of(t, q["id"]) if "id" in q else _int(request, "i")
    fingerprint = q.get("fp", "")
    if len(fingerprint) != 12 or any(c not in "0123456789abcdef" for c in fingerprint):
        raise Problem(400, "fp must be a fingerprint: 12 hex digits, as the marker shows it")
    return model.reveal(t, i, fingerprint)


API = {"shelf": api_shelf, "transcript": api_transcript, "window": api_window, "envelope": api_envelope,
       "locate": api_locate, "search": api_search, "follow": api_follow, "shelf-search": api_shelf_search,
       "reveal": api_reveal}


def app(viewer: Viewer, policy: NetworkPolicy) -> Guard:
    """The ASGI application: the routes inside the security wrapper."""
    routes = [
        Route(link("page"), page),
        Route(TRANSCRIPT_PAGE + "{name:path}", page),
        *(Route(link(endpoint), handler) for endpoint, handler in API.items()),
        Route("/static/{name:path}", static),
    ]
    inner = Starlette(routes=routes)
    inner.state.files = _PageFiles(STATIC)
    inner.state.viewer = viewer
    inner.state.searches = Searches(viewer.roots, viewer.shelf, redactor=viewer.redactor)  # with one search cache for the viewer's life
    return Guard(inner, policy)  # type: ignore[arg-type]  # Starlette types scopes as MutableMapping
