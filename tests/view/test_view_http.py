"""The viewer over HTTP, in process: what its data API answers (who may talk to it:
test_view_network.py's table)."""

from __future__ import annotations

import json
import os
import shutil

from tests.support.view import client_for, verdict_cases

from llm_agent_session import Session, user_message
from llm_agent_session.view.security import CSP


def test_every_answer_carries_the_csp_and_nosniff(client):
    for path in ("/", "/static/viewer.js", "/api/shelf", "/api/transcript?t=nothing.jsonl", "/nowhere"):
        r = client.get(path)
        assert r.headers["content-security-policy"] == CSP, path
        assert "frame-ancestors 'none'" in CSP and "script-src 'self'" in CSP and "unsafe-inline" not in CSP
        assert r.headers["x-content-type-options"] == "nosniff"
        assert r.headers["x-frame-options"] == "DENY"
    assert "content-security-policy" in client_for(["."], token=None).get("/api/shelf").headers  # a refusal too


def test_only_transcripts_under_the_paths_given_are_served(client, shelf, tmp_path):
    outside = tmp_path / "outside.jsonl"
    shutil.copyfile(shelf.run, outside)
    os.symlink(outside, os.path.join(shelf.root, "link-out.jsonl"))
    os.symlink(tmp_path, os.path.join(shelf.root, "dir-out"))
    refused = ["../outside.jsonl", "shelf/../outside.jsonl", "shelf/../../etc/passwd", "/etc/passwd",
               str(outside), "shelf//run.jsonl", "shelf/./run.jsonl", "shelf/link-out.jsonl",
               "shelf/dir-out/outside.jsonl", "shelf\\..\\outside.jsonl"]
    for name in refused:
        r = client.get("/api/transcript", params={"t": name})
        assert r.status_code in (403, 404) and "error" in r.json(), name
    assert client.get("/api/transcript", params={"t": "shelf/link-out.jsonl"}).status_code == 403
    assert client.get("/api/transcript", params={"t": "../outside.jsonl"}).status_code == 403
    for name in ("shelf/notes.jsonl", "shelf/readme.txt", "shelf", "elsewhere/run.jsonl"):
        r = client.get("/api/window", params={"t": name})
        assert r.status_code == 404 or r.json()["count"] == 0, name
    assert client.get("/api/transcript", params={"t": "shelf/run.jsonl"}).status_code == 200


def _shelf_rows(client):
    for _ in range(200):
        got = client.get("/api/shelf").json()
        if got["done"]:
            return got["rows"]
        import time

        time.sleep(0.02)
    raise AssertionError("the shelf never finished")


def test_the_shelf_lists_every_transcript_with_its_counts_and_verdict(client, shelf):
    rows = {r["name"]: r for r in _shelf_rows(client)}
    assert sorted(rows) == ["shelf/run.jsonl", "shelf/sub/other.jsonl"]  # not notes.jsonl, not readme.txt
    run = rows["shelf/run.jsonl"]
    assert (run["agent"], run["model"], run["verdict"]) == ("cli-test", "m-1", "clean")
    assert (run["tool_calls"], run["failed"], run["pending"]) == (5, 1, 2)
    assert run["messages"] == 13 and run["live"] is not None and run["first"] <= run["last"]
    assert rows["shelf/sub/other.jsonl"]["title"] == "the other one"


def test_the_transcript_says_loads_verdict_in_the_shelfs_words(client, shelf):
    """The page mapped the old codes 0-3 ("load: ?" for every torn or failing file)."""
    cases = verdict_cases(shelf.root, shelf.run)
    rows = {r["name"]: r for r in _shelf_rows(client)}
    for name, (code, text) in cases.items():
        for _ in range(500):
            info = client.get("/api/transcript", params={"t": name}).json()
            if info["ready"]["verdict"]:
                break
            import time

            time.sleep(0.01)
        assert (info["verdict"]["code"], info["verdict"]["text"]) == (code, text), name
        if name in rows:  # a file that is no transcript is not on the shelf
            assert (rows[name]["verdict"], rows[name]["why"]) == (text, info["verdict"]["why"]), name
    assert "shelf/notes.jsonl" not in rows
    assert "bytes a load would cut" in rows["shelf/torn.jsonl"]["why"]
    with open(shelf.run, "rb") as f:
        line = f.read().count(b"\n") + 1  # the id again, the line after the original's last
    assert f"line {line} (byte" in rows["shelf/failing.jsonl"]["why"] and "duplicate" in rows["shelf/failing.jsonl"]["why"]


