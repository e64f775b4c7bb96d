"""Tokens in the viewer (issue #35): each message's usage, the session's totals in its
header, a shelf row's and the shelf's, counted exactly once per provider response, as the
library's ``usage`` counts them, and unknown shown as null, never 0.

A Claude Code session followed live is imported in steps: a response streamed across two
imports is two message lines naming the same response id, each with its usage (the
earlier one with the count as it stood). The ground truth is keyed by the unique response
ids of the source: each response's last line."""

from __future__ import annotations

import json
import os
import time
from typing import Any, Dict, List, Tuple

from tests.support import import_fixtures as fx
from tests.support.view import client_for

from llm_agent_session import Session, Usage, assistant_message, user_message

FIGURES = ("input", "output", "cache_read", "cache_write")
# Claude Code's counts, by the names the viewer gives them.
CC_NAMES = {"input": "input_tokens", "output": "output_tokens", "cache_read": "cache_read_input_tokens",
            "cache_write": "cache_creation_input_tokens"}


def _assistant(uuid: str, parent: str, mid: str, block: Dict[str, Any], second: int, output: int,
               input_: int) -> Dict[str, Any]:
    line = fx.cc_assistant(uuid, parent, mid, block, f"2025-08-20T09:00:{second:02d}.000Z")
    line["message"]["usage"] = fx.cc_usage(output, input_=input_, cache_read=1000 * second, cache_write=10 * second)
    return line


def _streamed_session() -> List[List[Dict[str, Any]]]:
    """A session's lines in the steps Claude Code wrote them: three responses, each streamed
    over several lines that repeat its id and usage (the last with the final count), two of
    them across a step's end."""
    t = "2025-08-20T09:00:{:02d}.000Z".format
    return [
        [fx.cc_user("u1", None, "count the tokens", t(0)),
         _assistant("a1", "u1", "msg_A", {"type": "thinking", "thinking": "hm", "signature": "s"}, 1, 5, 100),
         _assistant("a2", "a1", "msg_A", {"type": "text", "text": "Looking."}, 1, 5, 100)],
        [_assistant("a3", "a2", "msg_A", fx.tool_use("toolu_1", "Bash", {"command": "ls"}), 1, 48, 100),
         fx.cc_user("r1", "a3", [fx.tool_result("toolu_1", "a.py")], t(3)),
         _assistant("a4", "r1", "msg_B", {"type": "text", "text": "One file."}, 4, 9, 7)],
        [_assistant("a5", "a4", "msg_B", fx.tool_use("toolu_2", "Read", {"file_path": "a.py"}), 4, 31, 7),
         fx.cc_user("r2", "a5", [fx.tool_result("toolu_2", "x = 1")], t(6)),
         _assistant("a6", "r2", "msg_C", {"type": "text", "text": "Done."}, 7, 12, 3)],
    ]


def _truth(steps: List[List[Dict[str, Any]]]) -> Dict[str, int]:
    """Each response's usage at its last line, keyed by its id, summed."""
    last: Dict[str, Dict[str, int]] = {}
    for step in steps:
        for line in step:
            if line.get("type") == "assistant":
                last[line["message"]["id"]] = line["message"]["usage"]
    return {name: sum(u[CC_NAMES[name]] for u in last.values()) for name in FIGURES} | {"responses": len(last)}


def _rows(client) -> Dict[str, Dict[str, Any]]:
    rows: List[Dict[str, Any]] = []
    for _ in range(3000):
        got = client.get("/api/shelf", params={"from": len(rows)}).json()
        rows += got["rows"]
        if got["done"]:
            return {row["name"]: row for row in rows}
        time.sleep(0.01)
    raise AssertionError("the shelf never finished")


def _followed(tmp_path) -> Tuple[str, List[List[Dict[str, Any]]]]:
    """The session imported after each step, as the viewer's live follow imports it."""
    from llm_agent_session.importers import claude_code

    steps = _streamed_session()
    source = tmp_path / "src" / "proj" / "s.jsonl"
    for step in steps:
        source.parent.mkdir(parents=True, exist_ok=True)
        with open(source, "a", encoding="utf-8") as f:
            f.write(fx.jsonl(step))
        for report in claude_code.import_tree(str(tmp_path / "src"), str(tmp_path / "out")):
            assert report["status"] in ("imported", "appended"), report
    return str(tmp_path / "out" / "proj" / "s.jsonl"), steps


