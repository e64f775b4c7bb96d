"""The viewer in a real browser: Playwright for Python driving Debian's Chromium (by path),
one browser for the module, a real server on a loopback port (uvicorn in a thread).

Stable hooks: every rendered envelope element carries ``data-envelope-id``; the search box
is the page's ``<input type="search">``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time

import pytest

pytestmark = pytest.mark.slow

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")
CHROMIUM = os.environ.get("LLM_AGENT_SESSION_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
if CHROMIUM is None:
    pytest.skip("no Chromium: Debian's chromium is not installed (apt-get install -y chromium)", allow_module_level=True)

import uvicorn  # noqa: E402
from view_support import build_shelf  # noqa: E402

from llm_agent_session import Session, assistant_message, user_message  # noqa: E402
from llm_agent_session.view.app import Viewer, app  # noqa: E402
from llm_agent_session.view.security import Policy  # noqa: E402
from llm_agent_session.view.server import bind  # noqa: E402
from llm_agent_session.view.shelf import Roots  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "cli"))
import hostile  # noqa: E402

HOSTILE_HTML = ('<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'
                "[click](javascript:window.__pwned=3) <iframe src=\"https://evil.example\"></iframe>")


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        try:
            b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        except Exception as e:  # pragma: no cover - a Chromium that cannot start here
            pytest.skip(f"Chromium at {CHROMIUM} does not start: {e}")
        yield b
        b.close()


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A server over a shelf: the every-line-type transcript, a long one, the hostile corpus."""
    root = str(tmp_path_factory.mktemp("view") / "shelf")
    shelf = build_shelf(root)
    long_path = os.path.join(root, "long.jsonl")
    ids = []
    with Session.create(long_path, {"title": "long"}) as s:
        for i in range(3000):
            ids.append(s.append_message(user_message(f"question {i}") if i % 2 == 0 else
                                        assistant_message(f"**answer** {i}\n\n- one\n- two")))
    corpus = hostile.build(os.path.join(root, "hostile"))
    with Session.load(corpus.path) as s:  # a load repairs its torn tail first
        s.append_message(assistant_message(HOSTILE_HTML))
        s.append_message(user_message(HOSTILE_HTML))
    sock = bind("127.0.0.1", 0)
    port = sock.getsockname()[1]
    policy = Policy(port)
    server = uvicorn.Server(uvicorn.Config(app(Viewer(Roots([root])), policy), log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    base = f"http://127.0.0.1:{port}"
    yield {"base": base, "token": policy.token, "shelf": shelf, "long": ids, "hostile": corpus, "root": root}
    server.should_exit = True
    thread.join(5)


@pytest.fixture
def page(browser, served):
    context = browser.new_context(viewport={"width": 1200, "height": 800})
    p = context.new_page()
    errors = []
    p.on("pageerror", lambda e: errors.append(str(e)))
    p.on("dialog", lambda d: (errors.append("dialog: " + d.message), d.dismiss()))
    p.goto(served["base"] + "/#token=" + served["token"])  # as the printed URL: kept by the tab
    yield p
    context.close()
    assert errors == []


#: The data API from the page, as its script asks it: with the token the tab keeps.
API = ("(u => fetch(u, {headers: {authorization: 'Bearer ' + sessionStorage.getItem('llm-agent-session-view-token')}})"
       ".then(r => r.json()))")


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


def test_shelf_then_a_transcript_then_scroll_to_the_end(page, served):
    page.wait_for_selector(".shelf-row[href]")
    wait_until(page, "document.querySelector('#shelf-count').textContent.indexOf('reading') < 0")
    names = page.eval_on_selector_all("#shelf-rows .name", "els => els.map(e => e.textContent)")
    assert {"shelf/run.jsonl", "shelf/long.jsonl", "shelf/sub/other.jsonl"} <= set(names)
    page.click("a.shelf-row[href='/t/shelf/long.jsonl']")
    page.wait_for_selector(f"[data-envelope-id='{served['long'][0]}']")
    page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)")  # the scrollbar's end
    page.wait_for_selector(f"[data-envelope-id='{served['long'][-1]}']")
    page.mouse.wheel(0, -3000)  # and back a little by the wheel: by pixels, still near the end
    page.wait_for_timeout(300)
    shown = ids_shown(page)
    assert len(page.query_selector_all("article.env")) <= 500
    assert served["long"].index(shown[0]) > 2900


def test_search_shows_hits_and_counts(page, served):
    page.goto(served["base"] + "/t/shelf/long.jsonl")
    page.wait_for_selector("[data-envelope-id]")
    page.fill("input[type=search]", "QUESTION 2998")
    page.press("input[type=search]", "Enter")
    wait_until(page, "document.querySelector('#search-count').textContent.startsWith('1 of 1')")
    target = served["long"][2998]
    page.wait_for_selector(f"[data-envelope-id='{target}'] mark")
    assert page.inner_text(f"[data-envelope-id='{target}'] mark").lower() == "question 2998"


def test_jump_by_id_and_by_time_and_deep_links_survive_reload(page, served):
    shelf = served["shelf"]
    page.goto(served["base"] + "/t/shelf/run.jsonl")
    page.wait_for_selector("[data-envelope-id]")
    compacted = shelf.ids["user1"]
    page.fill("#jump-id", compacted)
    page.press("#jump-id", "Enter")
    page.wait_for_selector(f"[data-envelope-id='{compacted}'].target")
    assert "at=" + compacted in page.url
    page.reload()
    page.wait_for_selector(f"[data-envelope-id='{compacted}'].target")
    late = served["long"][2500]
    page.goto(served["base"] + f"/t/shelf/long.jsonl?at={late}")  # a pasted deep link
    page.wait_for_selector(f"[data-envelope-id='{late}'].target")
    ts = page.evaluate(f"{API}('/api/envelope?t=shelf/long.jsonl&id={late}').then(j => j.ts)")
    page.goto(served["base"] + "/t/shelf/long.jsonl")
    page.wait_for_selector("[data-envelope-id]")
    page.fill("#jump-time", ts)
    page.press("#jump-time", "Enter")
    found = page.wait_for_selector("article.target").get_attribute("data-envelope-id")
    # The first envelope in file order at or after that time: `late`, or one written in the same microsecond.
    assert found == late or (served["long"].index(found) < 2500 and page.evaluate(
        f"{API}('/api/envelope?t=shelf/long.jsonl&id={found}').then(j => j.ts)") == ts)


def test_follow_a_live_writer_and_a_repair(page, served, backend_name):
    path = os.path.join(served["root"], f"live-{backend_name}.jsonl")
    with Session.create(path, {"title": "live"}) as s:
        s.append_message(user_message("first"))
    page.goto(served["base"] + f"/t/shelf/live-{backend_name}.jsonl")
    page.wait_for_selector("[data-envelope-id]")
    env = dict(os.environ, LLM_AGENT_SESSION_BACKEND=backend_name)
    writer = subprocess.run([sys.executable, "-c", (
        "import sys; from llm_agent_session import Session, user_message\n"
        "with Session.load(sys.argv[1]) as s: print(s.append_message(user_message('FROM-ANOTHER-PROCESS')))"),
        path], capture_output=True, text=True, check=True, env=env)
    new_id = writer.stdout.strip()
    page.wait_for_selector(f"[data-envelope-id='{new_id}']", timeout=5000)
    with open(path, "ab") as f:
        f.write(b'{"id":"torn')
    repaired = subprocess.run([sys.executable, "-c", (
        "import sys; from llm_agent_session import Session, user_message\n"
        "with Session.load(sys.argv[1]) as s: print(s.append_message(user_message('AFTER-THE-REPAIR')))"),
        path], capture_output=True, text=True, check=True, env=env)
    page.wait_for_selector(f"[data-envelope-id='{repaired.stdout.strip()}']", timeout=5000)


def test_the_hostile_corpus_stays_inert_and_visible(page, served):
    page.goto(served["base"] + "/")
    page.wait_for_selector(".shelf-row[href^='/t/~']")  # its name holds controls: linked by an alias
    page.locator("a.shelf-row[href^='/t/~']").filter(has_not_text="broken-").first.click()
    page.wait_for_selector("[data-envelope-id]")
    page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight)")
    page.wait_for_selector("article.role-assistant .md")
    page.wait_for_timeout(300)
    text = page.inner_text("#items")
    assert "<U+202E>" in text and "\\x1b" in text
    raw = [c for c in text if c in hostile.FORBIDDEN]
    assert raw == [], [hex(ord(c)) for c in raw]
    for link in page.query_selector_all("#items a"):
        assert link.get_attribute("href").startswith(("http:", "https:", "mailto:"))
    assert page.query_selector("#items script, #items img, #items iframe") is None
    assert page.evaluate("window.__pwned") is None


