"""The viewer's history: read by the core up to the bytes its peek read (not fed the
peek's envelopes one by one), and what it asks of it without building every entry."""

from __future__ import annotations

import time

from llm_agent_session import Session
from llm_agent_session._peek import peek, read_history
from llm_agent_session.history import History
from llm_agent_session.view.model import info, renderer
from llm_agent_session.view.transcript import Transcript


def _opened(path: str) -> Transcript:
    t = Transcript("run", path)
    for _ in range(1000):
        if t.history is not None:
            return t
        time.sleep(0.01)
    raise AssertionError(t.ready)


def _positions(t: Transcript, kind: str):
    out, at = [], -1
    while True:
        at = t.next_of(kind, at)
        if at is None:
            return out
        out.append(at)


def _want(path: str, kind: str):
    h = History.read(path)
    ops = h.operations.values()
    return [op.index for op in ops if (op.state == "failed" if kind == "failed" else op.pending)]


def test_the_viewers_history_is_the_files_and_follows_appends(shelf):
    t = _opened(shelf.run)
    whole = History.read(shelf.run, keep_payloads=False)
    assert t.history is not None and t.history.count == t.count == whole.count
    assert t.history.live_ids == whole.live_ids and dict(t.history.removed) == dict(whole.removed)
    assert t.verdict is not None and t.verdict.replayed is None  # load's copy of the live conversation: let go
    for kind in ("failed", "pending"):
        assert _positions(t, kind) == _want(shelf.run, kind) != []
    assert info(t)["pending"] == len(_want(shelf.run, "pending"))
    with Session.load(shelf.run) as s:  # settle a pending one as failed; a new one fails too
        s.append_tool_settled(shelf.ids["op4"], "failed", duration=0.1, error="no")
        op = s.append_tool_dispatched("call_9", "bash", '{"cmd": "false"}')
        s.append_tool_settled(op, "failed", duration=0.1, error="exit 1")
    assert t.refresh()
    for kind in ("failed", "pending"):
        assert _positions(t, kind) == _want(shelf.run, kind)
    assert info(t)["pending"] == len(_want(shelf.run, "pending"))


def test_the_viewers_answers_build_no_entry_of_a_native_read(shelf, backend_name):
    """What kept a 1 GB transcript's viewer at 413 MB: a Python string for every
    envelope's id, an Operation for every operation. On the native core the read's
    mappings stay lazy through the shelf's, a jump's and a page's questions."""
    t = _opened(shelf.run)
    history = t.history
    assert history is not None
    renderer(t)  # the removals counted
    info(t)
    for kind in ("failed", "pending"):
        _positions(t, kind)
    if backend_name != "native":
        return
    assert not isinstance(history._seen, dict)
    assert not history.operations._built and not history.operations._later  # type: ignore[attr-defined]
    assert not history.removed._built  # type: ignore[attr-defined]


def test_a_read_up_to_a_peeks_end_and_of_that_file_only(shelf):
    found = peek(shelf.run, spans=True)
    _, offset, _ = found["spans"][10]
    part = read_history(shelf.run, False, end=offset, identity=found["identity"])
    assert part is not None and part.fed == 10
    assert read_history(shelf.run, False, identity=(0, 0)) is None  # another file by now


def test_a_file_replaced_before_the_read_is_folded_from_the_peek(shelf, monkeypatch):
    import llm_agent_session.view.transcript as transcript

    monkeypatch.setattr(transcript, "read_history", lambda *a, **kw: None)
    t = _opened(shelf.run)
    assert t.history is not None and isinstance(t.history._seen, dict)
    assert t.history.live_ids == History.read(shelf.run).live_ids
    assert _positions(t, "failed") == _want(shelf.run, "failed")


def _removal_counts(path: str):
    """What each compaction and rewind of the file removed, from a whole read: how many,
    and the first (in the order they were taken out)."""
    counted = {}
    for message_id, removal in History.read(path).removed.items():
        n, first = counted.get(removal.by, (0, message_id))
        counted[removal.by] = (n + 1, first)
    return counted


def test_what_each_compaction_and_rewind_removed_is_counted_with_the_history_and_as_it_grows(shelf):
    """Counted where the history is read (not on the page's first ask after it), then for
    each compaction and rewind the follow feeds: the counts a whole read gives."""
    from llm_agent_session import user_message

    t = _opened(shelf.run)
    want = _removal_counts(shelf.run)
    assert want and t.removals() == want
    with Session.load(shelf.run) as s:  # a compaction of two new messages, then a rewind of one
        first = s.append_message(user_message("one more"))
        second = s.append_message(user_message("and another"))
        compaction = s.append_compaction("both, summed up", second, 900, 100)
        kept = s.append_message(user_message("kept"))
        s.append_message(user_message("taken back"))
        rewind = s.append_rewind(kept)
    assert t.refresh()
    grown = _removal_counts(shelf.run)
    assert grown[compaction][0] >= 2 and grown[compaction][1] != second and grown[rewind][0] == 1
    assert first in dict(History.read(shelf.run).removed)
    assert t.removals() == grown
