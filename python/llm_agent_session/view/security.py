"""Who may talk to the viewer: one wrapper around everything it serves, static files included.

A local web server holding private transcripts. Every request passes, in this order:

1. the ``Host`` check (DNS rebinding): exactly one Host header, naming a loopback address
   (``127.0.0.1`` and the rest of 127/8, ``[::1]``) or ``localhost`` (or the ``--host``
   given) with the server's port; else 403;
2. the method: GET and HEAD only, every other method is 405 (nothing is ever written);
3. a cross-site request (``Sec-Fetch-Site: cross-site``/``same-site``) is 403;
4. the token: the URL printed at start carries ``?token=``; a request with the right one
   gets an HttpOnly, SameSite=Strict cookie and a redirect to the same URL without it, so
   the token leaves the address bar and the history. Every later request must carry that
   cookie (compared with ``secrets.compare_digest``); else 403.

Every answer carries the Content-Security-Policy (only the page's own script and style;
nothing loaded from elsewhere, no frames, no forms), ``X-Content-Type-Options: nosniff``,
``X-Frame-Options: DENY`` and ``Referrer-Policy: no-referrer``.
"""

from __future__ import annotations

import ipaddress
import secrets
from typing import Any, Awaitable, Callable, Dict, List, Optional, Tuple
from urllib.parse import parse_qsl, urlencode

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
        self.cookie = f"llm_agent_session_view_{port}"

    def host_allowed(self, header: str) -> bool:
        host, port = _split_host(header)
        if host is None or port != self.port:
            return False
        return host == "localhost" or _loopback(host) or (self.extra_host is not None and host == self.extra_host)


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
        query = scope.get("query_string", b"").decode("latin-1")
        pairs = parse_qsl(query, keep_blank_values=True)
        given = [v for k, v in pairs if k == "token"]
        if given:
            if not secrets.compare_digest(given[-1].encode(), self.policy.token.encode()):
                return await _refuse(send, 403, "403: wrong token: open the URL that llm-agent-session view printed")
            rest = urlencode([(k, v) for k, v in pairs if k != "token"])
            location = scope.get("raw_path", scope["path"].encode()).decode("latin-1") + ("?" + rest if rest else "")
            set_cookie = f"{self.policy.cookie}={self.policy.token}; Path=/; HttpOnly; SameSite=Strict"
            return await _refuse(send, 303, "303: to the same page without the token in the address",
                                 [(b"location", location.encode("latin-1")), (b"set-cookie", set_cookie.encode())])
        cookie = _cookie(headers, self.policy.cookie)
        if cookie is None or not secrets.compare_digest(cookie.encode(), self.policy.token.encode()):
            return await _refuse(send, 403, "403: no token: open the URL that llm-agent-session view printed "
                                            "(it carries the token once; this browser then keeps a cookie)")

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


def _cookie(headers: List[Tuple[bytes, bytes]], name: str) -> Optional[str]:
    for k, v in headers:
        if k != b"cookie":
            continue
        for part in v.decode("latin-1").split(";"):
            key, sep, value = part.strip().partition("=")
            if sep and key == name:
                return value
    return None


async def _refuse(send: Send, status: int, text: str, extra: Optional[List[Tuple[bytes, bytes]]] = None) -> None:
    body = (text + "\n").encode()
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode()),
        (b"cache-control", b"no-store"), *HEADERS, *(extra or []),
    ]})
    await send({"type": "http.response.body", "body": body})
