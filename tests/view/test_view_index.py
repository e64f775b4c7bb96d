"""The viewer through a transcript's side index (docs/viewer.md, "Big transcripts"): the
same envelopes, jumps and search hits as without one, before the history is read and
after; an index that does not describe the file is not used; a big file without one shows
its end first, then the whole file through the index it built in the cache; nothing is
written beside the transcript; a followed transcript still follows."""

from __future__ import annotations

import os
import shutil
import threading
import time
from typing import Any, Dict, List, Optional

import pytest

from llm_agent_session import Session, _index, _peek, assistant_message, tool_message, user_message
from llm_agent_session import indexed as side_index
from llm_agent_session.view import transcript as transcript_module
from llm_agent_session.view.model import info
from llm_agent_session.view.transcript import JUMPS, Transcript

SEARCHES = ("needle", "NEEDLE-7", "pytest", "ok")


def build(path: str, rounds: int = 50, start: int = 0) -> None:
    """Messages, tool calls settled completed or failed or left pending, compactions and
    rewinds: more than two blocks of 64 envelopes, with the searched texts among them."""
    opened = Session.load(path) if start else Session.create(path, {"title": "indexed"})
    with opened as s:
        last_user = None
        for r in range(start, start + rounds):
            last_user = s.append_message(user_message(f"round {r}: find the needle" + (" NEEDLE-7" if r % 7 == 0 else "")))
            op = s.append_tool_dispatched(f"call_{r}", "bash", {"cmd": f"pytest -k t{r}"})
            s.append_message(tool_message(f"call_{r}", f"result {r} ok"))
            if r % 3 == 0:
                s.append_tool_settled(op, "failed", duration=0.1, error="exit 1")
            elif r % 3 == 1:
                s.append_tool_settled(op, "completed", duration=0.1)
            s.append_message(assistant_message(f"answer {r}"))
            if r % 25 == 24:
                s.append_compaction(f"summary of round {r}", last_user, 100, 10)
            if r % 31 == 30:
                s.append_rewind(last_user)


def wait(t: Transcript, what: str) -> Transcript:
    for _ in range(2000):
        if t.ready[what] and not t.preview:
            return t
        time.sleep(0.01)
    raise AssertionError(t.ready)


def chain(t: Transcript, kind: str, backwards: bool) -> List[Optional[int]]:
    out: List[Optional[int]] = []
    at: Optional[int] = t.count if backwards else -1
    while at is not None and len(out) <= t.count:
        at = t.locate_kind(kind, at, backwards)["i"]
        out.append(at)
    return out


def hits(t: Transcript, text: str) -> List[Any]:
    reports = t.search(text, ignore_case=True, extras=True)
    assert reports is not None
    found: List[Any] = []
    for report in reports:
        found += report.get("hits", [])
    return found


def offset_of(t: Transcript, i: int) -> int:
    segment = next(s for s in reversed(t.segments) if i >= s.base)
    return int(segment.spans[i - segment.base][1])


def answers(t: Transcript, kinds: Any = JUMPS) -> Dict[str, Any]:
    """What the page can ask of `t`: every envelope, where each is found by id and time and
    by the offset of its line, every kind's jumps both ways, and the searches' hits."""
    events = [t.envelope(i) for i in range(t.count)]
    offsets = [offset_of(t, i) for i in range(t.count)]
    return {
        "envelopes": [(e.id, e.type, e.ts) for e in events],
        "lines": [t.line(i) for i in range(t.count)],
        "by id": [t.locate_id(e.id)["i"] for e in events],
        "by time": [t.locate_time(e.ts)["i"] for e in events],
        "by offset": t.indexes_of_offsets(offsets),
        "no such id": t.locate_id("no-such-id")["i"],
        "jumps": {(kind, back): chain(t, kind, back) for kind in kinds for back in (False, True)},
        "hits": {text: hits(t, text) for text in SEARCHES},
    }


@pytest.fixture()
def run(tmp_path: Any) -> str:
    folder = tmp_path / "runs"
    folder.mkdir()
    path = str(folder / "run.jsonl")
    build(path)
    _index.remove(path)
    return path


def without_index(path: str) -> Dict[str, Any]:
    _index.flush()  # (a verdict's index may be on its way)
    _index.remove(path)
    t = wait(Transcript("run", path), "history")
    assert t.table is None
    return answers(t)


