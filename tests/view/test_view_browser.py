"""The viewer in a real browser: Playwright for Python driving Debian's Chromium (by path),
one browser for the module, a real server on a loopback port (uvicorn in a thread).

Stable hooks: every rendered envelope element carries ``data-envelope-id``; the search box
is the page's ``<input type="search">``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import pytest

pytestmark = pytest.mark.slow

from tests.support.browser import API, AUTH, a_page, browser, ids_shown, serving, wait_until  # noqa: E402,F401
from tests.support.view import ALIGNED_TABLE, SPOOFED_OUTCOMES, build_shelf, write_spoofed_outcomes  # noqa: E402

from llm_agent_session import Session, assistant_message, tool_message, user_message  # noqa: E402
from llm_agent_session.visible import visible  # noqa: E402
from tests.support import hostile  # noqa: E402

HOSTILE_HTML = ('<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'
                "[click](javascript:window.__pwned=3) <iframe src=\"https://evil.example\"></iframe>")


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
    with serving(root) as (base, token):
        yield {"base": base, "token": token, "shelf": shelf, "long": ids, "hostile": corpus, "root": root}


@pytest.fixture
def page(browser, served):
    with a_page(browser, served["base"], served["token"]) as p:  # as the printed URL: kept by the tab
        yield p


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
    requested = []
    page.on("request", lambda r: requested.append(r.url))
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
    assert requested and [u for u in requested if not u.startswith(served["base"] + "/")] == []  # nothing out


# -- the place shown: the end, follow, deep links, jumps

BIG = "\n".join(f"line {k}: " + "a long line of tool output " * 3 for k in range(150))  # ~ 3,000 px


@pytest.fixture(scope="module")
def reading(served):
    """Transcripts for the place shown, written under the served shelf: `jumps` (690
    envelopes of many heights, a tool call every 23), `ragged` (short envelopes, then very
    tall and short ones near the end)."""
    root = served["root"]
    jumps: list = []
    with Session.create(os.path.join(root, "jumps.jsonl"), {"title": "jumps"}) as s:
        for k in range(300):
            jumps.append(s.append_message(user_message(f"question {k}" + ("\nmore" * (k % 7)))))
            if k % 10 == 9:
                call = {"id": f"call_{k}", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
                jumps.append(s.append_message(assistant_message(None, [call])))
                op = s.append_tool_dispatched(f"call_{k}", "bash", "{}")
                jumps.append(op)
                jumps.append(s.append_message(tool_message(f"call_{k}", f"output {k}\n" * (k % 13))))
                jumps.append(s.append_tool_settled(op, "completed"))
            else:
                jumps.append(s.append_message(assistant_message(f"answer {k}")))
    ragged: list = []
    with Session.create(os.path.join(root, "ragged.jsonl"), {"title": "ragged"}) as s:
        for k in range(400):
            ragged.append(s.append_message(user_message(f"short {k}")))
        for k, text in enumerate([BIG, "short", BIG[:20000], "short", "short", BIG[:9000], "the last one"]):
            ragged.append(s.append_message(tool_message("c", text) if k % 2 == 0 else user_message(text)))
    return {"jumps": jumps, "ragged": ragged, "root": root}


def layer_top(page):
    return page.evaluate("document.getElementById('layer').getBoundingClientRect().top")


BOTTOM_IN_VIEW = """(id) => {
    const e = document.querySelector(`[data-envelope-id="${id}"]`);
    if (!e) return false;
    const r = e.getBoundingClientRect(), l = document.getElementById('layer').getBoundingClientRect();
    return r.bottom > l.top && r.bottom <= Math.min(l.bottom, window.innerHeight) + 0.5;
}"""


def bottom_in_view(page, envelope_id):
    """The envelope is rendered and its bottom is inside the list's part of the screen."""
    return page.evaluate(BOTTOM_IN_VIEW, envelope_id)


