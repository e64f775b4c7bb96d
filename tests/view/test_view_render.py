"""What the page is sent for an envelope: badge classes only from the known ones, whatever
a line says."""

from __future__ import annotations

import os

from view_support import SPOOFED_OUTCOMES, write_spoofed_outcomes

from llm_agent_session.cli.output import visible


def test_a_settles_outcome_never_becomes_a_class(client, shelf):
    write_spoofed_outcomes(os.path.join(shelf.root, "spoofed.jsonl"))
    got = client.get("/api/window", params={"t": "shelf/spoofed.jsonl", "from": 0, "count": 50}).json()
    settles = [item for item in got["items"] if item["type"] == "tool-settled"]
    assert [item["badges"][0] for item in settles] == (
        [{"text": "failed", "cls": "state-failed"}]
        + [{"text": visible(outcome), "cls": "state-other"} for outcome in SPOOFED_OUTCOMES])
    assert [item["title"] for item in settles[1:]] == ["tool settled: " + visible(o) for o in SPOOFED_OUTCOMES]