def test_the_page_says_loads_verdict_as_the_shelf_does(page, served, backend_name):
    """It showed "load: ?" for every torn or failing transcript."""
    from view_support import verdict_cases

    for name, (_, text) in verdict_cases(served["root"], served["shelf"].run, "-" + backend_name).items():
        page.goto(served["base"] + "/t/" + name)
        shown = wait_until(page, "document.querySelector('#status').textContent.includes('load: ') && "
                                 "document.querySelector('#status').textContent")
        assert f"load: {text}" in shown and "load: ?" not in shown, (name, shown)


@pytest.fixture
def elsewhere():
    """Another web server on this host, on another port (any local service the browser
    visits): it notes the headers of every request it gets."""
    import http.server

    seen = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the standard library's name
            seen.append(dict(self.headers.items()))
            body = b"<!doctype html><title>another local server</title><p>elsewhere</p>"
            self.send_response(200)
            self.send_header("content-type", "text/html")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", seen
    server.shutdown()
    server.server_close()


def test_the_token_reaches_no_other_server_on_this_host(browser, served, elsewhere):
    """The token was a cookie, which ignores ports: once the viewer's URL was opened, the
    browser sent it to every server on 127.0.0.1, and any of them could replay it to read
    every transcript. Now it is the URL's fragment, kept by the tab and sent as a header by
    the page's script alone: the browser holds no cookie, sends another server nothing of
    it, and what it does send there reads nothing."""
    import urllib.error
    import urllib.request

    other, seen = elsewhere
    token, base = served["token"], served["base"]
    context = browser.new_context()
    page = context.new_page()
    page.goto(base + "/t/shelf/run.jsonl#token=" + token)  # as the printed URL
    page.wait_for_selector("[data-envelope-id]")
    assert token not in page.url and "#" not in page.url  # out of the address bar
    assert context.cookies() == []
    page.goto(other + "/")  # the same tab, then another, visit another local server
    page.evaluate(f"fetch({other!r} + '/fetched', {{credentials: 'include'}}).then(r => r.text())")
    other_tab = context.new_page()
    other_tab.goto(other + "/second-tab")
    # That server's page asks the viewer for data with whatever the browser would add: refused.
    answer = other_tab.evaluate(f"fetch({base!r} + '/api/shelf', {{credentials: 'include'}})"
                                ".then(r => r.status, e => 'blocked: ' + e.message)")
    assert answer != 200
    assert token not in other_tab.evaluate("JSON.stringify(Object.assign({}, sessionStorage, localStorage))")
    assert len(seen) >= 3 and not any(token in value for headers in seen for value in headers.values()), seen
    assert context.cookies() == []
    context.close()
    # A plain local process replaying what that server was sent: nothing to read with it.
    for headers in seen:
        replay = {k: v for k, v in headers.items() if k.lower() not in ("host", "connection")}
        request = urllib.request.Request(base + "/api/shelf", headers=replay)
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)
        assert refused.value.code == 403


def test_a_deep_link_works_in_this_browser_and_asks_for_the_url_anywhere_else(browser, served):
    """A reload, or a deep link opened in another tab of the same browser, keeps working (a
    new tab asks the viewer's open tabs for the token); pasted into a fresh browser it says
    to open the URL the command printed."""
    target = served["long"][1200]
    context = browser.new_context()
    first = context.new_page()
    first.goto(served["base"] + "/#token=" + served["token"])
    first.wait_for_selector(".shelf-row[href]")
    first.reload()
    first.wait_for_selector(".shelf-row[href]")
    second = context.new_page()  # a new tab: no copy of the first one's sessionStorage
    second.goto(served["base"] + f"/t/shelf/long.jsonl?at={target}")
    second.wait_for_selector(f"[data-envelope-id='{target}'].target")
    context.close()
    fresh = browser.new_context()  # another browser (profile): the link alone
    page = fresh.new_page()
    page.goto(served["base"] + f"/t/shelf/long.jsonl?at={target}")
    shown = wait_until(page, "document.querySelector('#status').textContent")
    assert "open the URL that llm-agent-session view printed" in shown
    assert page.query_selector("[data-envelope-id]") is None
    fresh.close()