def assert_end_shown(page, envelope_id, what):
    end = time.monotonic() + 5
    while not bottom_in_view(page, envelope_id):
        if time.monotonic() > end:
            where = page.evaluate("""(id) => {
                const e = document.querySelector(`[data-envelope-id="${id}"]`), shown = [...document.querySelectorAll('article.env')];
                return {box: e && [e.getBoundingClientRect().top, e.getBoundingClientRect().bottom], screen: window.innerHeight,
                        scrollY: window.scrollY, scrollMax: document.documentElement.scrollHeight - window.innerHeight,
                        rendered: shown.length && [shown[0].dataset.i, shown[shown.length - 1].dataset.i]};
            }""", envelope_id)
            raise AssertionError(f"{what}: the last envelope's bottom is not in view: {where}")
        time.sleep(0.05)


def open_transcript(page, served, name, query=""):
    page.goto(served["base"] + f"/t/shelf/{name}{query}")
    page.wait_for_selector("[data-envelope-id]")
    wait_until(page, "document.getElementById('status').textContent.indexOf('reading the history') < 0")


@pytest.mark.parametrize("name", ["long.jsonl", "ragged.jsonl", "jumps.jsonl"])
def test_the_end_shows_the_last_envelope_by_button_key_and_wheel(page, served, reading, name):
    last = {"long.jsonl": served["long"], "ragged.jsonl": reading["ragged"], "jumps.jsonl": reading["jumps"]}[name][-1]
    open_transcript(page, served, name)
    page.click("#to-end")
    assert_end_shown(page, last, "the end button")
    page.click("#to-start")
    wait_until(page, "window.scrollY === 0")
    page.evaluate("document.activeElement.blur()")
    page.keyboard.press("End")
    assert_end_shown(page, last, "the End key")
    # From well before the end, the wheel alone.
    page.evaluate("window.scrollTo(0, document.documentElement.scrollHeight * 0.97)")
    page.wait_for_timeout(400)
    page.mouse.move(600, 500)
    for _ in range(60):
        page.mouse.wheel(0, 1500)
        page.wait_for_timeout(30)
        if bottom_in_view(page, last):
            break
    assert_end_shown(page, last, "the wheel")
    page.mouse.wheel(0, 3000)  # past the end: it stays
    page.wait_for_timeout(300)
    assert_end_shown(page, last, "the wheel past the end")


def test_short_envelopes_fill_the_screen(page, served, backend_name):
    """Heights estimated before the first window arrived must not leave the screen half
    empty once it is measured (here nothing else renders again: the history is ready)."""
    path = os.path.join(served["root"], f"short-{backend_name}.jsonl")
    with Session.create(path, {"title": "short"}) as s:
        for k in range(300):
            s.append_message(user_message(""))
    open_transcript(page, served, f"short-{backend_name}.jsonl")
    page.goto(served["base"] + f"/t/shelf/short-{backend_name}.jsonl")  # opened again: the history is read
    page.wait_for_selector("[data-envelope-id]")
    wait_until(page, """(() => { const shown = document.querySelectorAll('article.env[data-envelope-id]');
        return shown.length && shown[shown.length - 1].getBoundingClientRect().bottom
                               >= document.getElementById('layer').getBoundingClientRect().bottom; })()""", timeout=5)


def test_following_at_the_end_scrolls_appended_envelopes_into_view(page, served, backend_name):
    path = os.path.join(served["root"], f"follow-end-{backend_name}.jsonl")
    with Session.create(path, {"title": "follow"}) as s:
        for k in range(300):
            s.append_message(user_message(f"before {k}" + "\nline" * (k % 5)))
    open_transcript(page, served, f"follow-end-{backend_name}.jsonl")
    page.click("#to-end")
    env = dict(os.environ, LLM_AGENT_SESSION_BACKEND=backend_name)
    writer = ("import sys; from llm_agent_session import Session, user_message, tool_message\n"
              "with Session.load(sys.argv[1]) as s:\n"
              "    for text in sys.argv[2:]: print(s.append_message(tool_message('c', text) if len(text) > 100 else user_message(text)))")
    for texts in (["one appended"], ["tall\n" * 120, "then short"], ["x", "y", "z", "w\n" * 40]):
        got = subprocess.run([sys.executable, "-c", writer, path, *texts], capture_output=True, text=True, check=True, env=env)
        assert_end_shown(page, got.stdout.split()[-1], f"following, after appending {len(texts)}")


