"""The requests behind a transcript's first screen and its jumps, in a real browser (Chromium
through Playwright, a real server on a loopback port): the page asks for the transcript's
summary and its first window side by side, as soon as it runs, not one after the other
once every module has loaded; a jump's envelope comes with the answer that found it
(docs/viewer.md, "Big transcripts")."""

from __future__ import annotations

import os

import pytest

pytestmark = pytest.mark.slow

from tests.support.browser import a_page, browser, serving  # noqa: E402,F401

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
