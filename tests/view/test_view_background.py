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