def _wait_ready(client, name="shelf/run.jsonl"):
    import time

    for _ in range(500):
        info = client.get("/api/transcript", params={"t": name}).json()
        if all(info["ready"].values()):
            return info
        time.sleep(0.01)
    raise AssertionError(info)


def test_a_window_shows_what_became_of_each_envelope(client, shelf):
    info = _wait_ready(client)
    assert info["verdict"]["text"] == "clean" and info["pending"] == 2
    got = client.get("/api/window", params={"t": "shelf/run.jsonl", "from": 0, "count": 200}).json()
    items = {item["id"]: item for item in got["items"]}
    assert got["count"] == info["count"] == len(items)
    badges = lambda id_: [b["text"] for b in items[id_]["badges"]]  # noqa: E731
    assert any(t.startswith("compacted") for t in badges(shelf.ids["user1"]))
    assert any(t.startswith("rewound") for t in badges(shelf.ids["oops"]))
    assert any(t.startswith("elided") for t in badges(shelf.ids["t3"]))
    assert "failed" in badges(shelf.ids["t2"])  # the failed tool result is marked
    assert "pending: may or may not have run" in badges(shelf.ids["op5"])
    compaction = items[shelf.ids["compaction"]]
    assert "replaced 5 message(s)" in [b["text"] for b in compaction["badges"]]
    assert ["tokens", "5,200 → 310"] in compaction["body"][1]["kv"]
    a1 = items[shelf.ids["a1"]]  # the call paired with its dispatch and its result
    call = next(b["call"] for b in a1["body"] if "call" in b)
    assert call["name"] == "bash" and "completed" in [b["text"] for b in call["badges"]]
    assert a1["extras"] == [["finish-reason", '"tool_calls"']]  # extras apart, collapsed by the page
    assert not any("finish-reason" in json.dumps(b) for b in a1["body"])  # and not shown twice
    live = client.get("/api/window", params={"t": "shelf/run.jsonl", "mode": "live", "count": 200}).json()
    with Session.load(shelf.run) as s:
        assert [item["id"] for item in live["items"]] == s.message_ids


def test_unknown_token_counts_are_shown_as_unknown_never_0(client, shelf, tmp_path):
    with open(shelf.run, "ab") as f:
        f.write(b'{"id":"cx","payload":{"fallback":false,"replaces-through-id":"' + shelf.ids["a4"].encode()
                + b'","summary":"s","tokens-after":null},"ts":"2026-01-01T00:00:00.000000Z","type":"compaction","v":1}\n')
    _wait_ready(client)
    got = client.get("/api/envelope", params={"t": "shelf/run.jsonl", "id": "cx"}).json()
    assert ["tokens", "unknown → unknown"] in got["body"][1]["kv"]


