"""The scrollbar dragged while envelopes are still arriving, in a real browser (Chromium
through Playwright, a real server on a loopback port): the list lands where the bar was
dragged to. Envelopes that arrived in the same frame, measured taller than the list had
guessed, resized the list and set the bar back to the place drawn before: the drag was
undone (1 jump by position in 15-20 of benches/viewer_speed.py's, at 64 MB)."""

from __future__ import annotations

import os

import pytest

pytestmark = pytest.mark.slow

from tests.support.browser import a_page, browser, serving, wait_until  # noqa: E402,F401

from llm_agent_session import Session, user_message  # noqa: E402

COUNT = 3000

# The page's fetches of windows held: each is fetched at once, and its answer handed to the
# page only when `__release()` is called (a response built from what was read, so that the
# page's code after it runs at once, as for a window that arrives in that moment).
HOLD_WINDOWS = """() => {
  const real = window.fetch;
  window.__held = [];
  window.fetch = (url, init) => {
    if (!String(url).includes('/api/window')) return real(url, init);
    const held = {};
    window.__held.push(held);
    real(url, init).then(r => r.json().then(data => { held.status = r.status; held.data = data; }));
    return new Promise(resolve => { held.resolve = resolve; });
  };
  window.__ready = () => window.__held.length > 0 && window.__held.every(h => h.data !== undefined);
  window.__release = () => {
    window.fetch = real;
    for (const h of window.__held) {
      h.resolve({ status: h.status, ok: h.status === 200, statusText: '',
                  headers: new Headers({ 'content-type': 'application/json' }), json: async () => h.data });
    }
  };
}"""

# Drag the bar to `fraction` (its scroll event comes with the next frame), then let the held
# windows in: what the list should show is the envelope at that fraction of the bar.
DRAG_AS_WINDOWS_ARRIVE = """([fraction, count]) => {
  const max = document.documentElement.scrollHeight - innerHeight;
  window.scrollTo(0, Math.round(max * fraction));
  const want = Math.min(count - 1, Math.floor((window.scrollY / max) * count));
  window.__release();
  return want;
}"""

SHOWN = "() => [...document.querySelectorAll('article.env[data-envelope-id][data-i]')].map(e => +e.dataset.i)"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A transcript of short messages, then long ones (ten lines each): the list's guess of
    an envelope's height, learnt at the start, is far off at the end."""
    root = str(tmp_path_factory.mktemp("scroll") / "shelf")
    os.makedirs(root)
    with Session.create(os.path.join(root, "run.jsonl"), {"title": "scroll"}) as s:
        for i in range(COUNT):
            text = f"short {i}" if i < COUNT // 2 else "\n\n".join(f"long {i}, paragraph {k}" for k in range(10))
            s.append_message(user_message(text))
    with serving(root) as (base, token):
        yield {"base": base, "token": token}


def test_a_drag_of_the_scrollbar_lands_though_windows_arrive_with_it(browser, served, backend_name):
    with a_page(browser, served["base"], served["token"]) as page:
        page.goto(served["base"] + "/t/shelf/run.jsonl")
        page.wait_for_selector("article.env[data-i='0'][data-envelope-id]")
        page.wait_for_timeout(300)
        page.evaluate(HOLD_WINDOWS)
        # To the long envelopes: drawn as placeholders, their windows held.
        page.evaluate("window.scrollTo(0, (document.documentElement.scrollHeight - innerHeight) * 0.8)")
        wait_until(page, "window.__ready()")
        page.wait_for_timeout(300)  # the drag is handled, and the bar set where it settled
        want = page.evaluate(DRAG_AS_WINDOWS_ARRIVE, [0.3, COUNT])
        assert want < COUNT // 2
        shown = wait_until(page, f"(() => {{ const s = ({SHOWN})(); return s.some(i => Math.abs(i - {want}) <= 2) && s; }})()",
                           timeout=5)
        assert min(shown) <= want <= max(shown)
        page.wait_for_timeout(400)  # and it stays there once the bar is set to match
        assert any(abs(i - want) <= 2 for i in page.evaluate(SHOWN)), (want, page.evaluate(SHOWN)[:5])