TOP_SHOWN = """() => {   // the envelope at the top of the list's part of the screen
    const top = document.getElementById('layer').getBoundingClientRect().top;
    const shown = [...document.querySelectorAll('article.env')].find((e) => e.getBoundingClientRect().bottom > top + 0.5);
    return shown ? shown.dataset.envelopeId || null : null;
}"""


def at_param(page):
    return page.evaluate("new URLSearchParams(location.search).get('at')")


def assert_address_names(page, what, expected=None):
    """The address carries `at=` naming the envelope at the top of the screen (and `expected`)."""
    end = time.monotonic() + 5
    while True:
        at, top = at_param(page), page.evaluate(TOP_SHOWN)
        if at is not None and at == top and (expected is None or at == expected):
            return at
        if time.monotonic() > end:
            raise AssertionError(f"after {what}: the address says at={at}, the top of the screen shows {top}, expected {expected}")
        time.sleep(0.05)


def jump_by_id(page, envelope_id):
    page.fill("#jump-id", envelope_id)
    page.press("#jump-id", "Enter")


def search_for(page, text):
    page.fill("input[type=search]", text)
    page.press("input[type=search]", "Enter")


def test_every_kind_of_jump_leaves_a_deep_link_to_the_envelope_shown(page, served, reading):
    ids = reading["jumps"]
    position = {envelope_id: k + 1 for k, envelope_id in enumerate(ids)}  # the meta is at 0
    open_transcript(page, served, "jumps.jsonl")
    ts = page.evaluate(f"{API}('/api/envelope?t=shelf/jumps.jsonl&id={ids[400]}').then(j => j.ts)")

    def current(selector):
        return page.wait_for_selector(selector).get_attribute("data-envelope-id")

    steps = [
        ("a jump by id", lambda: jump_by_id(page, ids[100]), lambda: ids[100]),
        ("the scrollbar dragged", lambda: page.evaluate("window.scrollTo(0, (document.documentElement.scrollHeight - innerHeight) * 0.6)"), None),
        ("a jump to a time", lambda: (page.fill("#jump-time", ts), page.press("#jump-time", "Enter")), lambda: current("article.target")),
        ("a search hit near the end", lambda: search_for(page, "question 297"), lambda: ids[position_of_question(ids, page, 297)]),
        ("the next tool call", lambda: page.click("#kind-next"), lambda: current("article.target")),
        ("the previous tool call", lambda: page.click("#kind-prev"), lambda: current("article.target")),
        ("a search's first hit", lambda: search_for(page, "question 29"), lambda: current("article.hit-current")),
        ("its next hit, near the end", lambda: page.press("input[type=search]", "Enter"), lambda: current("article.hit-current")),
        ("the next after it", lambda: page.press("input[type=search]", "Enter"), lambda: current("article.hit-current")),
        ("the last envelope by id", lambda: jump_by_id(page, ids[-1]), lambda: ids[-1]),
        ("the previous tool call from there", lambda: page.click("#kind-prev"), lambda: current("article.target")),
        ("the previous hit", lambda: page.press("input[type=search]", "Shift+Enter"), lambda: current("article.hit-current")),
        ("the start", lambda: page.click("#to-start"), None),
    ]
    for what, act, expected in steps:
        before = page.url
        act()
        page.wait_for_timeout(100)
        want = expected() if expected else None
        at = assert_address_names(page, what, want)
        if what == "a search hit near the end":
            assert position[at] > len(ids) - 20
        assert page.url != before, what
    # The last place survives a reload, and a pasted link opens there.
    jump_by_id(page, ids[-3])
    assert_address_names(page, "a jump near the end", ids[-3])
    link = page.url
    page.reload()
    page.wait_for_selector(f"[data-envelope-id='{ids[-3]}'].target")
    assert_address_names(page, "a reload", ids[-3])
    fresh = page.context.new_page()
    fresh.goto(link)
    fresh.wait_for_selector(f"[data-envelope-id='{ids[-3]}'].target")
    assert_address_names(fresh, "a pasted link", ids[-3])
    # Opening a deep link keeps the status line (what the transcript is).
    wait_until(fresh, "document.getElementById('status').textContent.includes('envelopes')")
    fresh.close()


