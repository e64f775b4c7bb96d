"""What the page is sent for an envelope: badge classes only from the known ones, whatever
a line says; Markdown the page's Content-Security-Policy lets it show."""

from __future__ import annotations

import os

import pytest
from tests.support.view import ALIGNED_TABLE, SPOOFED_OUTCOMES, write_spoofed_outcomes

from llm_agent_session import Session
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


# -- a tool call as one card; thinking with its message; bookkeeping in runs (issue #35) ---------


def _items(client, name):
    import time

    for _ in range(500):
        if all(client.get("/api/transcript", params={"t": name}).json()["ready"].values()):
            break
        time.sleep(0.01)
    return client.get("/api/window", params={"t": name, "from": 0, "count": 200}).json()["items"]


@pytest.fixture
def imported(tmp_path):
    from tests.support.view import build_imported

    return build_imported(str(tmp_path / "shelf"), str(tmp_path / "sources"))


def _name(imported, path):
    return "shelf/" + os.path.relpath(path, imported.root).replace(os.sep, "/")


def _cards(item):
    return [b["call"] for b in item["body"] if "call" in b and b["call"].get("op")]


def test_a_claude_code_call_its_dispatch_result_and_settle_are_one_card(imported):
    """They were four envelopes side by side, each a box of its own; now the message that
    made the call holds its card, and the others say they are part of it."""
    from tests.support.view import client_for

    name = _name(imported, imported.session)
    items = _items(client_for([imported.root]), name)
    by_id = {item["id"]: item for item in items}
    message = next(item for item in items if [c["name"] for c in _cards(item)] == ["Read", "Bash"])
    read, bash = _cards(message)
    assert (read["duration"], bash["duration"]) == (
        {"text": "3 s", "from": "the times of the dispatch and the settle"},) * 2
    assert bash["result"]["text"] == "1 failed: test_iso" and not bash["result"]["shortened"]
    assert [b for b in bash["badges"] if b["cls"].startswith("state-")] == [{"text": "failed", "cls": "state-failed"}]
    assert [what for what, _, _ in bash["parts"]] == ["call", "dispatch", "result", "settle"]
    for what, envelope_id, position in bash["parts"]:
        assert by_id[envelope_id]["i"] == position
        if what != "call":
            assert by_id[envelope_id]["part"] == {"of": message["id"], "i": message["i"], "what": what}
    assert "part" not in message
    pending = next(item for item in items if [c["name"] for c in _cards(item)] == ["Bash"] and item is not message
                   and _cards(item)[0]["id"] == "toolu_again")
    card = _cards(pending)[0]
    assert (card["duration"], card["result"]) == (None, None)
    assert [b["text"] for b in card["badges"] if b["cls"].startswith("state-")] == ["pending: may or may not have run"]
    # A dispatch whose part it is still holds the card (a jump to a tool call lands there).
    dispatch = by_id[bash["parts"][1][1]]
    assert _cards(dispatch)[0]["result"] == bash["result"] and dispatch["part"]["what"] == "dispatch"


def test_a_dispatch_no_message_names_is_the_card_itself(client, shelf):
    write_spoofed_outcomes(os.path.join(shelf.root, "spoofed.jsonl"))
    items = _items(client, "shelf/spoofed.jsonl")
    dispatches = [item for item in items if item["type"] == "tool-dispatched"]
    settles = [item for item in items if item["type"] == "tool-settled"]
    assert dispatches and all("part" not in d and len(_cards(d)) == 1 for d in dispatches)
    # The real settle is part of its card; those of an outcome the fold refuses are lines of their own.
    assert settles[0]["part"] == {"of": dispatches[0]["id"], "i": dispatches[0]["i"], "what": "settle"}
    assert len(settles) == len(SPOOFED_OUTCOMES) + 1 and not any("part" in s for s in settles[1:])
    assert _cards(dispatches[0])[0]["parts"] == [["dispatch", dispatches[0]["id"], dispatches[0]["i"]],
                                                 ["settle", settles[0]["id"], settles[0]["i"]]]


