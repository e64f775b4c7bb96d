"""The viewer masks by default: nothing its data API sends (the transcript's summary, every
window in both modes, each envelope whole and as its raw line, the shelf) holds a seeded
secret; ``/api/reveal`` answers one, by its envelope and fingerprint, to the token's
holder; the summary counts them; ``view --no-redact`` (a redactor not enabled) sends them
as they are. In Chromium: the page shows none, marks each masked one, and its "reveal"
button shows that one."""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import threading
import time

import pytest

from benches import secret_corpus
from llm_agent_session.secrets import MARKER, Redactor
from llm_agent_session.secrets.scan import TRANSCRIPT, scan_file

from tests.secrets.test_policy import forms

pytest.importorskip("starlette", reason="the view extra is not installed")

NAME = "shelf/run.jsonl"
MARKED = re.compile(r"«redacted:([a-z0-9-]+):([0-9a-f]{12})»")


@pytest.fixture
def seeded(tmp_path):
    root = tmp_path / "shelf"
    placed = secret_corpus.write_seeded(str(root / "run.jsonl"), random.Random(8), filler=0)
    return str(root), {p.seed.secret for p, _ in placed}


def client(root, redactor=None):
    from starlette.testclient import TestClient

    from llm_agent_session.view.app import app
    from llm_agent_session.view.model import Viewer
    from llm_agent_session.view.security import resolve_policy
    from llm_agent_session.view.shelf import Roots

    policy = resolve_policy("127.0.0.1", 8765, "t" * 32)
    return TestClient(app(Viewer(Roots([root]), redactor=redactor), policy), base_url="http://127.0.0.1:8765",
                      headers={"authorization": "Bearer " + "t" * 32})


def held(text, secrets):
    data = text.encode()
    return {s for s in secrets if any(f in data for f in forms(s))}


def everything_sent(c):
    """Every answer of the data API about the transcript, as text: its summary once the
    secrets are counted, every window of both modes, each envelope whole and raw, the shelf."""
    deadline = time.monotonic() + 30
    while True:
        info = c.get("/api/transcript", params={"t": NAME}).json()
        if info["ready"]["secrets"] and info["ready"]["history"]:
            break
        assert time.monotonic() < deadline, info
        time.sleep(0.05)
    sent = [json.dumps(info, ensure_ascii=False)]
    shelf = c.get("/api/shelf").json()
    sent.append(json.dumps(shelf, ensure_ascii=False))
    windows = {}
    for mode, count in (("history", info["count"]), ("live", info["live"])):
        for start in range(0, count, 200):
            got = c.get("/api/window", params={"t": NAME, "from": start, "count": 200, "mode": mode}).json()
            windows.setdefault(mode, []).extend(got["items"])
            sent.append(json.dumps(got, ensure_ascii=False))
    for i in range(info["count"]):
        for extra in ({"full": "1"}, {"raw": "1"}):
            sent.append(c.get("/api/envelope", params={"t": NAME, "i": i, **extra}).text)
    return info, "\n".join(sent), windows


def test_the_data_api_sends_no_secret_and_reveals_one_on_request(seeded):
    root, secrets = seeded
    c = client(root)
    info, sent, windows = everything_sent(c)
    assert held(sent, secrets) == set() and MARKER.search(sent)
    found = scan_file(os.path.join(root, "run.jsonl"), Redactor().rules, Redactor().fingerprints, TRANSCRIPT)
    assert info["redacted"] is True and info["secrets"] == len(found.findings) >= len(secrets)
    # Each marker of a window revealed by its envelope and fingerprint: the seeded secrets.
    revealed = set()
    for mode in ("history", "live"):
        for item in windows[mode]:
            for rule, fp in MARKED.findall(json.dumps(item, ensure_ascii=False)):
                got = c.get("/api/reveal", params={"t": NAME, "id": item["id"], "fp": fp})
                assert got.status_code == 200, got.text
                assert got.json()["rule"] == rule
                revealed.add(got.json()["secret"])
    assert secrets <= revealed
    bad = c.get("/api/reveal", params={"t": NAME, "i": 0, "fp": "0" * 12})
    assert bad.status_code == 404 and "no such masked secret" in bad.text
    assert c.get("/api/reveal", params={"t": NAME, "i": 0, "fp": "<script>"}).status_code == 400
    # Without the token, nothing (the security wrapper answers first).
    from starlette.testclient import TestClient

    bare = TestClient(c.app, base_url="http://127.0.0.1:8765")
    assert bare.get("/api/reveal", params={"t": NAME, "i": 0, "fp": "0" * 12}).status_code == 403