def position_of_question(ids, page, k):
    text = page.evaluate(f"fetch('/api/search?t=shelf/jumps.jsonl&q=question%20{k}', {AUTH}).then(r => r.text())")
    hits = [hit for line in text.splitlines() for hit in json.loads(line).get("hits", [])]
    assert len(hits) == 1, hits
    return hits[0][0] - 1


def target_on_top(page):
    """The id of a jump's target once the jump has put it at the top of the screen."""
    return wait_until(page, "(() => { const t = document.querySelector('article.target');"
                            f" return t && t.dataset.envelopeId === ({TOP_SHOWN})() && t.dataset.envelopeId; }})()")


def test_kind_jumps_step_from_where_the_reader_is(page, served, reading):
    ids = reading["jumps"]
    open_transcript(page, served, "jumps.jsonl")
    calls = page.evaluate("""async () => {   // every tool call's position, by the API
        const out = []; let from = -1;
        for (;;) { const got = await (await fetch(`/api/locate?t=shelf/jumps.jsonl&kind=tool-call&from=${from}`, AUTH)).json();
                   if (got.i === null) return out; out.push(got.i); from = got.i; }
    }""".replace("AUTH", AUTH))
    assert len(calls) == 30
    page.click("#kind-next")
    first = page.wait_for_selector("article.target").get_attribute("data-envelope-id")
    assert ids.index(first) + 1 == calls[0]
    page.mouse.move(600, 500)
    for _ in range(8):  # well past the next few calls, by the wheel
        page.mouse.wheel(0, 800)
        page.wait_for_timeout(50)
    page.wait_for_timeout(400)
    top = ids.index(page.evaluate(TOP_SHOWN)) + 1
    assert top > calls[2]
    page.click("#kind-next")
    after = ids.index(target_on_top(page)) + 1
    assert after == min(c for c in calls if c >= top), (top, after)
    page.mouse.wheel(0, 2400)
    page.wait_for_timeout(400)
    top = ids.index(page.evaluate(TOP_SHOWN)) + 1
    page.click("#kind-prev")
    back = ids.index(target_on_top(page)) + 1
    assert back == max(c for c in calls if c < top), (top, back)


def test_a_search_hit_in_a_folded_compacted_message_is_shown(page, served):
    compacted = served["shelf"].ids["user1"]
    page.goto(served["base"] + "/t/shelf/run.jsonl")
    page.wait_for_selector(f"[data-envelope-id='{compacted}'].removed")
    assert not page.is_visible(f"[data-envelope-id='{compacted}'] > .body")  # folded
    search_for(page, "date parser")
    wait_until(page, "document.querySelector('#search-count').textContent.startsWith('1 of')")
    page.wait_for_selector(f"[data-envelope-id='{compacted}'].hit-current mark", state="attached")
    assert page.is_visible(f"[data-envelope-id='{compacted}'] mark")
    assert page.inner_text(f"[data-envelope-id='{compacted}'] mark").lower() == "date parser"


# -- what a line cannot do to the page


def test_a_settles_outcome_text_never_becomes_a_class(page, served, backend_name):
    write_spoofed_outcomes(os.path.join(served["root"], f"spoofed-{backend_name}.jsonl"))
    page.set_viewport_size({"width": 1200, "height": 2400})  # every envelope on one screen
    open_transcript(page, served, f"spoofed-{backend_name}.jsonl")
    wait_until(page, "document.querySelectorAll('article.op[data-envelope-id]').length === 14")
    settled = page.eval_on_selector_all("article.op", """els => els.filter((e) => e.querySelector('.title').textContent.startsWith('tool settled'))
        .map((e) => { const b = e.querySelector('.head .badge');
                      return [b.textContent, [...b.classList], getComputedStyle(b).fontWeight]; })""")
    assert [s[:2] for s in settled] == [["failed", ["badge", "state-failed"]]] + [
        [visible(o), ["badge", "state-other"]] for o in SPOOFED_OUTCOMES]
    assert settled[0][2] == "600" and {s[2] for s in settled[1:]} == {"400"}  # styled as failed: the real one only


