"""Who may talk to the viewer: one wrapper around everything it serves, static files included.

A local web server holding private transcripts. Every request passes, in this order:

1. the ``Host`` check (DNS rebinding): exactly one Host header, naming a loopback address
   (``127.0.0.1`` and the rest of 127/8, ``[::1]``) or ``localhost`` (or the ``--host``
   given) with the server's port; else 403;
2. the method: GET and HEAD only, every other method is 405 (nothing is ever written);
3. a cross-site request (``Sec-Fetch-Site: cross-site``/``same-site``) is 403;
4. the token, on everything but the page itself (``/``, ``/t/...``: one static file) and
   ``/static/``, which hold no data: ``Authorization: Bearer <token>`` (compared with
   ``secrets.compare_digest``); else 403. The URL printed at start carries it after ``#``,
   which a browser never sends to any server; the page keeps it in the tab's
   sessionStorage (this origin only, port included) and sends it as that header. Never a
   cookie: cookies ignore ports, so the browser would send one to every server on this
   host, and any of them could replay it.

Every answer carries the Content-Security-Policy (only the page's own script and style;
nothing loaded from elsewhere, no frames, no forms), ``X-Content-Type-Options: nosniff``,
``X-Frame-Options: DENY`` and ``Referrer-Policy: no-referrer``.
"""

from __future__ import annotations

import ipaddress
import secrets
from typing import Any, Awaitable, Callable, Dict, List, Optional, Tuple

Scope = Dict[str, Any]
Receive = Callable[[], Awaitable[Dict[str, Any]]]
Send = Callable[[Dict[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
       "font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")

HEADERS: List[Tuple[bytes, bytes]] = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
]


class Policy:
    """What the wrapper enforces, fixed at start: the port, extra allowed host, token."""

    def __init__(self, port: int, token: Optional[str] = None, host: Optional[str] = None) -> None:
        self.port = port
        self.token = token or secrets.token_urlsafe(32)
        self.extra_host = host.strip("[]").lower() if host and not _loopback(host.strip("[]")) else None
        self.bearer = ("bearer " + self.token).encode()

    def host_allowed(self, header: str) -> bool:
        host, port = _split_host(header)
        if host is None or port != self.port:
            return False
        return host == "localhost" or _loopback(host) or (self.extra_host is not None and host == self.extra_host)

    def authorized(self, headers: List[Tuple[bytes, bytes]]) -> bool:
        """Exactly one ``Authorization: Bearer <token>`` header, with this run's token."""
        given = [v for k, v in headers if k == b"authorization"]
        if len(given) != 1:
            return False
        scheme, _, token = given[0].partition(b" ")
        return secrets.compare_digest(scheme.lower() + b" " + token.strip(), self.bearer)


def needs_token(path: str) -> bool:
    """Everything but the page (one static file for ``/`` and every ``/t/NAME``) and its
    script, style and icon under ``/static/``: they hold no data."""
    return not (path == "/" or path.startswith("/t/") or path.startswith("/static/"))


def _split_host(header: str) -> Tuple[Optional[str], Optional[int]]:
    header = header.strip().lower()
    if header.startswith("["):
        host, sep, rest = header[1:].partition("]")
        if not sep or not rest.startswith(":"):
            return None, None
        port = rest[1:]
    else:
        host, sep, port = header.rpartition(":")
        if not sep or ":" in host:
            return None, None
    return (host, int(port)) if port.isdigit() and len(port) <= 5 else (None, None)


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class Guard:
    """The ASGI wrapper that applies a ``Policy`` to every request (see the module doc)."""

    def __init__(self, app: App, policy: Policy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            if scope["type"] == "lifespan":
                await self.app(scope, receive, send)
            return
        headers = scope.get("headers", [])
        hosts = [v.decode("latin-1") for k, v in headers if k == b"host"]
        if len(hosts) != 1 or not self.policy.host_allowed(hosts[0]):
            return await _refuse(send, 403, "403: this viewer answers only to the loopback address or localhost "
                                            "with its own port (the Host header said otherwise)")
        if scope["method"] not in ("GET", "HEAD"):
            return await _refuse(send, 405, "405: the viewer is read-only: GET and HEAD only",
                                 [(b"allow", b"GET, HEAD")])
        site = _header(headers, b"sec-fetch-site")
        if site in ("cross-site", "same-site"):
            return await _refuse(send, 403, "403: requests from other sites are refused")
        if needs_token(scope["path"]) and not self.policy.authorized(headers):
            return await _refuse(send, 403, "403: no token: open the URL that llm-agent-session view printed (its "
                                            "#token= part); an API client sends it as 'Authorization: Bearer TOKEN'")

        async def send_with_headers(message: Dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = list(message.get("headers", [])) + HEADERS
            await send(message)

        await self.app(scope, receive, send_with_headers)


def _header(headers: List[Tuple[bytes, bytes]], name: bytes) -> Optional[str]:
    for k, v in headers:
        if k == name:
            return v.decode("latin-1").strip().lower()
    return None


async def _refuse(send: Send, status: int, text: str, extra: Optional[List[Tuple[bytes, bytes]]] = None) -> None:
    body = (text + "\n").encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode()),
        (b"cache-control", b"no-store"), *HEADERS, *(extra or []),
    ]})
    await send({"type": "http.response.body", "body": body})
