"""What the page is sent for an envelope: badge classes only from the known ones, whatever
a line says; Markdown the page's Content-Security-Policy lets it show."""

from __future__ import annotations

import os

import pytest
from view_support import ALIGNED_TABLE, SPOOFED_OUTCOMES, write_spoofed_outcomes

from llm_agent_session.visible import visible
from llm_agent_session.view import markdown


def test_a_settles_outcome_never_becomes_a_class(client, shelf):
    write_spoofed_outcomes(os.path.join(shelf.root, "spoofed.jsonl"))
    got = client.get("/api/window", params={"t": "shelf/spoofed.jsonl", "from": 0, "count": 50}).json()
    settles = [item for item in got["items"] if item["type"] == "tool-settled"]
    assert [item["badges"][0] for item in settles] == (
        [{"text": "failed", "cls": "state-failed"}]
        + [{"text": visible(outcome), "cls": "state-other"} for outcome in SPOOFED_OUTCOMES])
    assert [item["title"] for item in settles[1:]] == ["tool settled: " + visible(o) for o in SPOOFED_OUTCOMES]


def test_markdown_table_alignment_is_a_class_not_an_inline_style(backend_name):
    if backend_name != "pure":
        pytest.skip("backend-independent: checked once, in the pure run")
    html = markdown.render(ALIGNED_TABLE)
    assert "style" not in html  # the page's CSP (style-src 'self') refuses inline style
    for align in ("left", "center", "right"):
        assert html.count(f' class="align-{align}"') == 2, html
    assert "<th>none</th>" in html and "<td>4</td>" in html
