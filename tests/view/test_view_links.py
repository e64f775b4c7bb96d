"""Every address the viewer hands out comes from ``links.link``: the page's, the data
API's and the printed URL, each reaching what it names, whatever the transcript's name holds."""

from __future__ import annotations

import os
import shutil

import pytest
from tests.support.view import client_for

from llm_agent_session.view.app import API
from llm_agent_session.view.links import ENDPOINTS, link

ODD_NAMES = ["a b.jsonl", "hash#tag.jsonl", "what?.jsonl", "per%25cent.jsonl", "tilde~1.jsonl", "é-ü.jsonl",
             "plus+and&amp;.jsonl", "sub dir/x;y=z.jsonl"]


def test_the_printed_url_and_each_kind_of_link(backend_name):
    if backend_name != "pure":
        pytest.skip("backend-independent: checked once, in the pure run")
    assert link("page") == "/"
    assert link("page", "shelf/run.jsonl") == "/t/shelf/run.jsonl"
    assert link("page", "~3") == "/t/~3"  # an alias, as the shelf links a name the page cannot carry
    assert link("page", "shelf/a b#?.jsonl", {"at": "id 1&2"}) == "/t/shelf/a%20b%23%3F.jsonl?at=id%201%262"
    assert link("window", "shelf/run.jsonl", {"from": 0, "count": 50}) == "/api/window?t=shelf%2Frun.jsonl&from=0&count=50"
    assert link("shelf", query={"from": 3}) == "/api/shelf?from=3"
    assert link("page", "run.jsonl", origin="http://127.0.0.1:8731", token="abc_-1") == (
        "http://127.0.0.1:8731/t/run.jsonl#token=abc_-1")
    with pytest.raises(ValueError, match="no such place"):
        link("api/window")


def test_every_endpoint_has_its_route(backend_name):
    if backend_name != "pure":
        pytest.skip("backend-independent: checked once, in the pure run")
    assert list(API) == list(ENDPOINTS)


@pytest.mark.parametrize("name", ODD_NAMES)
def test_a_link_reaches_the_transcript_it_names(shelf, name):
    path = os.path.join(shelf.root, *name.split("/"))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    shutil.copyfile(shelf.run, path)
    c = client_for([shelf.root])
    named = "shelf/" + name
    page = c.get(link("page", named, {"at": shelf.ids["t1"]}))
    assert page.status_code == 200 and '<script src="/static/viewer.js"' in page.text
    assert c.get(link("transcript", named)).json()["name"] == named
    got = c.get(link("envelope", named, {"id": shelf.ids["t1"]})).json()
    assert got["id"] == shelf.ids["t1"]
    for endpoint in ENDPOINTS:  # each answers for that name (nothing is 404: no route missing, no name lost)
        r = c.get(link(endpoint, named, {"id": shelf.ids["t1"], "i": 0, "q": "pytest", "fp": "0" * 12}))
        if endpoint == "reveal":  # the transcript reached: it holds no masked secret of that fingerprint
            assert r.status_code == 404 and "no such masked secret" in r.text, r.text
            continue
        assert r.status_code == 200, (endpoint, r.text)