def test_a_jump_comes_with_the_window_that_holds_its_envelope(client, shelf):
    """``/api/locate``'s ``window=N``: the window of N that holds the envelope found (from a
    multiple of N), as ``/api/window`` answers it, so a jump is one round trip; none where
    nothing is found, and without ``window`` none either."""
    _wait_ready(client)
    q = lambda **kw: client.get("/api/locate", params={"t": "shelf/run.jsonl", **kw}).json()  # noqa: E731
    window = lambda start, n: client.get(  # noqa: E731
        "/api/window", params={"t": "shelf/run.jsonl", "from": start, "count": n}).json()
    for n in (1, 4, 5):
        for name in ("user1", "compaction", "op5"):
            got = q(id=shelf.ids[name], window=n)
            i = got["i"]
            assert got["window"] == window(i // n * n, n) and i in [item["i"] for item in got["window"]["items"]]
        got = q(kind="rewind", **{"from": -1, "window": n})
        assert got["window"] == window(got["i"] // n * n, n)
        ts = window(0, 200)["items"][7]["ts"]
        got = q(time=ts, window=n)
        assert got["window"] == window(got["i"] // n * n, n)
    assert "window" not in q(id="no-such-id", window=4) and "window" not in q(id=shelf.ids["op5"])
    assert len(q(id=shelf.ids["op5"], window=10_000)["window"]["items"]) <= 200


def test_jumps_by_id_time_and_kind(client, shelf):
    info = _wait_ready(client)
    q = lambda **kw: client.get("/api/locate", params={"t": "shelf/run.jsonl", **kw}).json()  # noqa: E731
    window = client.get("/api/window", params={"t": "shelf/run.jsonl", "count": 200}).json()["items"]
    index = {item["id"]: item["i"] for item in window}
    assert q(id=shelf.ids["user1"])["i"] == index[shelf.ids["user1"]]  # a compacted id: found too
    assert q(id="no-such-id")["i"] is None
    ts = window[7]["ts"]
    first_at_or_after = min(item["i"] for item in window if item["ts"] >= ts)
    assert q(time=ts)["i"] == first_at_or_after
    assert q(time="2999-01-01T00:00")["i"] is None and q(time="1999-01-01")["i"] == 0
    assert client.get("/api/locate", params={"t": "shelf/run.jsonl", "time": "yesterday"}).status_code == 400
    assert q(kind="compaction", **{"from": -1})["i"] == index[shelf.ids["compaction"]]
    assert q(kind="rewind", **{"from": -1})["i"] == index[shelf.ids["rewind"]]
    assert q(kind="failed", **{"from": -1})["i"] == index[window[index[shelf.ids["t2"]] - 1]["id"]]
    assert q(kind="pending", **{"from": -1})["i"] == index[shelf.ids["op4"]]
    assert q(kind="pending", **{"from": index[shelf.ids["op4"]]})["i"] == index[shelf.ids["op5"]]
    assert q(kind="pending", **{"from": index[shelf.ids["op5"]], "dir": "back"})["i"] == index[shelf.ids["op4"]]
    assert q(kind="tool-call", **{"from": info["count"]})["i"] is None


def _search(client, **params):
    r = client.get("/api/search", params={"t": "shelf/run.jsonl", **params})
    assert r.headers["content-type"].startswith("application/x-ndjson")
    lines = [json.loads(line) for line in r.text.splitlines()]
    assert lines[-1]["done"]
    return [hit for line in lines for hit in line.get("hits", [])], lines[-1]["total"]


def test_search_streams_hits_classified_over_the_whole_file(client, shelf):
    _wait_ready(client)
    window = client.get("/api/window", params={"t": "shelf/run.jsonl", "count": 200}).json()["items"]
    index = {item["id"]: item["i"] for item in window}
    hits, total = _search(client, q="secret-build-log")  # a tool result, any case
    assert total == 1 and hits == [[index[shelf.ids["t3"]], ["results"]]]
    assert _search(client, q="secret-build-log", case="1")[1] == 0
    hits, _ = _search(client, q="pytest")  # arguments (calls and dispatches)
    assert all("arguments" in groups or "content" in groups for _, groups in hits) and len(hits) >= 4
    assert _search(client, q="tool_calls")[1] == 0  # only in an extra (and as a key)
    assert _search(client, q="tool_calls", extras="1")[1] >= 3
    hits, _ = _search(client, q='"cmd": "pytest')  # quotes match as the file escapes them
    assert hits and all(groups == ["arguments"] for _, groups in hits)
    hits, _ = _search(client, q="ship it when green")
    assert hits == [[index[shelf.ids["user_last"]], ["content"]]]
    assert client.get("/api/search", params={"t": "shelf/run.jsonl", "q": ""}).status_code == 400


def test_raw_line_full_envelope_and_deep_link_page(client, shelf):
    _wait_ready(client)
    raw = client.get("/api/envelope", params={"t": "shelf/run.jsonl", "id": shelf.ids["t1"], "raw": "1"}).json()["raw"]
    assert json.loads(raw)["id"] == shelf.ids["t1"]
    short = client.get("/api/envelope", params={"t": "shelf/run.jsonl", "id": shelf.ids["t1"]}).json()
    full = client.get("/api/envelope", params={"t": "shelf/run.jsonl", "id": shelf.ids["t1"], "full": "1"}).json()
    assert full["body"][0]["code"].count("collected line") == 400 and short["body"] == full["body"]  # 10,400 < limit
    page = client.get(f"/t/shelf/run.jsonl?at={shelf.ids['t1']}")
    assert page.status_code == 200 and '<script src="/static/viewer.js"' in page.text and "<script>" not in page.text


def test_follow_sees_appends_and_a_repair_renamed_over_the_file(client, shelf):
    info = _wait_ready(client)
    with Session.load(shelf.run) as s:
        s.append_message(user_message("appended while watched"))
    got = client.get("/api/follow", params={"t": "shelf/run.jsonl"}).json()
    assert got["count"] == info["count"] + 1 and got["generation"] == info["generation"]
    with open(shelf.run, "ab") as f:
        f.write(b'{"id":"torn')  # a torn tail; load repairs it by renaming a new file over the path
    Session.load(shelf.run).close()
    got = client.get("/api/follow", params={"t": "shelf/run.jsonl"}).json()
    assert got["generation"] == info["generation"] + 1 and got["count"] == info["count"] + 1


def test_the_server_socket_sends_without_waiting_for_acks():
    """A keep-alive request waited 40 ms on Nagle and a delayed ACK until the listening
    socket set TCP_NODELAY (asyncio sets it only where the socket's proto is IPPROTO_TCP):
    every connection it accepts has TCP_NODELAY on."""
    import socket

    from llm_agent_session.view.server import bind

    listener = bind("127.0.0.1", 0)
    client = socket.create_connection(listener.getsockname()[:2])
    accepted, _ = listener.accept()
    try:
        assert listener.proto == socket.IPPROTO_TCP
        assert accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
    finally:
        for s in (accepted, client, listener):
            s.close()


def test_imported_claude_code_and_codex_histories(tmp_path):
    """Imported sessions on the shelf and in a window: the source's own times, the model the
    session names (as the dataset's sessions table takes it), failed results marked, a
    token count the source did not record shown as unknown, search over what was said."""
    from tests.support import import_fixtures as fx

    from llm_agent_session.importers import claude_code, codex

    fx.import_into(claude_code, tmp_path, fx.claude_code_session(), "cc.jsonl")
    fx.import_into(codex, tmp_path, fx.codex_rollout(), "codex.jsonl")
    c = client_for([str(tmp_path / "out")])
    rows = {r["name"]: r for r in _shelf_rows(c)}
    cc, cx = rows["out/cc.jsonl"], rows["out/codex.jsonl"]
    assert (cc["agent"], cc["model"], cc["title"], cc["verdict"]) == ("claude-code", "claude-opus-4-1", "Date parser fix",
                                                                      "clean")
    assert (cx["agent"], cx["model"]) == ("codex", "gpt-5-codex")
    assert cc["source"].endswith("src/cc.jsonl") and cc["first"] == "2025-08-20T09:00:00.000000Z"
    assert (cc["failed"], cc["pending"], cx["failed"]) == (1, 1, 1)

    _wait_ready(c, "out/cc.jsonl")
    items = c.get("/api/window", params={"t": "out/cc.jsonl", "count": 200}).json()["items"]
    said = {json.dumps(item["body"]): item for item in items if item["type"] == "message"}
    first = next(item for text, item in said.items() if "fix the date parser" in text)
    assert first["ts"].startswith("2025-08-20T09:00:00")  # the source's time, not the import's
    # The tool message (the result's start is on the assistant's card too).
    failed = next(item for text, item in said.items() if "1 failed: test_iso" in text and item["title"] == "tool")
    assert "failed" in [b["text"] for b in failed["badges"]]
    compaction = next(item for item in items if item["type"] == "compaction")
    assert ["tokens", "155,000 → unknown"] in compaction["body"][1]["kv"]
    r = c.get("/api/search", params={"t": "out/cc.jsonl", "q": "DATE PARSER"})
    hits = [hit for line in r.text.splitlines() for hit in json.loads(line).get("hits", [])]
    assert [groups for _, groups in hits] == [["content"]]  # the first prompt (the title is the meta's: extras)
    r = c.get("/api/search", params={"t": "out/codex.jsonl", "q": "patch rejected"})
    hits = [hit for line in r.text.splitlines() for hit in json.loads(line).get("hits", [])]
    assert hits and all(groups == ["results"] for _, groups in hits)