def _usages(client, name: str) -> List[Dict[str, Any]]:
    count = client.get("/api/transcript", params={"t": name}).json()["count"]
    items = client.get("/api/window", params={"t": name, "from": 0, "count": count}).json()["items"]
    return [dict(item["tokens"], id=item["id"]) for item in items if "tokens" in item]


def test_a_streamed_response_is_counted_once_per_message_session_and_row(tmp_path):
    path, steps = _followed(tmp_path)
    truth = _truth(steps)
    with open(path, encoding="utf-8") as f:  # the repeats the test is about: one response, several lines
        ids = [json.loads(line)["payload"].get("token-usage", {}).get("response-id") for line in f
               if json.loads(line)["type"] == "message"]
    assert ids.count("msg_A") == 2 and ids.count("msg_B") == 2
    client = client_for([str(tmp_path / "out")])
    name = "out/proj/s.jsonl"

    row = _rows(client)[name]
    assert {k: row["usage"][k] for k in (*FIGURES, "responses")} == truth
    assert row["tokens"] == sum(truth[k] for k in FIGURES)
    session = client.get("/api/transcript", params={"t": name}).json()["tokens"]
    assert session == {"tokens": row["tokens"], "usage": row["usage"], "ready": True}

    # Per message: every line's own usage, and the one of each response that counts.
    shown = _usages(client, name)
    assert len(shown) == 5
    counted = [u for u in shown if u["counted"]]
    assert {k: sum(u[k] for u in counted) for k in FIGURES} | {"responses": len(counted)} == truth
    for repeat in (u for u in shown if not u["counted"]):
        assert repeat["counted_at"] in {u["id"] for u in counted}
    # One envelope asked for alone says the same.
    at = client.get("/api/locate", params={"t": name, "id": counted[0]["id"]}).json()
    one = client.get("/api/envelope", params={"t": name, "i": at["i"]}).json()
    assert one["tokens"]["counted"] is True and one["tokens"]["output"] == counted[0]["output"]


def test_codex_token_counts_each_response_once(tmp_path):
    """Codex writes a token count after each response, and again when only its rate limits
    change: the response's counts (input including the cached part) once each."""
    from llm_agent_session.importers import codex

    fx.import_into(codex, tmp_path, fx.codex_rollout(), "codex.jsonl")
    client = client_for([str(tmp_path / "out")])
    # (input, cached input, output, reasoning) of each response, as the rollout's counts say.
    last = [(3900, 3584, 40, 32), (4200, 3584, 80, 64), (5100, 4096, 12, 0)]
    truth = {"input": sum(i - c for i, c, _, _ in last), "output": sum(o for _, _, o, _ in last),
             "cache_read": sum(c for _, c, _, _ in last), "cache_write": None}
    row = _rows(client)["out/codex.jsonl"]
    assert {k: row["usage"][k] for k in FIGURES} == truth
    assert row["tokens"] == sum(v for v in truth.values() if v is not None)
    assert client.get("/api/transcript", params={"t": "out/codex.jsonl"}).json()["tokens"]["usage"] == row["usage"]
    shown = _usages(client, "out/codex.jsonl")
    assert {k: sum(u[k] or 0 for u in shown if u["counted"]) for k in ("input", "output", "cache_read")} == {
        k: truth[k] for k in ("input", "output", "cache_read")}
    assert all(u["cache_write"] is None for u in shown)  # not recorded: null, never 0


def test_a_session_without_usage_says_unknown_not_zero(tmp_path):
    path = str(tmp_path / "t" / "plain.jsonl")
    os.makedirs(os.path.dirname(path))
    with Session.create(path, {"agent": "mine"}) as s:
        s.append_message(user_message("hi"))
        s.append_message(assistant_message("hello"))
    client = client_for([str(tmp_path / "t")])
    row = _rows(client)["t/plain.jsonl"]
    assert row["tokens"] is None
    assert {k: row["usage"][k] for k in FIGURES} == dict.fromkeys(FIGURES)
    assert row["usage"]["unmeasured"] == 1  # the assistant's message that records none
    info = client.get("/api/transcript", params={"t": "t/plain.jsonl"}).json()
    assert info["tokens"]["tokens"] is None and info["tokens"]["usage"]["output"] is None
    assert _usages(client, "t/plain.jsonl") == []  # no message says any usage


