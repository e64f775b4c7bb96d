"""A search the page waits for goes before the viewer's secret count (view/background.py):
while a search of whole files runs, the count waits between two blocks of the file, and
it goes on once no search runs; a search whose page went away (its stream closed half
read) holds nothing up."""

from __future__ import annotations

import os
import random
import threading
import time

import pytest

from benches import secret_corpus
from llm_agent_session import Session, user_message
from llm_agent_session.secrets import Redactor
from llm_agent_session.secrets.scan import TRANSCRIPT, scan_file

from tests.secrets.test_viewer import NAME, client

pytest.importorskip("starlette", reason="the view extra is not installed")


def _info(c):
    return c.get("/api/transcript", params={"t": NAME}).json()


def _wait_for(c, ready):
    deadline = time.monotonic() + 30
    while True:
        info = _info(c)
        if ready(info):
            return info
        assert time.monotonic() < deadline, info
        time.sleep(0.02)


def test_the_secret_count_waits_while_a_search_runs_then_counts(tmp_path):
    from llm_agent_session.view import background

    path = str(tmp_path / "shelf" / "run.jsonl")
    secret_corpus.write_seeded(path, random.Random(8), filler=0)
    truth = len(scan_file(path, Redactor().rules, Redactor().fingerprints, TRANSCRIPT).findings)
    with background.searching():  # a search under way, as transcript_search and shelf_search hold it
        c = client(str(tmp_path / "shelf"))
        _wait_for(c, lambda i: i["ready"]["history"])  # the passes before the count are done
        for _ in range(20):  # the count of this small file takes milliseconds once it may run
            info = _info(c)
            assert info["ready"]["secrets"] is False and info["secrets"] is None
            time.sleep(0.01)
    info = _wait_for(c, lambda i: i["ready"]["secrets"])
    assert info["secrets"] == truth > 0


def test_a_search_closed_half_read_holds_no_pass_up(tmp_path, monkeypatch):
    """The page went away (a new search, a closed tab): the scan stops and gives way, even
    with more reports ready than its queue holds (ranges of 4 KiB here)."""
    from llm_agent_session.view import background, transcript_search

    monkeypatch.setattr(transcript_search, "FIRST_CHUNK", 4096)
    monkeypatch.setattr(transcript_search, "SEARCH_CHUNK", 4096)
    path = str(tmp_path / "run.jsonl")
    with Session.create(path, {}) as s:
        for n in range(6000):  # 6 MB: more ranges than the first report's
            s.append_message(user_message(f"a line of the search, number {n} " + "x" * 1000))
    reports = transcript_search.stream(path, os.path.getsize(path), lambda lines: list(range(len(lines))),
                                       b"search", True, transcript_search.WITH_EXTRAS, 0)
    first = next(reports)  # the scan thread runs, and holds the searches' count
    assert first["hits"] and not first.get("done")
    time.sleep(0.5)  # the scan fills its queue meanwhile (64 reports), nobody taking them
    reports.close()
    gave_way = threading.Event()
    threading.Thread(target=lambda: (background.give_way(), gave_way.set()), daemon=True).start()
    assert gave_way.wait(10), "a closed search still held the passes up"


def test_scan_file_calls_between_before_each_read(tmp_path):
    """``between`` is the pass's chance to wait: called before every read of a block."""
    path = str(tmp_path / "run.jsonl")
    secret_corpus.write_seeded(path, random.Random(8), filler=0)
    calls = []
    found = scan_file(path, Redactor().rules, Redactor().fingerprints, TRANSCRIPT, between=lambda: calls.append(1))
    assert len(calls) == 2  # the one block of this small file, then the read that finds its end
    assert found.findings == scan_file(path, Redactor().rules, Redactor().fingerprints, TRANSCRIPT).findings
