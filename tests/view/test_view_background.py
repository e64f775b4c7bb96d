"""The viewer's passes over whole files (view/background.py) run at the lowest priority, the
core's threads they start too, so that the page's answers have the processors first."""

from __future__ import annotations

import os
import sys
import threading

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="threads have nice values of their own on Linux")


def _priority() -> int:
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


def test_a_pass_runs_at_nice_19_and_the_threads_answering_keep_theirs(tmp_path):
    from llm_agent_session import Session, user_message, usage
    from llm_agent_session.view import background

    path = str(tmp_path / "run.jsonl")
    with Session.create(path, {}) as s:
        s.append_message(user_message("hello"))
    mine = _priority()
    seen = []

    def a_pass() -> None:
        with background.turn(0):
            seen.append(_priority())
            # A thread the pass starts (as the core starts its second reader) inherits it.
            inner = threading.Thread(target=lambda: seen.append(_priority()))
            inner.start()
            inner.join()
            seen.append(usage.of_transcript(path).responses)

    worker = threading.Thread(target=a_pass)
    worker.start()
    worker.join()
    assert seen == [19, 19, 0]
    assert _priority() == mine  # the thread that answers the page is left as it was


def test_what_the_history_read_leaves_is_kept_out_of_the_collectors_walks(tmp_path):
    """Once a transcript's history is read, what the server holds is frozen (``gc.freeze``):
    the full collections a later pass's allocations set off walk only what is new."""
    import gc
    import time

    from llm_agent_session import Session, user_message
    from llm_agent_session.view.transcript import Transcript

    path = str(tmp_path / "run.jsonl")
    with Session.create(path, {}) as s:
        for n in range(50):
            s.append_message(user_message(f"m{n}"))
    gc.unfreeze()
    try:
        t = Transcript("run", path)
        deadline = time.monotonic() + 30
        while not t.ready["history"]:
            assert time.monotonic() < deadline, t.ready
            time.sleep(0.01)
        deadline = time.monotonic() + 30
        while gc.get_freeze_count() == 0:  # frozen by the same thread, just after
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert gc.get_freeze_count() > 1000
    finally:
        gc.unfreeze()