def test_no_redact_sends_every_secret(seeded):
    root, secrets = seeded
    info, sent, _ = everything_sent(client(root, Redactor(enabled=False)))
    assert info["redacted"] is False and info["secrets"] is None
    assert held(sent, secrets) == secrets and not MARKER.search(sent)


def test_a_clean_transcript_is_sent_as_before(tmp_path):
    import generate

    root = tmp_path / "shelf"
    os.makedirs(root)
    generate.generate(str(root / "run.jsonl"), 1 << 19, seed=3)
    _, masked, _ = everything_sent(client(str(root)))
    _, kept, _ = everything_sent(client(str(root), Redactor(enabled=False)))
    strip = re.compile(r'"(redacted|secrets)": [a-z0-9]+')
    assert strip.sub("", masked) == strip.sub("", kept)


# -- in Chromium --------------------------------------------------------------------------


CHROMIUM = os.environ.get("LLM_AGENT_SESSION_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


def test_the_page_shows_no_secret_and_reveals_one(seeded):
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
    if CHROMIUM is None:
        pytest.skip("no Chromium: Debian's chromium is not installed (apt-get install -y chromium)")
    import uvicorn

    from llm_agent_session.view.app import app
    from llm_agent_session.view.model import Viewer
    from llm_agent_session.view.security import resolve_policy
    from llm_agent_session.view.server import bind
    from llm_agent_session.view.shelf import Roots

    root, secrets = seeded
    sock = bind("127.0.0.1", 0)
    policy = resolve_policy("127.0.0.1", sock.getsockname()[1])
    server = uvicorn.Server(uvicorn.Config(app(Viewer(Roots([root])), policy), log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        while not server.started:
            time.sleep(0.01)
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            try:
                page = browser.new_page(viewport={"width": 1200, "height": 4000})
                errors = []
                page.on("pageerror", lambda e: errors.append(str(e)))
                base = f"http://127.0.0.1:{sock.getsockname()[1]}"
                page.goto(f"{base}/t/{NAME}#token={policy.token}")
                page.wait_for_selector(".redacted button.reveal")
                deadline = time.monotonic() + 20
                while "secrets masked" not in page.inner_text("#status"):
                    assert time.monotonic() < deadline, page.inner_text("#status")
                    page.wait_for_timeout(50)
                assert held(page.content(), secrets) == set() and held(page.inner_text("body"), secrets) == set()
                spans = page.query_selector_all(".redacted")
                assert spans and all(MARKER.fullmatch(s.evaluate("e => e.firstChild.nodeValue")) for s in spans)
                page.click(".redacted button.reveal")
                page.wait_for_selector(".revealed")
                shown = page.inner_text(".revealed")
                assert shown in secrets
                assert held(page.inner_text("body"), secrets) == {shown}  # that one, and no other
                assert errors == []
            finally:
                browser.close()
    finally:
        server.should_exit = True
        thread.join(5)


def shelf_search(c, q):
    """Every hit of the shelf's search box for `q`, as the page reads them."""
    hits, deadline = [], time.monotonic() + 30
    while True:
        got = c.get("/api/shelf-search", params={"q": q, "from": len(hits), "limit": 1000}).json()
        hits.extend(got["hits"])
        if got["done"]:
            return hits
        assert time.monotonic() < deadline, got


def test_the_shelf_search_shows_no_secret_around_its_hits(seeded):
    root, secrets = seeded
    for redactor, want in ((None, set()), (Redactor(enabled=False), None)):
        c = client(root, redactor)
        hits = [h for q in ("export", "cat .env", "secret", "token") for h in shelf_search(c, q)]
        assert hits
        found = held(json.dumps(hits, ensure_ascii=False), secrets)
        if want is None:
            assert found and not any(h["masked"] for h in hits)  # --no-redact: the snippets as they are
        else:
            assert found == want and any(h["masked"] for h in hits)
