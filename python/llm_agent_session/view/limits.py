"""Bounds on the viewer's connections, so that no local process can lock the user out.

uvicorn's HTTP/1.1 protocol waits for a request's headers as long as the client likes and
accepts connections until the process runs out of file descriptors: about 1,020 requests
that never finish (no token needed, since the check runs once the headers are in) made
the viewer unreachable for as long as they were held. Here, on top of that protocol:

* a request's headers must be in within ``HEADER_SECONDS`` of the connection (or of the
  last response, on a connection kept alive); else the connection is closed;
* at most ``max_connections()`` connections are open at once, well under the descriptors
  the process may hold (its soft limit is raised where the hard one allows); past that, the connection that has waited longest for its
  headers is closed to make room (or, when every one is busy with a request, the new
  one). A browser sends its request's headers at once, so its request is served.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from typing import Any, Optional

#: Seconds a connection may take to send a request's headers.
HEADER_SECONDS = 10.0
#: Connections at most, whatever the descriptors allow (a browser opens about six).
MOST_CONNECTIONS = 256
#: Connections accepted in one turn of the event loop (and the listening queue): asyncio
#: accepts that many before the first of them is seen here, so it bounds the overshoot.
ACCEPT_BATCH = 64
#: The soft limit on open files asked for where it is lower and the hard limit allows.
WANTED_DESCRIPTORS = 8192


def descriptor_limit() -> Optional[int]:
    """The soft limit on this process's open files, raised toward ``WANTED_DESCRIPTORS``
    where the hard limit allows (many systems start programs at 1,024); None where there
    is no such limit (Windows)."""
    try:
        import resource
    except ImportError:
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < WANTED_DESCRIPTORS:
        wanted = WANTED_DESCRIPTORS if hard == resource.RLIM_INFINITY else min(WANTED_DESCRIPTORS, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
            soft = wanted
        except (OSError, ValueError):
            pass
    return None if soft == resource.RLIM_INFINITY else soft


def max_connections(descriptors: Optional[int]) -> int:
    """How many connections the server keeps open at most: half of what the open-file
    limit leaves after the accept batches in flight (those not yet seen here, those
    closed and not yet gone) and everything else (transcripts, the shelf's workers)."""
    if descriptors is None:
        return MOST_CONNECTIONS
    return max(16, min(MOST_CONNECTIONS, (descriptors - 4 * ACCEPT_BATCH) // 2))


def bounded_protocol(limit: int, header_seconds: float = HEADER_SECONDS) -> type:
    """uvicorn's h11 protocol with these bounds, for one server (``Config(http=...)``)."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    # The connections waiting for a request's headers, the longest waiting first; and
    # every connection not yet closed by us (uvicorn's own set keeps one until it is gone).
    waiting: "OrderedDict[Any, None]" = OrderedDict()
    alive: "OrderedDict[Any, None]" = OrderedDict()

    class Bounded(H11Protocol):
        _timer: Optional[asyncio.TimerHandle] = None
        _cycle_awaited: Any = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            alive[self] = None
            self._await_headers()
            if len(alive) > limit:  # room for this one: the one that waited longest goes
                oldest = next((c for c in waiting if c is not self), self)
                oldest._drop()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self in waiting and self.cycle is not self._cycle_awaited:
                self._headers_in()  # a request began: its headers are in

        def on_response_complete(self) -> None:
            answered = self.cycle
            super().on_response_complete()
            if self.cycle is answered and not self.transport.is_closing():
                self._await_headers()  # kept alive: the next request's headers are timed too

        def connection_lost(self, exc: Optional[Exception]) -> None:
            self._forget()
            super().connection_lost(exc)

        def _await_headers(self) -> None:
            self._cycle_awaited = self.cycle
            waiting[self] = None
            waiting.move_to_end(self)
            if self._timer is not None:
                self._timer.cancel()
            self._timer = self.loop.call_later(header_seconds, self._drop)

        def _headers_in(self) -> None:
            waiting.pop(self, None)
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

        def _forget(self) -> None:
            self._headers_in()
            alive.pop(self, None)

        def _drop(self) -> None:
            """Close a connection still waiting for a request's headers."""
            self._forget()
            if not self.transport.is_closing():
                self.transport.close()

    return Bounded
