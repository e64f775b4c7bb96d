"""Who may talk to the viewer: a network policy resolved once at start, and one wrapper
that enforces it on everything the viewer serves, static files included.

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

:func:`resolve_policy` checks what the command was given (the address to listen on, the
port bound, the token) and makes the frozen :class:`NetworkPolicy` every request is held
to; its first step, :func:`listening_host`, runs before anything is bound and refuses an
address no browser can name, saying why (a wildcard, a URL, a port, a space, an
interface scope, a name that is no name). :meth:`NetworkPolicy.refusal` decides a
request; :class:`Guard` is the wrapper that asks it.
"""

from __future__ import annotations

import ipaddress
import re
import secrets
import socket
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Dict, FrozenSet, List, NamedTuple, Optional, Tuple

Scope = Dict[str, Any]
Receive = Callable[[], Awaitable[Dict[str, Any]]]
Send = Callable[[Dict[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]
Headers = List[Tuple[bytes, bytes]]

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
       "font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")

HEADERS: Headers = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
]

#: The address listened on without --host.
DEFAULT_HOST = "127.0.0.1"
#: A token given (tests give their own): URL-safe, as it travels in an address and a header.
TOKEN_FORM = re.compile(r"[A-Za-z0-9_-]{8,}")
#: One label of a host name: letters, digits, ``-`` and ``_`` (as browsers take them).
LABEL = re.compile(r"[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?")


class PolicyRefused(ValueError):
    """What the command was given cannot make a network policy: why, and what to give instead."""


class Refusal(NamedTuple):
    """A request refused: its status, the text of the answer and any header it needs."""

    status: int
    text: str
    headers: Headers = []


HOST_REFUSED = Refusal(403, "403: this viewer answers only to the loopback address or localhost with its own port "
                            "(the Host header said otherwise)")
METHOD_REFUSED = Refusal(405, "405: the viewer is read-only: GET and HEAD only", [(b"allow", b"GET, HEAD")])
CROSS_SITE_REFUSED = Refusal(403, "403: requests from other sites are refused")
TOKEN_REFUSED = Refusal(403, "403: no token: open the URL that llm-agent-session view printed (its #token= part); "
                             "an API client sends it as 'Authorization: Bearer TOKEN'")


@dataclass(frozen=True)
class NetworkPolicy:
    """What every request is held to, fixed at start (made by :func:`resolve_policy`)."""

    host: str  # the address listened on, as a browser names it (an IPv6 one without brackets)
    port: int  # the port bound
    token: str
    names: FrozenSet[str]  # Host names allowed besides loopback addresses and localhost

    @property
    def origin(self) -> str:
        """``http://HOST:PORT``, as a browser is given it."""
        return f"http://[{self.host}]:{self.port}" if ":" in self.host else f"http://{self.host}:{self.port}"

    def refusal(self, method: str, path: str, headers: Headers) -> Optional[Refusal]:
        """Why a request is refused (the checks in the module doc's order), or None."""
        hosts = [v.decode("latin-1") for k, v in headers if k == b"host"]
        if len(hosts) != 1 or not self.host_allowed(hosts[0]):
            return HOST_REFUSED
        if method not in ("GET", "HEAD"):
            return METHOD_REFUSED
        if _header(headers, b"sec-fetch-site") in ("cross-site", "same-site"):
            return CROSS_SITE_REFUSED
        if needs_token(path) and not self.authorized(headers):
            return TOKEN_REFUSED
        return None

    def host_allowed(self, header: str) -> bool:
        """A Host header naming localhost, a loopback address or one of `names`, with the port."""
        host, port = _split_host(header)
        if host is None or port != self.port:
            return False
        return host == "localhost" or _loopback(host) or _canonical(host) in self.names

    def authorized(self, headers: Headers) -> bool:
        """Exactly one ``Authorization: Bearer <token>`` header, with this run's token."""
        given = [v for k, v in headers if k == b"authorization"]
        if len(given) != 1:
            return False
        scheme, _, token = given[0].partition(b" ")
        return secrets.compare_digest(scheme.lower() + b" " + token.strip(), b"bearer " + self.token.encode())


def resolve_policy(host: Optional[str], port: int, token: Optional[str] = None) -> NetworkPolicy:
    """The policy for a viewer listening on `host` (None: 127.0.0.1; see
    :func:`listening_host`) at `port` (the one bound), with `token` (None: a fresh random
    one). PolicyRefused where one of them cannot serve."""
    host = listening_host(host)
    if not isinstance(port, int) or isinstance(port, bool) or not 0 < port < 65536:
        raise PolicyRefused(f"the port must be the one bound, 1 to 65535, not {port!r}")
    if token is None:
        token = secrets.token_urlsafe(32)
    elif not isinstance(token, str) or not TOKEN_FORM.fullmatch(token):
        raise PolicyRefused("a token is 8 or more of A-Z, a-z, 0-9, '_' and '-' (it travels in an address and a header)")
    return NetworkPolicy(host, port, token, frozenset() if only_this_machine(host) else frozenset([host]))


def only_this_machine(host: str) -> bool:
    """Whether `host` (as :func:`listening_host` gives it) is reached from this machine
    alone: localhost or a loopback address (else anyone who can reach it may connect,
    and needs the token)."""
    return host == "localhost" or _loopback(host)


