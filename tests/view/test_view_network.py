"""Who may talk to the viewer: one table of hostile requests (and of what must pass), each
sent to the real application, security wrapper and routes, in process; and the network
policy resolved at start, which refuses an address no browser can name.

The requests are ASGI calls made here rather than through an HTTP client: a client
always sends one Host header, and the table needs none and two as well."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

import pytest
from tests.support.view import PORT, TOKEN, build_shelf

from llm_agent_session.view.app import app
from llm_agent_session.view.model import Viewer
from llm_agent_session.view.security import CSP, NetworkPolicy, PolicyRefused, listening_host, resolve_policy
from llm_agent_session.view.shelf import Roots

HOST = f"127.0.0.1:{PORT}"
BEARER = f"Bearer {TOKEN}"
#: The page (one static file for every page address) and its script and style: no data, no token needed.
PAGE = ("/", "/t/shelf/run.jsonl", "/static/viewer.js", "/static/viewer.css")
#: Everything else needs the token (the last two answer 404 once it is given).
DATA = ("/api/shelf", "/api/transcript?t=shelf/run.jsonl", "/api/window?t=shelf/run.jsonl",
        "/api/search?t=shelf/run.jsonl&q=SECRET", "/api/follow?t=shelf/run.jsonl", "/nowhere", "//api/shelf")
SERVED = DATA[:-2]  # the data paths that answer 200 with the token
EVERYTHING = PAGE + DATA


@dataclass
class Ask:
    """A request: its method and headers (``host`` is ``HOST`` unless given; None: none)."""

    headers: List[Tuple[str, str]] = field(default_factory=list)
    host: Optional[List[str]] = None
    method: str = "GET"

    def raw(self) -> List[Tuple[bytes, bytes]]:
        hosts = [HOST] if self.host is None else self.host
        return [(b"host", h.encode("latin-1")) for h in hosts] + [
            (k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in self.headers]


def token(*extra: Tuple[str, str]) -> List[Tuple[str, str]]:
    return [("authorization", BEARER), *extra]


# (what it is, the request, the paths, the status every one of them gets)
TABLE: List[Tuple[str, Ask, Tuple[str, ...], int]] = [
    # -- Host: exactly one, naming loopback or localhost, with the server's port (DNS rebinding)
    *[(f"host {h}", Ask(token(), [h]), ("/", "/api/shelf"), 200) for h in (
        f"127.0.0.1:{PORT}", f"localhost:{PORT}", f"LocalHost:{PORT}", f"[::1]:{PORT}", f"127.0.0.2:{PORT}",
        f"127.255.0.9:{PORT}", f"[0:0:0:0:0:0:0:1]:{PORT}")],
    *[(f"host {h}", Ask(token(), [h]), EVERYTHING, 403) for h in (
        "evil.example", f"evil.example:{PORT}", f"127.0.0.1:{PORT + 1}", "127.0.0.1", "localhost",
        f"10.0.0.1:{PORT}", f"[::2]:{PORT}", f"localhost.evil.example:{PORT}", f"127.0.0.1.nip.io:{PORT}",
        f"localhost.:{PORT}", f"attacker@127.0.0.1:{PORT}", f"::1:{PORT}", "[::1]", f"[::1:{PORT}",
        f"127.0.0.1:{PORT}:{PORT}", f"127.0.0.1:{PORT}0", f"127.0.0.1:-{PORT}", "", f"[::ffff:a00:1]:{PORT}")],
    ("two Host headers, both right", Ask(token(), [HOST, HOST]), EVERYTHING, 403),
    ("two Host headers, one of them another's", Ask(token(), [HOST, f"evil.example:{PORT}"]), EVERYTHING, 403),
    ("two Host headers, another's first", Ask(token(), [f"evil.example:{PORT}", HOST]), EVERYTHING, 403),
    ("no Host header", Ask(token(), []), EVERYTHING, 403),
    # -- methods: GET and HEAD only, whatever else the request holds (405 before the token)
    *[(f"{m} without a token", Ask([], method=m), ("/", "/api/window?t=shelf/run.jsonl") + DATA, 405)
      for m in ("POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "CONNECT", "PROPFIND", "get")],
    *[(f"{m} with the token", Ask(token(), method=m), EVERYTHING, 405) for m in ("POST", "PUT", "DELETE", "PATCH",
                                                                                 "OPTIONS")],
    ("HEAD of the page, no token", Ask([], method="HEAD"), PAGE, 200),
    ("HEAD with the token", Ask(token(), method="HEAD"), PAGE + SERVED, 200),
    ("HEAD without the token", Ask([], method="HEAD"), DATA, 403),
    ("HEAD with a token in the query", Ask([], method="HEAD"), tuple(f"{p}{'&' if '?' in p else '?'}token={TOKEN}"
                                                                     for p in DATA), 403),
    # -- cross-site: what a browser marks as sent by another site, token or not
    ("Sec-Fetch-Site: cross-site", Ask(token(("sec-fetch-site", "cross-site"))), EVERYTHING, 403),
    ("Sec-Fetch-Site: same-site", Ask(token(("sec-fetch-site", "same-site"))), EVERYTHING, 403),
    ("Sec-Fetch-Site: Cross-Site, spaced", Ask(token(("sec-fetch-site", " Cross-Site "))), EVERYTHING, 403),
    ("Sec-Fetch-Site: same-origin", Ask(token(("sec-fetch-site", "same-origin"))), PAGE + SERVED, 200),
    ("Sec-Fetch-Site: none (typed in)", Ask(token(("sec-fetch-site", "none"))), PAGE + SERVED, 200),
    # -- the token: exactly one Authorization: Bearer header; nothing else grants anything
    *[(f"no token: {h}", Ask(h), DATA, 403) for h in (
        [], [("authorization", "Bearer wrong")], [("authorization", TOKEN)], [("authorization", f"Basic {TOKEN}")],
        [("authorization", "Bearer")], [("authorization", "Bearer ")], [("authorization", "")],
        [("authorization", f"Bearer {TOKEN}x")], [("authorization", f"Bearer {TOKEN[:-1]}")],
        [("authorization", f"xBearer {TOKEN}")], [("authorization", f"Bearer\t{TOKEN}")],
        [("authorization", f"Token {TOKEN}")], [("authorization", f"Bearer Bearer {TOKEN}")],
        [("authorization", BEARER), ("authorization", BEARER)], [("authorization", BEARER), ("authorization", "x")],
        [("cookie", f"llm_agent_session_view_{PORT}={TOKEN}")],
        [("cookie", f"llm_agent_session_view_{PORT + 1}={TOKEN}")],  # a cookie named for another port
        [("cookie", f"token={TOKEN}")], [("x-token", TOKEN)], [("x-authorization", BEARER)],
        [("proxy-authorization", BEARER)])],
    ("a token in the query string", Ask([]), tuple(f"{p}{'&' if '?' in p else '?'}token={TOKEN}" for p in DATA), 403),
    ("the token, lower-case scheme (RFC 7235)", Ask([("authorization", f"bearer {TOKEN}")]), SERVED, 200),
    ("the token, upper-case scheme", Ask([("authorization", f"BEARER {TOKEN}")]), SERVED, 200),
    # -- what must pass
    ("the page without a token", Ask([]), PAGE, 200),
    ("the page with the token", Ask(token()), PAGE, 200),
    ("the page, a cookie of another port beside", Ask([("cookie", f"llm_agent_session_view_{PORT + 1}=x")]), PAGE,
     200),
    ("the data with the token", Ask(token()), SERVED, 200),
    ("the token, no route", Ask(token()), ("/nowhere", "//api/shelf", "/api/nothing", "/static/nothing.js"), 404),
]


@pytest.fixture(scope="module")
def guarded(tmp_path_factory):
    """The viewer as served, over the usual shelf (built once: every row asks it)."""
    shelf = build_shelf(str(tmp_path_factory.mktemp("network") / "shelf"))
    return app(Viewer(Roots([shelf.root])), resolve_policy("127.0.0.1", PORT, TOKEN))


def ask(application: Any, request: Ask, target: str) -> Tuple[int, Dict[str, str], bytes]:
    """`request` for `target` through the ASGI application: status, headers, body."""
    path, _, query = target.partition("?")
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": request.method,
             "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": query.encode(),
             "root_path": "", "headers": request.raw(), "client": ("127.0.0.1", 50000),
             "server": ("127.0.0.1", PORT)}
    sent: List[Dict[str, Any]] = []

    async def run() -> None:
        answered = asyncio.Event()
        asked = False

        async def receive() -> Dict[str, Any]:
            nonlocal asked
            if not asked:
                asked = True
                return {"type": "http.request", "body": b"", "more_body": False}
            await answered.wait()  # as a server does: the client is there until the answer is sent
            return {"type": "http.disconnect"}

        async def send(message: Dict[str, Any]) -> None:
            sent.append(message)
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                answered.set()

        await application(scope, receive, send)

    asyncio.run(run())
    start = next(m for m in sent if m["type"] == "http.response.start")
    headers: Dict[str, str] = {}
    for k, v in start["headers"]:
        headers.setdefault(k.decode("latin-1").lower(), v.decode("latin-1"))
    return start["status"], headers, b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")


@pytest.mark.parametrize("what,request_,paths,status", TABLE, ids=[row[0] for row in TABLE])
def test_a_request(guarded, what, request_, paths, status, backend_name):
    """Each row: every path answers `status`, with the security headers and no cookie; a
    refusal shows nothing of a transcript; a 405 says what is allowed. (An answer to HEAD
    is sent here with its body, which the server leaves out on the wire.)"""
    if backend_name != "pure":
        pytest.skip("backend-independent: checked once, in the pure run")
    for target in paths:
        got, headers, body = ask(guarded, request_, target)
        assert got == status, (what, target, got, body[:200])
        assert headers["content-security-policy"] == CSP, target
        assert (headers["x-content-type-options"], headers["x-frame-options"]) == ("nosniff", "DENY"), target
        assert "set-cookie" not in headers, target
        if status in (403, 405):
            assert b"SECRET" not in body and b"run.jsonl" not in body and b"secret-build-log" not in body, target
        if status == 405:
            assert headers["allow"] == "GET, HEAD", target
        if status == 200 and target in PAGE:  # the page holds no data
            assert b"SECRET" not in body and b"shelf/run.jsonl" not in body, target
        if status == 200 and request_.method == "GET" and target in PAGE[:2]:
            assert b'<script src="/static/viewer.js"' in body, target


def test_the_table_covers_what_it_must():
    names = " ".join(row[0] for row in TABLE)
    for needed in ("two Host headers", "no Host header", "cross-site", "same-site", "another port", "HEAD with the token",
                   "in the query", "cookie", "Bearer ", f"host [::1]:{PORT}", "nip.io", "POST", "the page without"):
        assert needed in names, needed


# -- the policy, resolved once at start ------------------------------------------------------

@pytest.mark.parametrize("given,listened", [
    (None, "127.0.0.1"), ("127.0.0.1", "127.0.0.1"), ("::1", "::1"), ("[::1]", "::1"),
    ("0:0:0:0:0:0:0:1", "::1"), ("localhost", "localhost"), ("LOCALHOST", "localhost"), ("127.1", "127.0.0.1"),
    ("10.1", "10.0.0.1"), ("0x7f.1", "127.0.0.1"), ("2001:DB8:0:0::1", "2001:db8::1"),
    ("[2001:db8::1]", "2001:db8::1"), ("192.168.1.20", "192.168.1.20"),
])
def test_the_address_listened_on_is_the_one_a_browser_names(given, listened, backend_name):
    if backend_name != "pure":
        pytest.skip("backend-independent: checked once, in the pure run")
    assert listening_host(given) == listened
    policy = resolve_policy(given, PORT, TOKEN)
    assert (policy.host, policy.port, policy.token) == (listened, PORT, TOKEN)


@pytest.mark.parametrize("given,says", [
    ("", "is empty"), ("   ", "is empty"), ("[]", "is empty"),
    ("0.0.0.0", "is a wildcard (every interface)"), ("::", "is a wildcard"), ("[::]", "is a wildcard"),
    ("0", "is a wildcard"), ("0.0", "is a wildcard"), ("0x0", "is a wildcard"),
    ("127.0.0.1:8000", "a port goes in --port"), ("localhost:8000", "a port goes in --port"),
    ("[::1]:8000", "is not an address"), ("http://127.0.0.1", "no URL, path or user"),
    ("127.0.0.1/view", "no URL, path or user"), ("user@127.0.0.1", "no URL, path or user"),
    ("a,b", "no URL, path or user"), ("[::1", "no URL, path or user"), ("my host", "holds a space"),
    ("127.0.0.1 ", "holds a space"), ("\tlocalhost", "holds a space"), ("local\x00host", "control character"),
    ("fe80::1%eth0", "interface scope"), ("bücher.example", "is not ASCII"), ("host.", "ends with a dot"),
    ("-bad.example", "is not a host name"), ("a..b", "is not a host name"), ("*.example", "is not a host name"),
    ("x" * 64 + ".example", "is not a host name"), ("1.2.3.4.5", "ends in a number"), ("4294967296", "ends in a number"),
    ("256.0.0.1", "ends in a number"),
])
def test_a_host_no_browser_can_name_is_refused_with_the_reason(given, says, backend_name):
    if backend_name != "pure":
        pytest.skip("backend-independent: checked once, in the pure run")
    with pytest.raises(PolicyRefused, match=says.replace("(", r"\(").replace(")", r"\)")):
        listening_host(given)
    with pytest.raises(PolicyRefused):
        resolve_policy(given, PORT, TOKEN)


@pytest.mark.parametrize("port,token", [(0, TOKEN), (65536, TOKEN), (-1, TOKEN), (True, TOKEN), ("8731", TOKEN),
                                        (PORT, ""), (PORT, "short"), (PORT, "has space in it"), (PORT, "tok#en-123"),
                                        (PORT, "t\u00f6ken-for-tests")])
def test_a_port_not_bound_or_a_token_that_cannot_travel_is_refused(port, token, backend_name):
    if backend_name != "pure":
        pytest.skip("backend-independent: checked once, in the pure run")
    with pytest.raises(PolicyRefused):
        resolve_policy("127.0.0.1", port, token)


def test_the_policy_is_one_frozen_value(backend_name):
    if backend_name != "pure":
        pytest.skip("backend-independent: checked once, in the pure run")
    policy = resolve_policy("127.0.0.1", PORT)
    assert isinstance(policy, NetworkPolicy) and len(policy.token) >= 40 and policy.names == frozenset()
    assert resolve_policy("127.0.0.1", PORT).token != policy.token  # fresh each run
    with pytest.raises(AttributeError):
        policy.port = PORT + 1  # type: ignore[misc]
    assert resolve_policy("192.168.1.20", PORT).names == frozenset({"192.168.1.20"})
    assert resolve_policy("::1", PORT).origin == f"http://[::1]:{PORT}"
    remote = resolve_policy("2001:db8::1", PORT, TOKEN)  # the Host a browser sends for it, in any spelling
    assert remote.host_allowed(f"[2001:db8::1]:{PORT}") and remote.host_allowed(f"[2001:DB8:0::1]:{PORT}")
    assert not remote.host_allowed(f"[2001:db8::2]:{PORT}") and not remote.host_allowed(f"2001:db8::1:{PORT}")
