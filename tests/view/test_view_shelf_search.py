"""The shelf's search across every transcript (issue #35, item 2), through its data API
(``/api/shelf-search``): hits in walk order with the session's title, the time, a snippet
cut around the match and a link to the envelope; a cursor (``from``); a limit and more;
case; a repeated search answered by the cache; a search stopped; the token required;
hostile text made visible in the JSON."""

from __future__ import annotations

import os
import time
from typing import Any, Dict, List

from tests.support import hostile
import pytest
from tests.support.view import TOKEN, build_sources, client_for

from llm_agent_session import Session, assistant_message, user_message
from llm_agent_session.view import shelf_search


def _ask(client, q: str, **params: Any) -> Dict[str, Any]:
    got = client.get("/api/shelf-search", params={"q": q, **params})
    assert got.status_code == 200, got.text
    return got.json()


def _all(client, q: str, start: int = 0, **params: Any) -> Dict[str, Any]:
    """Every hit from `start` on, read from the cursor as the page does, and the last answer."""
    hits: List[Dict[str, Any]] = []
    for _ in range(2000):
        got = _ask(client, q, **{"from": start + len(hits), **params})
        assert got["count"] == start + len(hits) + len(got["hits"])
        hits += got["hits"]
        if got["done"]:
            return dict(got, hits=hits)
    raise AssertionError("the search never finished")


def _shelf_read(client) -> None:
    for _ in range(3000):
        if client.get("/api/shelf", params={"from": 0}).json()["done"]:
            return
        time.sleep(0.01)
    raise AssertionError("the shelf never finished")


def _write(path: str, title: str, said: List[str]) -> List[str]:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    ids = []
    with Session.create(path, {"title": title}) as s:
        for k, text in enumerate(said):
            ids.append(s.append_message(user_message(text) if k % 2 == 0 else assistant_message(text)))
    return ids


@pytest.fixture
def shelf(tmp_path):
    root = str(tmp_path / "shelf")
    a = _write(os.path.join(root, "a.jsonl"), "First session", ["find the Needle here", "no", "needle again"])
    b = _write(os.path.join(root, "sub", "b.jsonl"), "Second session", ["nothing", "the NEEDLE, loud"])
    c = _write(os.path.join(root, "z.jsonl"), "Third", ["needle " * 3 + "and more"] + [f"needle {k}" for k in range(30)])
    with open(os.path.join(root, "notes.jsonl"), "w") as f:  # not a transcript: not searched, no hit
        f.write('{"needle": 1}\n')
    return {"root": root, "a": a, "b": b, "c": c}


def test_hits_come_in_walk_order_with_title_time_snippet_and_link(shelf):
    client = client_for([shelf["root"]])
    got = _all(client, "needle")
    where = [(h["name"], h["id"]) for h in got["hits"]]
    # ASCII letters fold by default; the walk's order (a directory's files, then its directories).
    assert where == [("shelf/a.jsonl", shelf["a"][0]), ("shelf/a.jsonl", shelf["a"][2])] + [
        ("shelf/z.jsonl", i) for i in shelf["c"]] + [("shelf/sub/b.jsonl", shelf["b"][1])]
    first = got["hits"][0]
    assert (first["before"], first["match"], first["after"]) == ("find the ", "Needle", " here")
    assert first["link"] == "shelf/a.jsonl" and first["line"] == 2 and first["ts"].endswith("Z")
    assert first["type"] == "message" and first["role"] == "user"
    assert not got["more"] and got["searched"] == got["found"] >= 3
    # The titles come from the shelf's rows (made as the search goes): once they are, every hit has one.
    _shelf_read(client)
    titles = {h["name"]: h["title"] for h in _all(client, "needle")["hits"]}
    assert titles == {"shelf/a.jsonl": "First session", "shelf/sub/b.jsonl": "Second session", "shelf/z.jsonl": "Third"}
    # Match case: only the exact spelling.
    exact = _all(client, "NEEDLE", case=1)["hits"]
    assert [(h["name"], h["id"]) for h in exact] == [("shelf/sub/b.jsonl", shelf["b"][1])]
    assert _all(client, "nowhere at all")["hits"] == []