def listening_host(given: Optional[str]) -> str:
    """The address to listen on for ``--host`` `given`, as a browser names it (None:
    127.0.0.1; an IPv6 address in its short form, without brackets; an IPv4 address
    written otherwise, ``127.1``, as four numbers; a name in lower case). PolicyRefused
    for anything a browser's address cannot name, or names otherwise than the Host header
    it sends: the Host check would refuse every page."""
    if given is None:
        return DEFAULT_HOST
    host = given[1:-1] if given.startswith("[") and given.endswith("]") else given  # [::1] as a URL writes it
    _refuse_odd_characters(given, host)
    try:
        address: Any = ipaddress.ip_address(host)
    except ValueError:
        address = None
    if address is None and ":" in host:
        raise PolicyRefused(f"--host {given!r} is not an address: a port goes in --port, and an IPv6 address is "
                            "written ::1 or [::1]")
    if address is None:
        return _host_name(given, host.lower())
    if address.is_unspecified:
        raise PolicyRefused(_wildcard(given))
    return str(address.compressed)


def _refuse_odd_characters(given: str, host: str) -> None:
    if not host.strip():
        raise PolicyRefused("--host is empty: give the address to listen on, or leave --host out for 127.0.0.1")
    if not host.isascii():
        raise PolicyRefused(f"--host {given!r} is not ASCII: give the address, or the name as a browser sends it "
                            "(its xn-- form)")
    if any(c.isspace() or not c.isprintable() for c in host):
        raise PolicyRefused(f"--host {given!r} holds a space or a control character: give the address alone")
    if "%" in host:
        raise PolicyRefused(f"--host {given!r} names an interface scope (%...), which no browser's address can "
                            "carry: give an address without one")
    if any(c in host for c in "/\\?#@,[]"):
        raise PolicyRefused(f"--host {given!r} is not an address: give the address or name alone, no URL, path or "
                            "user (a port goes in --port)")


def _host_name(given: str, name: str) -> str:
    """A host name as a browser names it; PolicyRefused where a browser would not reach it by it."""
    labels = name.split(".")
    if name.endswith("."):
        raise PolicyRefused(f"--host {given!r} ends with a dot: give the name without it")
    if len(name) > 253 or not all(LABEL.fullmatch(label) for label in labels):
        raise PolicyRefused(f"--host {given!r} is not a host name (letters, digits and '-', in parts between dots) "
                            "nor an address")
    if labels[-1].isdigit() or labels[-1].startswith("0x"):
        # A browser reads a name ending in a number as an IPv4 address (127.1 is 127.0.0.1)
        # and sends it so in the Host header.
        try:
            address = ipaddress.IPv4Address(socket.inet_aton(name))
        except (OSError, ValueError):
            raise PolicyRefused(f"--host {given!r} ends in a number, so a browser reads it as an IPv4 address, "
                                "and it is none: give the address as four numbers (10.0.0.1)")
        if address.is_unspecified:
            raise PolicyRefused(_wildcard(given))
        return str(address)
    try:
        found = socket.getaddrinfo(name, None, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError):
        return name  # binding it says what is wrong (exit 1)
    if any(ipaddress.ip_address(str(address[4][0]).split("%")[0]).is_unspecified for address in found):
        raise PolicyRefused(_wildcard(given))
    return name


def _wildcard(given: str) -> str:
    """A wildcard listens on every interface, but a browser reaches the viewer at one of
    them, whose name the Host check cannot know in advance (every page got 403)."""
    return (f"--host {given!r} is a wildcard (every interface): a browser reaches the viewer at one address, which "
            "is what the viewer must be told to check. Give that address (this machine's address on the network), "
            "or leave --host out for 127.0.0.1")


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


def _canonical(host: str) -> str:
    """An address as :func:`listening_host` writes it (IPv6 in its short form); a name as it is."""
    try:
        return str(ipaddress.ip_address(host).compressed)
    except ValueError:
        return host


class Guard:
    """The ASGI wrapper that holds every request to a ``NetworkPolicy`` (see the module
    doc) and adds the security headers to every answer."""

    def __init__(self, app: App, policy: NetworkPolicy) -> None:
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            if scope["type"] == "lifespan":
                await self.app(scope, receive, send)
            return
        refused = self.policy.refusal(scope["method"], scope["path"], scope.get("headers", []))
        if refused is not None:
            return await _refuse(send, refused)

        async def send_with_headers(message: Dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = list(message.get("headers", [])) + HEADERS
            await send(message)

        await self.app(scope, receive, send_with_headers)


def _header(headers: Headers, name: bytes) -> Optional[str]:
    """The first `name` header, stripped and in lower case (None: there is none)."""
    for k, v in headers:
        if k == name:
            return v.decode("latin-1").strip().lower()
    return None


async def _refuse(send: Send, refused: Refusal) -> None:
    body = (refused.text + "\n").encode()
    await send({"type": "http.response.start", "status": refused.status, "headers": [
        (b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode()),
        (b"cache-control", b"no-store"), *HEADERS, *refused.headers,
    ]})
    await send({"type": "http.response.body", "body": body})
