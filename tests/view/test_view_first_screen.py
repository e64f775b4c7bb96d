"""The requests behind a transcript's first screen and its jumps, in a real browser (Chromium
through Playwright, a real server on a loopback port): the page asks for the transcript's
summary and its first window side by side, as soon as it runs, not one after the other
once every module has loaded; a jump's envelope comes with the answer that found it
(docs/viewer.md, "Big transcripts")."""

from __future__ import annotations

import os
import threading
import time

import pytest

pytestmark = pytest.mark.slow

from tests.support.browser import a_page, browser, serving, wait_until  # noqa: E402,F401

from llm_agent_session import Session, assistant_message, user_message  # noqa: E402

# Each API request the page made, from performance's resource entries: [path, start, end].
REQUESTS = """() => performance.getEntriesByType('resource')
  .filter(e => e.name.includes('/api/'))
  .map(e => [e.name.replace(location.origin, ''), e.startTime, e.responseEnd])"""


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("first-screen") / "shelf")
    os.makedirs(root)
    ids = []
    with Session.create(os.path.join(root, "run.jsonl"), {"title": "first screen"}) as s:
        for i in range(200):
            ids.append(s.append_message(user_message(f"question {i}") if i % 2 == 0 else assistant_message(f"answer {i}")))
    with serving(root) as (base, token):
        yield {"base": base, "token": token, "ids": ids}


def first_requests(page, url, shown):
    page.goto(url)
    page.wait_for_selector(f"[data-envelope-id='{shown}']")
    got = page.evaluate(REQUESTS)
    summary = [r for r in got if r[0].startswith("/api/transcript?")]
    windows = [r for r in got if r[0].startswith("/api/window?")]
    return summary, windows


@pytest.mark.parametrize("mode", ["history", "live"])
def test_the_summary_and_the_first_window_are_asked_for_side_by_side(browser, served, mode, backend_name):
    with a_page(browser, served["base"], served["token"]) as page:
        query = "?mode=live" if mode == "live" else ""
        summary, windows = first_requests(page, served["base"] + "/t/shelf/run.jsonl" + query, served["ids"][0])
        assert len(summary) == 1
        starts = [w for w in windows if "from=0&" in w[0] and f"mode={mode}" in w[0]]
        # Asked for once: the list took the one asked for early (the live conversation's is
        # asked for again while the history is being read).
        assert len(starts) == 1 or mode == "live" and starts, windows
        # The window went out before the summary came back (one after the other, it went
        # out after: the list waited for the summary's count).
        assert starts[0][1] < summary[0][2], (summary, windows)
        assert page.title().startswith("first screen")


@pytest.mark.parametrize("how", ["id", "time"])
def test_a_jump_is_drawn_from_the_answer_that_found_it(browser, served, how, backend_name):
    """A jump by id or by time draws its envelope from /api/locate's answer (which holds its
    window): the page asks for no window holding it (it did, after the answer came)."""
    with a_page(browser, served["base"], served["token"]) as page:
        first_requests(page, served["base"] + "/t/shelf/run.jsonl", served["ids"][0])
        target = served["ids"][150]
        got = page.evaluate(  # its time, asked as the page asks (with the tab's token)
            """async (id) => {
          const r = await fetch('/api/envelope?t=shelf%2Frun.jsonl&id=' + id, {headers: {authorization:
            'Bearer ' + sessionStorage.getItem('llm-agent-session-view-token')}});
          return r.json(); }""", target)
        page.evaluate("performance.clearResourceTimings()")
        box = "#jump-id" if how == "id" else "#jump-time"
        page.fill(box, target if how == "id" else got["ts"])
        page.press(box, "Enter")
        page.wait_for_selector(f"[data-envelope-id='{target}'].target")
        asked = [r[0] for r in page.evaluate(REQUESTS)]
        assert any(a.startswith("/api/locate?") and "window=" in a for a in asked), asked
        assert not any(a.startswith("/api/window?") and "from=144&" in a for a in asked), asked


# The page's request for the transcript's summary held until `__send()` (the first window
# goes out at once), installed before the page's own script runs.
HOLD_SUMMARY = """(() => {
  const real = window.fetch;
  const held = [];
  window.fetch = (url, init) => {
    if (!String(url).includes('/api/transcript')) return real(url, init);
    return new Promise((resolve, reject) => held.push(() => real(url, init).then(resolve, reject)));
  };
  window.__send = () => { window.fetch = real; held.forEach((send) => send()); };
})()"""


def test_a_first_window_made_before_the_history_is_asked_for_again(browser, tmp_path, monkeypatch, backend_name):
    """The summary and the first window go out side by side: a window made just before the
    history was read (no badge of what a compaction removed) and a summary made just after
    it (the history is read) left the page with that window for good: the follow asks
    again only when it sees the history become ready, and the page already knew it was."""
    from llm_agent_session.view.transcript import Transcript

    root = str(tmp_path / "shelf")
    os.makedirs(root)
    with Session.create(os.path.join(root, "run.jsonl"), {"title": "compacted"}) as s:
        removed = s.append_message(user_message("the first question"))
        s.append_message(assistant_message("the first answer"))
        s.append_compaction("they spoke of the first question", removed, 100, 10)
        for i in range(10):
            s.append_message(user_message(f"question {i}"))
    history_may_be_read = threading.Event()
    read_history = Transcript._build_history

    def held(self, generation):
        history_may_be_read.wait(30)
        read_history(self, generation)

    monkeypatch.setattr(Transcript, "_build_history", held)
    with serving(root) as (base, token), a_page(browser, base, token) as page:
        page.add_init_script(HOLD_SUMMARY)
        page.goto(base + "/t/shelf/run.jsonl")
        wait_until(page, "performance.getEntriesByType('resource').some(e => e.name.includes('/api/window'))")  # made now
        history_may_be_read.set()
        viewer = page.evaluate(
            """async () => (await fetch('/api/follow?t=shelf%2Frun.jsonl', {headers: {authorization:
              'Bearer ' + sessionStorage.getItem('llm-agent-session-view-token')}})).json()""")
        while not viewer["ready"]["history"]:
            time.sleep(0.02)
            viewer = page.evaluate(
                """async () => (await fetch('/api/follow?t=shelf%2Frun.jsonl', {headers: {authorization:
                  'Bearer ' + sessionStorage.getItem('llm-agent-session-view-token')}})).json()""")
        page.evaluate("window.__send()")  # the summary, made now: the history is read
        page.wait_for_selector(f"[data-envelope-id='{removed}'].removed", timeout=10000)
