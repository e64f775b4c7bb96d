"""Tokens and the search across transcripts in a real browser (Chromium, through Playwright,
as test_view_browser.py drives it), on the core under test: a message's usage and where its
response is counted, the session's totals in the page's header, a row's tokens, the shelf's
and a project's totals ("—" where unknown); a text typed in the shelf's search box, its hits
listed as found, one opening its transcript at its envelope, hostile text inert."""

from __future__ import annotations

import os

import pytest

pytestmark = pytest.mark.slow

from tests.support.browser import a_page, browser, serving, wait_until  # noqa: E402,F401
from test_view_tokens import FIGURES, _followed, _truth  # noqa: E402

from tests.support import hostile  # noqa: E402
from llm_agent_session import Session, assistant_message, user_message  # noqa: E402

HOSTILE = "NEEDLE <img src=x onerror=\"window.__pwned = 1\"><script>window.__pwned = 2</script>\u202e\x1b[2J"


@pytest.fixture
def served(tmp_path, backend_name):
    """A shelf: a Claude Code session imported while it was written (streamed responses
    across imports: repeated usage lines), a transcript that records no usage, and one with
    hostile text beside the word searched for."""
    path, steps = _followed(tmp_path)
    root = str(tmp_path / "out")
    with Session.create(os.path.join(root, "plain", "p.jsonl"), {"title": "no usage here"}) as s:
        s.append_message(user_message("hello NEEDLE"))
        ids = [s.append_message(assistant_message("hi"))]
    with Session.create(os.path.join(root, "plain", "q.jsonl"), {"title": "hostile " + hostile.SHORT}) as s:
        s.append_message(user_message("nothing"))
        ids.append(s.append_message(assistant_message(HOSTILE)))
    with serving(root) as (base, token):
        yield {"base": base, "token": token, "truth": _truth(steps), "ids": ids}


@pytest.fixture
def page(browser, served):
    with a_page(browser, served["base"], served["token"]) as p:
        yield p


def _number(text: str) -> int:
    return int(text.replace(",", "").split()[-1])


def test_tokens_per_row_project_shelf_session_and_message(page, served):
    truth = served["truth"]
    total = sum(truth[k] for k in FIGURES)
    page.wait_for_selector(".shelf-row[href]")
    wait_until(page, "document.querySelector('#shelf-count').textContent.indexOf('reading') < 0")
    cells = dict(page.eval_on_selector_all(
        "#shelf-rows a.shelf-row", "rows => rows.map(r => [r.querySelector('.name').textContent, "
        "r.querySelector('.tokens').textContent])"))
    assert _number(cells["out/proj/s.jsonl"]) == total
    assert cells["out/plain/p.jsonl"] == cells["out/plain/q.jsonl"] == "—"  # unknown, never 0
    assert _number(page.inner_text("#shelf-tokens")) == total
    groups = page.eval_on_selector_all("#shelf-rows .group .tokens", "els => els.map(e => e.textContent)")
    assert sorted(groups) == sorted([f"tokens {total:,}", "tokens —"])
    # Filtered to the rows without usage: the totals over the rows shown.
    page.fill("#filter", "plain")
    wait_until(page, "document.querySelector('#shelf-tokens').textContent === 'tokens —'")

    page.set_viewport_size({"width": 1200, "height": 3000})  # the whole session on the screen
    page.goto(served["base"] + "/t/out/proj/s.jsonl")
    page.wait_for_selector("article.role-assistant .tokens-line")
    assert f"tokens {total:,}" in page.inner_text("#status")
    wait_until(page, "document.querySelectorAll('article .tokens-line').length >= 5")  # the whole session drawn
    lines = page.eval_on_selector_all(
        "article .tokens-line", "els => els.map(e => [e.textContent, e.classList.contains('repeat')])")
    counted = [text for text, repeat in lines if not repeat]
    assert len(counted) == truth["responses"] and len(lines) > len(counted)  # the repeats shown, marked
    assert sum(_number(t.split("output ")[1].split(" ·")[0]) for t in counted) == truth["output"]
    # A repeat's link goes to the line its response is counted at.
    page.click("article .tokens-line.repeat button")
    wait_until(page, "document.querySelector('article.target .tokens-line:not(.repeat)') !== null")


def test_search_box_streams_hits_that_open_the_transcript_at_their_envelope(page, served):
    page.wait_for_selector(".shelf-row[href]")
    page.fill("#shelf-search", "needle")
    page.wait_for_selector(".shelf-hit")
    wait_until(page, "document.querySelectorAll('.shelf-hit').length === 2")
    wait_until(page, "document.querySelector('#shelf-search-count').textContent.indexOf('…') < 0")
    marks = page.eval_on_selector_all(".shelf-hit mark", "els => els.map(e => e.textContent)")
    assert marks == ["NEEDLE", "NEEDLE"]
    # The hostile hit: shown, visible, inert.
    text = page.inner_text("#shelf-hits")
    assert "<img src=x" in text and "<U+202E>" in text and "\\x1b" in text
    assert [c for c in text if c in hostile.FORBIDDEN] == []
    assert page.query_selector("#shelf-hits img, #shelf-hits script") is None
    assert page.evaluate("window.__pwned") is None
    # A new text replaces the hits; an empty box hides them.
    page.fill("#shelf-search", "nothing at all here")
    wait_until(page, "document.querySelectorAll('.shelf-hit').length === 0 && "
                     "document.querySelector('#shelf-search-count').textContent.startsWith('0 hits')")
    page.fill("#shelf-search", "needle")
    wait_until(page, "document.querySelectorAll('.shelf-hit').length === 2")
    target = served["ids"][1]
    page.click(f".shelf-hit[href$='{target}']")
    page.wait_for_selector(f"article.target[data-envelope-id='{target}']")
    assert page.url.endswith("?at=" + target)
    assert page.evaluate("window.__pwned") is None
