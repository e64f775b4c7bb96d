"""Start the viewer: bind, print the URL, open the browser, serve until Ctrl-C.

uvicorn serves the application on a socket bound here (loopback unless ``--host``; port 0
asks the system for a free one), so the URL, token included, is known and printed before
anything is served. The network policy is resolved once the port is bound
(``security.resolve_policy``) and holds every request from the first. The token is the URL's fragment (``#token=``): a browser sends it to
no server (security.py). The browser is opened through a file only this user can read
that redirects to the URL, so the token never appears in the browser's command line
(``ps``).
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import tempfile
import threading
import webbrowser
from typing import TYPE_CHECKING, List, Optional, TextIO

from ..visible import visible
from .imports import Imports
from .links import link
from .security import resolve_policy
from .shelf import Roots, Shelf

if TYPE_CHECKING:
    import uvicorn


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP named, and TCP_NODELAY on the listening socket (accepted ones inherit
    # it): asyncio sets no-delay only on sockets whose proto is IPPROTO_TCP, and a bare
    # SOCK_STREAM has proto 0. Without it every keep-alive request waited on Nagle and a
    # delayed ACK: 44-48 ms a request, against 6-16 ms (the 1 GB transcript's /api/locate).
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host, port))
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def page_name(shelf: Shelf, single: Optional[str]) -> Optional[str]:
    """The transcript to open first, as the page names it (an alias where its name holds
    what the page cannot carry); None for the shelf."""
    if single is None:
        return None
    return single if visible(single) == single else shelf.alias(single)


def open_browser(url: str, made: List[str]) -> None:
    """Open `url` through a 0600 redirect page (the token stays out of ``ps``); its folder
    is noted in `made`, for ``serve`` to remove when it stops."""
    folder = tempfile.mkdtemp(prefix="llm-agent-session-view-")
    made.append(folder)
    page = os.path.join(folder, "open.html")
    fd = os.open(page, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(f'<!doctype html><meta charset="utf-8"><meta http-equiv="refresh" content="0;url={url}">'
                f'<a href="{url}">open the viewer</a>\n')
    try:
        webbrowser.open("file://" + page)
    finally:
        # The browser has read it after a moment. A daemon timer: Ctrl-C never waits for
        # it (a plain one held the exit for 30 s); serve removes it then.
        remove = threading.Timer(30, _remove, args=(folder,))
        remove.daemon = True
        remove.start()


def _remove(folder: str) -> None:
    try:
        os.remove(os.path.join(folder, "open.html"))
    except OSError:
        pass
    try:
        os.rmdir(folder)
    except OSError:
        pass


def _stop_on_signals(server: "uvicorn.Server") -> None:
    """From the moment the URL is out, Ctrl-C and SIGTERM stop `server`, as uvicorn's own
    handler does once it runs: before that, Python's KeyboardInterrupt could land inside
    asyncio's start-up, which swallowed it, and the server ran on (one Ctrl-C in six sent
    just after the URL)."""
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, server.handle_exit)


def serve(paths: List[str], host: str, port: int, browser: bool, single: Optional[str],
          out: TextIO = sys.stdout, token: Optional[str] = None, redact: bool = True) -> int:
    """Serve `paths` on `host` (``security.listening_host``'s) and `port` (0: a free one)
    until Ctrl-C; `single`: the one transcript to open straight into. `redact` (the
    default): what the secret rules find is masked in all the page is sent."""
    sock = bind(host, port)
    try:
        policy = resolve_policy(host, sock.getsockname()[1], token)
    except BaseException:
        sock.close()
        raise
    shelf = Shelf(Roots(paths))
    imports = Imports(shelf)  # before the shelf is read: it hands the sources it finds over
    first = page_name(shelf, single)
    url = link("page", first, origin=policy.origin, token=policy.token)
    from ..secrets import Redactor
    from .model import Viewer

    viewer = Viewer(shelf.roots, shelf, imports, redactor=Redactor(enabled=redact))
    # The shelf's rows, or the transcript, are read while the server's packages are
    # imported and the browser starts.
    if first is None:
        shelf.start()
    else:
        threading.Thread(target=viewer.transcript, args=(first,), daemon=True).start()
    import uvicorn

    from .app import app
    from .limits import ACCEPT_BATCH, bounded_protocol, descriptor_limit, max_connections

    # h11 with bounds on header time and connections (limits.py); no WebSocket: none is served.
    config = uvicorn.Config(app(viewer, policy), log_level="warning", lifespan="off", ws="none",
                            http=bounded_protocol(max_connections(descriptor_limit())), backlog=ACCEPT_BATCH,
                            timeout_graceful_shutdown=1, access_log=False)
    config.load()  # (else the server's start does it, after the URL: the page's first request waited)
    server = uvicorn.Server(config)
    _stop_on_signals(server)
    # Printed once a request can be answered as soon as the server runs (packages imported,
    # the application made: 0.2 s): a page opened at once, as a script or a person with the
    # URL does, waited for them (0.07-0.6 s of its first screen on the 10 GB transcript).
    out.write(url + "\n")
    out.flush()
    made: List[str] = []  # the folder of the page that opens the browser
    if browser:
        opener = threading.Timer(0.2, open_browser, args=(url, made))
        opener.daemon = True
        opener.start()
    try:
        server.run(sockets=[sock])  # uvicorn stops on Ctrl-C, then raises it again
    except KeyboardInterrupt:
        pass
    finally:
        imports.close()
        for folder in made:
            _remove(folder)
    return 0