def test_a_limit_then_more_from_the_cursor(shelf):
    client = client_for([shelf["root"]])
    everything = [(h["name"], h["id"]) for h in _all(client, "needle")["hits"]]
    first = _all(client, "needle", limit=5)
    assert len(first["hits"]) == 5 and first["more"] and first["limit"] == 5
    again = _all(client, "needle", limit=10)  # more: the same first hits, then the next
    assert [(h["name"], h["id"]) for h in again["hits"]] == everything[:10]
    # From a cursor: only what comes after it.
    rest = _all(client, "needle", 10, limit=1000)
    assert [(h["name"], h["id"]) for h in rest["hits"]] == everything[10:] and not rest["more"]
    for bad in ({"limit": 0}, {"limit": shelf_search.MAX_LIMIT + 1}, {"limit": "x"}, {"from": "y"}):
        assert client.get("/api/shelf-search", params={"q": "needle", **bad}).status_code == 400
    assert client.get("/api/shelf-search").status_code == 400  # no text


def test_a_repeated_search_reads_only_what_changed(shelf):
    """The viewer's search cache: a transcript unchanged is not read again; one that grew is
    read from its old end, and its new hit found."""
    client = client_for([shelf["root"]])
    searches = client.app.app.state.searches  # the Guard wraps the Starlette app
    searches.cache.settle_ns = 0  # a file's identity vouches for it at once (tests write fast)
    first = _all(client, "needle")
    assert first["cached"] == 0
    _ask(client, "needle", stop=1)
    searches.kept.clear()  # a new search, with the cache
    time.sleep(0.05)
    with Session.load(os.path.join(shelf["root"], "a.jsonl")) as s:
        grown = s.append_message(user_message("a new needle"))
    again = _all(client, "needle")
    assert again["cached"] == again["searched"] - 1  # all but the one that grew
    assert [(h["name"], h["id"]) for h in again["hits"]] == [(h["name"], h["id"]) for h in first["hits"]][:2] + [
        ("shelf/a.jsonl", grown)] + [(h["name"], h["id"]) for h in first["hits"]][2:]


def test_a_new_search_stops_the_old_one(shelf):
    client = client_for([shelf["root"]])
    searches = client.app.app.state.searches
    _ask(client, "needle", limit=1)
    old = searches.kept[("needle", True)]
    assert _ask(client, "needle", stop=1) == {"stopped": True}
    assert old.cancelled and old.search._stop.is_set()
    # Asked again, it starts afresh and finishes.
    assert len(_all(client, "needle")["hits"]) > 1


def test_the_search_needs_the_token(shelf):
    assert client_for([shelf["root"]]).get("/api/shelf-search", params={"q": "needle"}).status_code == 200
    client = client_for([shelf["root"]], token=None)
    assert client.get("/api/shelf-search", params={"q": "needle"}).status_code == 403
    wrong = client_for([shelf["root"]], token=TOKEN + "x")
    assert wrong.get("/api/shelf-search", params={"q": "needle"}).status_code == 403


def test_hostile_text_is_made_visible_in_the_hits(tmp_path):
    root = str(tmp_path / "shelf")
    said = "NEEDLE " + hostile.H + " <img src=x onerror=alert(1)>"
    _write(os.path.join(root, "h.jsonl"), hostile.SHORT, [said])
    client = client_for([root])
    _shelf_read(client)
    got = _all(client, "needle")
    assert len(got["hits"]) == 1
    hit = got["hits"][0]
    text = "".join(str(v) for v in hit.values())
    assert [c for c in text if c in hostile.FORBIDDEN] == []
    assert hit["match"] == "NEEDLE" and "\\x1b" in hit["after"] and "<U+202E>" in hit["title"]
    body = client.get("/api/shelf-search", params={"q": "needle"}).content
    hostile.assert_clean(body, "the shelf search's JSON")


def test_claude_code_and_codex_sessions_are_searched_through_their_imports(tmp_path):
    """The viewer given the source folders: their sessions are on the shelf as imported,
    and the search finds what was said in them, under the names the shelf lists."""
    sources = build_sources(str(tmp_path))
    client = client_for([sources.projects, sources.sessions, sources.transcripts])
    _shelf_read(client)
    names = {h["name"] for h in _all(client, "date parser")["hits"]}
    assert names == {"projects/-home-dev-proj/sess-1.jsonl"}
    codex = _all(client, "delete b.py")["hits"]
    assert {h["name"] for h in codex} == {"sessions/2025/09/10/rollout-2025-09-10T12-00-00-0199.jsonl"}
    assert codex[0]["title"] and codex[0]["link"] == codex[0]["name"]
    # The link opens the transcript at the envelope.
    at = client.get("/api/locate", params={"t": codex[0]["link"], "id": codex[0]["id"]})
    assert at.status_code == 200 and at.json()["i"] >= 0
    assert [h["name"] for h in _all(client, "a transcript of my own")["hits"]] == []  # a title is not content
    assert [h["name"] for h in _all(client, "hello from")["hits"]] == ["transcripts/run.jsonl"]
