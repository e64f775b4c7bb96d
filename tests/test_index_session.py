"""A session that appends keeps its side index current: every so many bytes appended and
at close, off the appending thread; and never on a session without one."""

from __future__ import annotations

import os
import sys
import threading
from typing import Any, List

import pytest

from llm_agent_session import Session, _index, index_file, user_message


def test_a_session_refreshes_its_index_as_it_appends_and_at_close(tpath: Any, monkeypatch: Any) -> None:
    monkeypatch.setattr(_index, "AUTO_MIN_BYTES", 0)
    monkeypatch.setattr(_index, "REFRESH_EVERY", 4000)
    path = str(tpath)
    with Session.create(path, {"agent": "t"}) as s:
        for i in range(40):
            s.append_message(user_message(f"message {i} " + "x" * 100))
        _index.flush()  # a refresh started at 4000 bytes, on a thread of its own
        kept = _index.read(path)
        assert kept is not None  # an index of what was there then
        for i in range(5):
            s.append_message(user_message(f"more {i}"))
    _index.flush()
    assert _index.read(path) != kept  # brought to the end at close
    assert _index.update(path)[0] == _index.UP_TO_DATE
    with Session.load(path) as through:
        got = (through.messages, through.message_ids, list(through.events), through._index_used)
    with Session.load(path, index=False) as whole:
        assert got == (whole.messages, whole.message_ids, list(whole.events), "used")


def test_a_session_loaded_without_its_index_keeps_none(tpath: Any, monkeypatch: Any) -> None:
    monkeypatch.setattr(_index, "AUTO_MIN_BYTES", 0)
    path = str(tpath)
    with Session.create(path, {"agent": "t"}) as s:
        s.append_message(user_message("one"))
    _index.flush()
    _index.remove(path)
    with Session.load(path, index=False) as s:
        s.append_message(user_message("two"))
    _index.flush()
    assert not os.path.exists(index_file(path))


def test_small_transcripts_get_no_index_of_their_own(tpath: Any) -> None:
    """Below AUTO_MIN_BYTES a load reads the whole file anyway: no index, no cache."""
    path = str(tpath)
    with Session.create(path, {"agent": "t"}) as s:
        s.append_message(user_message("one"))
    with Session.load(path) as s:
        assert s._index_used == "none"
        s.append_message(user_message("two"))
    _index.flush()
    assert not os.path.exists(index_file(path))


def test_a_load_that_read_appended_bytes_has_the_index_extended_off_its_thread(tpath: Any, monkeypatch: Any) -> None:
    monkeypatch.setattr(_index, "AUTO_MIN_BYTES", 0)
    path = str(tpath)
    with Session.create(path, {"agent": "t"}) as s:
        s.append_message(user_message("one"))
    assert _index.update(path)[0] in (_index.INDEXED, _index.UP_TO_DATE)
    with open(path, "rb") as f:
        last = f.read().splitlines(keepends=True)[-1]
    with open(path, "ab") as f:  # another writer appended since the index
        f.write(last.replace(b'"id":"', b'"id":"x'))
    with Session.load(path) as s:
        assert s._index_used == "used"
    _index.flush()
    assert _index.update(path)[0] == _index.UP_TO_DATE  # the load's refresh extended it


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="threads have nice values of their own on Linux")
def test_a_refresh_runs_at_the_lowest_priority_on_its_own_thread(tpath: Any, monkeypatch: Any) -> None:
    """A refresh keeps a cache: the appending thread (and the machine) come first. Its
    thread runs at nice 19; the thread that started it keeps its own."""
    monkeypatch.setattr(_index, "AUTO_MIN_BYTES", 0)
    path = str(tpath)
    with Session.create(path, {"agent": "t"}) as s:
        s.append_message(user_message("hello"))
    _index.flush()
    _index.remove(path)  # the one written at close: the refresh below makes it again
    mine = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    seen: List[Any] = []

    def run() -> None:
        rfd = os.open(path, os.O_RDONLY)
        st = os.fstat(rfd)
        seen.append(_index.refresh(path, rfd, st.st_size, st))
        seen.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    assert seen == [True, 19]
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == mine
    assert _index.update(path)[0] == _index.UP_TO_DATE