def test_an_aligned_markdown_table_keeps_to_the_csp(page, served, backend_name):
    path = os.path.join(served["root"], f"table-{backend_name}.jsonl")
    with Session.create(path, {"title": "a table"}) as s:
        s.append_message(assistant_message("A table:\n\n" + ALIGNED_TABLE))
    refused = []
    page.on("console", lambda m: refused.append(m.text) if "Content Security Policy" in m.text else None)
    page.add_init_script("window.__violations = [];"
                         "document.addEventListener('securitypolicyviolation', (e) => window.__violations.push(e.violatedDirective));")
    open_transcript(page, served, f"table-{backend_name}.jsonl")
    page.wait_for_selector(".md table td")
    page.wait_for_timeout(200)
    aligns = page.eval_on_selector_all(".md table tr", "rows => rows.map((r) => [...r.children].map((c) => getComputedStyle(c).textAlign))")
    violations = page.evaluate("window.__violations")
    assert violations == [] and refused == [], (violations, refused)
    assert aligns == [["left", "center", "right", "center"], ["left", "center", "right", "start"]]  # a th's own: center


def test_the_page_says_loads_verdict_as_the_shelf_does(page, served, backend_name):
    """It showed "load: ?" for every torn or failing transcript."""
    from tests.support.view import verdict_cases

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


def test_a_big_transcript_without_an_index_shows_its_end_then_all_of_it(page, served, monkeypatch, backend_name):
    """Opened the first time without a side index, a big transcript (here: any, the
    threshold lowered) shows its last lines at once, from the end; once its index is built
    in the cache (held back here until the preview was seen), the whole file, still at the
    end, and then jumps and search through the index; nothing is written beside it."""
    from llm_agent_session import _index, indexed
    from llm_agent_session.view import transcript as transcript_module

    folder = os.path.join(served["root"], "big-" + backend_name)
    os.makedirs(folder)
    path = os.path.join(folder, "big.jsonl")
    ids = []
    with Session.create(path, {"title": "big"}) as s:
        for i in range(400):
            ids.append(s.append_message(user_message(f"line {i} of the big one")))
    monkeypatch.setattr(transcript_module, "PREVIEW_FROM", 0)
    monkeypatch.setattr(transcript_module, "PREVIEW_BYTES", 20000)  # more than a screen
    gate = threading.Event()
    update = indexed.update
    monkeypatch.setattr(indexed, "update", lambda p: (gate.wait(20), update(p))[1])
    page.goto(served["base"] + f"/t/shelf/big-{backend_name}/big.jsonl")
    page.wait_for_selector(f"[data-envelope-id='{ids[-1]}']")  # the end, first
    assert ids[0] not in ids_shown(page)
    wait_until(page, "document.querySelector('#status').textContent.indexOf('the last') >= 0")
    gate.set()
    wait_until(page, "document.querySelector('#status').textContent.indexOf('401 envelopes') >= 0", timeout=20)
    page.wait_for_selector(f"[data-envelope-id='{ids[-1]}']")  # still at the end
    assert os.path.exists(_index.index_file(path)) and os.listdir(folder) == ["big.jsonl"]
    page.fill("#jump-id", ids[3])
    page.press("#jump-id", "Enter")
    page.wait_for_selector(f"[data-envelope-id='{ids[3]}'].target")
    page.fill("input[type=search]", "line 7 of")
    page.press("input[type=search]", "Enter")
    page.wait_for_selector(f"[data-envelope-id='{ids[7]}'] mark")