def test_codex_calls_an_unknown_outcome_and_the_durations_results_report(imported):
    from tests.support.view import client_for

    items = _items(client_for([imported.root]), _name(imported, imported.codex))
    cards = {c["name"]: c for item in items if item["type"] == "message" for c in _cards(item)}
    assert cards["shell"]["duration"] == {"text": "10 ms", "from": "the duration its result reports"}
    assert (cards["shell"]["result"]["text"], cards["shell"]["result"]["exit_code"]) == ("a.py\nb.py\n", 0)
    assert cards["apply_patch"]["result"]["exit_code"] == 1
    rm = cards["local_shell"]
    assert [b["text"] for b in rm["badges"] if b["cls"].startswith("state-")] == ["outcome unknown: may or may not have run"]
    assert rm["duration"] is None and rm["note"][0] == "reason" and "rollback" in rm["note"][1]


def test_a_long_result_is_shortened_on_its_card_and_a_settles_duration_wins(client, shelf):
    from llm_agent_session.view.cards import RESULT_CHARS

    items = {item["id"]: item for item in _items(client, "shelf/run.jsonl")}
    card = _cards(items[shelf.ids["a1"]])[0]
    whole = items[shelf.ids["t1"]]["body"][0]["code"]
    assert len(whole) > RESULT_CHARS and card["result"]["shortened"] and card["result"]["chars"] == len(whole)
    assert card["result"]["text"] == whole[:RESULT_CHARS] and card["result"]["to"] == shelf.ids["t1"]
    assert card["duration"] == {"text": "1.5 s", "from": "the settle's duration"}


def test_a_duration_a_line_cannot_hold_is_not_shown(client, shelf):
    """A settle's "duration" of 1e300 seconds (past what a duration is; ``round`` of an
    infinite one would raise), negative or text: the card says the times' instead."""
    path = os.path.join(shelf.root, "durations.jsonl")
    with Session.create(path, {}) as s:
        for k in range(3):
            op = s.append_tool_dispatched(f"c{k}", "bash", {})
            s.append_tool_settled(op, "completed", duration=1.0)
    with open(path) as f:
        text = f.read()
    for duration in ("1e300", "-1", '"soon"'):
        text = text.replace('"duration":1.0', '"duration":' + duration, 1)
    with open(path, "w") as f:
        f.write(text)
    items = _items(client, "shelf/durations.jsonl")
    durations = [_cards(item)[0]["duration"] for item in items if item["type"] == "tool-dispatched"]
    assert len(durations) == 3 and all(d["from"] == "the times of the dispatch and the settle" for d in durations)


def test_thinking_is_a_block_of_its_message_not_an_extra(imported, tmp_path):
    from tests.support.view import client_for

    claude = _items(client_for([imported.root]), _name(imported, imported.session))
    thought = next(item for item in claude if any("thinking" in b for b in item["body"]))
    assert thought["body"][0] == {"thinking": "Let me look.", "chars": 12}
    assert "thinking" not in [k for k, _ in thought["extras"]]
    codex = _items(client_for([imported.root]), _name(imported, imported.codex))
    reasoned = next(item for item in codex if any("thinking" in b for b in item["body"]))
    assert reasoned["body"][0] == {"thinking": "**Looking**", "chars": 11}
    assert "reasoning" not in [k for k, _ in reasoned["extras"]]
    # An extra of that name in another shape stays an extra, shown as JSON.
    odd = tmp_path / "odd" / "odd.jsonl"
    odd.parent.mkdir()
    with Session.create(str(odd), {}) as s:
        s.append_message({"role": "assistant", "content": "hi"}, extra={"thinking": "a string", "reasoning": [1, 2]})
    items = _items(client_for([str(odd.parent)]), "odd/odd.jsonl")
    assert [k for k, _ in items[1]["extras"]] == ["reasoning", "thinking"]
    assert not any("thinking" in b for b in items[1]["body"])


def test_import_checkpoints_side_by_side_are_one_run(imported):
    from tests.support.view import client_for

    items = _items(client_for([imported.root]), _name(imported, imported.session))
    runs = [item["run"] for item in items if item["type"] == "import-checkpoint"]
    start = len(items) - 4
    assert runs == [{"start": start, "count": 4}] * 4 and items[start - 1]["type"] != "import-checkpoint"
    assert all("run" not in item for item in items if item["type"] != "import-checkpoint")