def test_an_indexed_transcript_answers_as_a_whole_read(run: str, monkeypatch: Any) -> None:
    want = without_index(run)
    assert _index.update(run)[0] == _index.INDEXED
    with monkeypatch.context() as m:  # before the history is read (a 10 GB one takes a while)
        m.setattr(Transcript, "_build_history", lambda self, generation: None)
        t = wait(Transcript("run", run), "verdict")
        assert t.table is not None and t.first == t.count and t.history is None  # placed by the index alone
        assert answers(t) == want  # failed calls from the index, pending ones from the verdict
    assert answers(wait(Transcript("run", run), "history")) == want


def test_the_offsets_read_in_pieces_are_the_spans_offsets(run: str, monkeypatch: Any) -> None:
    """The native table hands its offsets over a piece at a time (the 10 GB transcript's
    42 MB in one call held the GIL 60 ms): pieces that start between two marks of its
    packed lines (every 64), and past its end, give the spans' offsets."""
    assert _index.update(run)[0] == _index.INDEXED
    found = side_index.peek(run)
    assert found is not None
    table = found["indexed"]
    want = [span[1] for span in table.spans]
    assert len(want) > 128
    for piece in (1, 7, 64, 65, len(want) - 1, 1 << 20):
        monkeypatch.setattr(_peek, "OFFSETS_PIECE", piece)
        assert list(table.offsets()) == want, piece


def test_appended_after_the_index_and_followed(run: str, monkeypatch: Any) -> None:
    assert _index.update(run)[0] == _index.INDEXED
    monkeypatch.setattr(Transcript, "_build_history", lambda self, generation: None)
    t = wait(Transcript("run", run), "verdict")
    with Session.load(run, index=False) as s:  # an indexed pending call fails now
        pending = [op.op_id for op in s.pending_tool_operations()]
        s.append_tool_settled(pending[0], "failed", duration=0.1, error="late")
    build(run, rounds=5, start=1000)
    assert t.refresh()
    assert 0 < t.first < t.count
    got = answers(wait(t, "index"), kinds=[k for k in JUMPS if k != "pending"])
    assert t.locate_kind("pending", -1).get("wait")  # the verdict's were of fewer envelopes: the history's
    monkeypatch.undo()
    reopened = wait(Transcript("run", run), "verdict")  # the index, then the bytes after it
    assert reopened.table is not None and reopened.first < reopened.count
    assert answers(reopened) == without_index(run)
    want = without_index(run)
    assert got == {k: ({j: v for j, v in want[k].items() if j[0] != "pending"} if k == "jumps" else v)
                   for k, v in want.items()}


def test_failed_calls_from_the_index_once_the_history_is_read_and_followed(run: str) -> None:
    """With a side index the failed calls are its (and those settled after its end), the
    history read or not: a call the index holds pending that fails after the history was
    read, and new ones failing after it, are found as a whole read finds them."""
    assert _index.update(run)[0] == _index.INDEXED
    t = wait(Transcript("run", run), "history")
    assert t.table is not None and t.first == t.count
    with Session.load(run, index=False) as s:  # an indexed pending call fails now
        pending = [op.op_id for op in s.pending_tool_operations()]
        s.append_tool_settled(pending[0], "failed", duration=0.1, error="late")
    build(run, rounds=5, start=1000)
    assert t.refresh()
    got = answers(wait(t, "index"))
    assert got == without_index(run)


