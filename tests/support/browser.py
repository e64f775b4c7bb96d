"""The viewer in a real browser, for the tests that drive one: Playwright for Python driving
Debian's Chromium (by path), a real server on a loopback port (uvicorn in a thread). A test
module that imports this is skipped where Playwright or Chromium is missing."""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
import time

import pytest

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")
CHROMIUM = os.environ.get("LLM_AGENT_SESSION_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
if CHROMIUM is None:
    pytest.skip("no Chromium: Debian's chromium is not installed (apt-get install -y chromium)", allow_module_level=True)

import uvicorn  # noqa: E402

from llm_agent_session.view.app import app  # noqa: E402
from llm_agent_session.view.model import Viewer  # noqa: E402
from llm_agent_session.view.security import resolve_policy  # noqa: E402
from llm_agent_session.view.server import bind  # noqa: E402
from llm_agent_session.view.shelf import Roots  # noqa: E402

#: What the page's script sends with a request to the data API: the token the tab keeps.
AUTH = "{headers: {authorization: 'Bearer ' + sessionStorage.getItem('llm-agent-session-view-token')}}"
#: The data API from the page, as its script asks it.
API = f"(u => fetch(u, {AUTH}).then(r => r.json()))"


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        try:
            b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        except Exception as e:  # pragma: no cover - a Chromium that cannot start here
            pytest.skip(f"Chromium at {CHROMIUM} does not start: {e}")
        yield b
        b.close()


@contextlib.contextmanager
def serving(root):
    """The viewer of the directory `root` on a loopback port: (its base URL, its token)."""
    sock = bind("127.0.0.1", 0)
    port = sock.getsockname()[1]
    policy = resolve_policy("127.0.0.1", port)
    server = uvicorn.Server(uvicorn.Config(app(Viewer(Roots([root])), policy), log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}", policy.token
    finally:
        server.should_exit = True
        thread.join(5)


@contextlib.contextmanager
def a_page(browser, base, token):
    """A tab opened at the printed URL (the token kept by the tab); no page error, no dialog."""
    context = browser.new_context(viewport={"width": 1200, "height": 800})
    p = context.new_page()
    errors = []
    p.on("pageerror", lambda e: errors.append(str(e)))
    p.on("dialog", lambda d: (errors.append("dialog: " + d.message), d.dismiss()))
    p.goto(base + "/#token=" + token)
    try:
        yield p
    finally:
        context.close()
    assert errors == []


def wait_until(page, expression, timeout=10.0):
    """Poll `expression` in the page until it is truthy (the page's CSP forbids the eval
    that Playwright's wait_for_function uses; evaluate() goes through the debugger)."""
    end = time.monotonic() + timeout
    while True:
        value = page.evaluate(expression)
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"never true: {expression}")
        time.sleep(0.05)


def ids_shown(page):
    return page.eval_on_selector_all("[data-envelope-id]", "els => els.map(e => e.dataset.envelopeId)")