def test_a_big_files_tokens_are_counted_in_the_background(tmp_path, monkeypatch):
    """A file past ON_THE_ASK is read in a thread: the first screen does not wait for it;
    until it is done the answer says so (ready false), then it has the totals."""
    from llm_agent_session.view import tokens

    monkeypatch.setattr(tokens, "ON_THE_ASK", 0)
    path, steps = _followed(tmp_path)
    truth = _truth(steps)
    client = client_for([str(tmp_path / "out")])
    seen = []
    for _ in range(1000):
        got = client.get("/api/transcript", params={"t": "out/proj/s.jsonl"}).json()["tokens"]
        seen.append(got["ready"])
        if got["ready"]:
            break
        assert got == {"ready": False, "tokens": None, "usage": None}  # nothing read before
        time.sleep(0.01)
    assert seen[-1] is True and {k: got["usage"][k] for k in (*FIGURES, "responses")} == truth
    shown = _usages(client, "out/proj/s.jsonl")
    assert sum(u["counted"] is True for u in shown) == truth["responses"]
    # Grown: counted again in the background, the last totals meanwhile.
    with Session.load(path) as s:
        s.append_message(assistant_message("more"), usage=Usage(output=5, response_id="r-new"))
    for _ in range(1000):
        got = client.get("/api/transcript", params={"t": "out/proj/s.jsonl"}).json()["tokens"]
        if got["ready"]:
            break
        assert got["usage"]["output"] == truth["output"]  # the last reading's
        time.sleep(0.01)
    assert got["usage"]["output"] == truth["output"] + 5 and got["usage"]["responses"] == truth["responses"] + 1


def _all_read_to_the_truth(client: Any, truth: Dict[str, Any]) -> None:
    """Once the tokens and the history are read (asked again until they are), the tokens
    are the truth."""
    for _ in range(1000):
        got = client.get("/api/transcript", params={"t": "out/proj/s.jsonl"}).json()
        if got["tokens"]["ready"] and got["ready"]["history"]:
            break
        time.sleep(0.01)
    assert got["tokens"]["ready"] and {k: got["tokens"]["usage"][k] for k in (*FIGURES, "responses")} == truth


def test_a_big_files_tokens_wait_for_the_viewers_pass_under_way(tmp_path, monkeypatch):
    """A big file's token count is one of the viewer's passes over a whole file, which are
    made one at a time (view/background.py), never beside one another: while another pass
    holds the turn, the tokens stay not ready (and the history unread); after it, both are
    read, the tokens to the truth."""
    from llm_agent_session.view import background, tokens

    monkeypatch.setattr(tokens, "ON_THE_ASK", 0)
    path, steps = _followed(tmp_path)
    truth = _truth(steps)
    client = client_for([str(tmp_path / "out")])
    with background.PASS:  # another pass under way
        for _ in range(30):  # a count of this file takes a few milliseconds when it may run
            got = client.get("/api/transcript", params={"t": "out/proj/s.jsonl"}).json()
            assert got["tokens"] == {"ready": False, "tokens": None, "usage": None}
            assert got["ready"]["history"] is False
            time.sleep(0.01)
    _all_read_to_the_truth(client, truth)


def test_a_big_files_passes_wait_for_the_pages_first_window(tmp_path, monkeypatch):
    """The passes over a whole big file (its history, secret count, token count) wait until
    the page has had its first window (view/background.py), so that they do not take the
    server's time from the first screen's requests; then they run."""
    import threading

    from llm_agent_session.view import background, tokens

    monkeypatch.setattr(tokens, "ON_THE_ASK", 0)
    monkeypatch.setattr(background, "WAIT_FROM", 0)
    monkeypatch.setattr(background, "FIRST_WINDOW", threading.Event())
    monkeypatch.setattr(background, "FIRST_WINDOW_WAIT", 60.0)  # the test passes long before
    path, steps = _followed(tmp_path)
    truth = _truth(steps)
    client = client_for([str(tmp_path / "out")])
    for _ in range(30):  # each pass would take a few milliseconds if it ran
        got = client.get("/api/transcript", params={"t": "out/proj/s.jsonl"}).json()
        assert got["tokens"]["ready"] is False and got["ready"]["history"] is False
        time.sleep(0.01)
    assert client.get("/api/window", params={"t": "out/proj/s.jsonl", "from": 0, "count": 20}).status_code == 200
    _all_read_to_the_truth(client, truth)