@pytest.mark.parametrize("damage", ["garbage", "truncated", "another transcript", "rewritten in place"])
def test_an_index_that_does_not_describe_the_file_is_not_used(run: str, tmp_path: Any, damage: str) -> None:
    assert _index.update(run)[0] == _index.INDEXED
    made = _index.read(run)
    assert made is not None
    if damage == "garbage":
        _index.write(run, b"LASINDEX" + os.urandom(500))
    elif damage == "truncated":
        _index.write(run, made[: len(made) // 2])
    elif damage == "another transcript":  # the same size, another file: its index under this name
        other = str(tmp_path / "other.jsonl")
        with open(run, "rb") as f:
            data = f.read()
        with open(other, "wb") as f:
            f.write(data.replace(b"round 1:", b"ROUND 1:"))
        assert _index.update(other)[0] == _index.INDEXED
        _index.write(run, _index.read(other) or b"")
    else:  # the same size and times, other bytes
        st = os.stat(run)
        with open(run, "r+b") as f:
            data = f.read()
            f.seek(0)
            f.write(data.replace(b"answer 5", b"ANSWER 5"))
        os.utime(run, ns=(st.st_atime_ns, st.st_mtime_ns))
    t = wait(Transcript("run", run), "history")
    assert t.table is None
    got = answers(t)
    assert got == without_index(run)


def test_a_big_file_without_an_index_shows_its_end_then_all_of_it(run: str, monkeypatch: Any) -> None:
    monkeypatch.setattr(transcript_module, "PREVIEW_FROM", 0)
    monkeypatch.setattr(transcript_module, "PREVIEW_BYTES", 2000)
    folder = os.path.dirname(run)
    before = sorted(os.listdir(folder))
    with open(run, "rb") as f:
        data = f.read()
    # The index is built in the background: held until the preview has been looked at, so
    # the look does not race the build (which, done, replaces the preview).
    seen = threading.Event()
    build = transcript_module.side_index.update
    monkeypatch.setattr(transcript_module.side_index, "update", lambda path: seen.wait(30) and build(path))
    t = Transcript("run", run)
    assert t.preview
    shown = [t.line(i) for i in range(t.count)]
    assert 0 < len(shown) < 100 and data.endswith(b"\n".join(shown) + b"\n")  # the last lines
    assert info(t)["preview"] and not t.ready["index"]
    assert t.locate_time("2020-01-01")["wait"] and t.search("needle") is None
    seen.set()
    wait(t, "history")
    assert t.generation == 1 and t.table is not None and not info(t)["preview"]
    assert os.path.exists(_index.index_file(run))
    assert sorted(os.listdir(folder)) == before  # nothing beside the transcript
    got = answers(t)
    monkeypatch.undo()
    assert got == without_index(run)


def test_the_viewer_writes_nothing_beside_an_indexed_transcript(run: str) -> None:
    folder = os.path.dirname(run)
    copy = os.path.join(folder, "copy.jsonl")
    shutil.copy(run, copy)
    assert _index.update(run)[0] == _index.INDEXED
    before = {name: os.stat(os.path.join(folder, name)).st_mtime_ns for name in os.listdir(folder)}
    for name in ("run.jsonl", "copy.jsonl"):  # one indexed, one not (its index is made in the cache)
        t = wait(Transcript(name, os.path.join(folder, name)), "history")
        answers(t)
        t.refresh()
    assert {name: os.stat(os.path.join(folder, name)).st_mtime_ns for name in os.listdir(folder)} == before


def test_an_index_far_behind_the_file_is_extended_while_the_end_shows(run: str, monkeypatch: Any) -> None:
    """More was appended after the index than a preview's threshold: the end first, the
    index extended in the background (only the appended bytes read), then the whole file."""
    assert _index.update(run)[0] == _index.INDEXED
    before = os.path.getsize(run)
    build(run, rounds=20, start=1000)
    monkeypatch.setattr(transcript_module, "PREVIEW_FROM", (os.path.getsize(run) - before) // 2)
    monkeypatch.setattr(transcript_module, "PREVIEW_BYTES", 2000)
    gate = threading.Event()
    update = side_index.update
    monkeypatch.setattr(side_index, "update", lambda p: (gate.wait(20), update(p))[1])
    t = Transcript("run", run)
    assert t.preview and t.table is None
    gate.set()
    wait(t, "history")
    assert t.generation == 1 and t.table is not None and t.first == t.count
    monkeypatch.undo()
    assert answers(t) == without_index(run)


def test_the_whole_read_taking_over_a_preview_is_never_answered_halfway(run: str, monkeypatch: Any) -> None:
    """A big file's preview gives way to its whole read (through the index it built: a new
    generation) in one step for the page: /api/transcript asked meanwhile answers the
    preview or the whole file, never the state between (its index "ready" with none of its
    envelopes: the bench's first open of the 10 GB transcript read 0 envelopes there)."""
    monkeypatch.setattr(transcript_module, "PREVIEW_FROM", 0)
    monkeypatch.setattr(transcript_module, "PREVIEW_BYTES", 2000)
    answered: List[Dict[str, Any]] = []
    take = Transcript._take

    def take_while_the_page_asks(self: Transcript, found: Dict[str, Any]) -> None:
        if self.generation > 0:  # the whole read, taking over the preview
            asker = threading.Thread(target=lambda: answered.append(info(self)))
            asker.start()
            asker.join(0.5)  # (it waits for the whole read, or answers at once)
        take(self, found)

    monkeypatch.setattr(Transcript, "_take", take_while_the_page_asks)
    t = wait(Transcript("run", run), "index")
    for _ in range(1000):
        if answered:
            break
        time.sleep(0.01)
    assert len(answered) == 1
    got = answered[0]
    assert (got["generation"], got["count"], got["preview"], got["ready"]["index"]) == (1, t.count, False, True)
