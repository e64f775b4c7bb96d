"""A transcript that grew is read only where it grew, and the tables are then exactly those
of a whole export of the grown file; where the new lines change a row already written (a
settle of an earlier call, a compaction, a rewind ...) or the file is not the one exported,
it is exported whole instead. Both are checked against a fresh export of the same file."""

from __future__ import annotations

import json
import os
import shutil
from typing import Any, Callable, Dict, List

import pytest

from llm_agent_session import Session, Usage, assistant_message, tool_message, user_message
from llm_agent_session.dataset import export
from llm_agent_session.dataset import grow as grow_module
from tests.support.cli import call
from tests.support.dataset import all_tables, every_kind, small


@pytest.fixture(autouse=True)
def every_transcript_keeps_its_state(monkeypatch: Any) -> None:
    """Small transcripts keep what a re-run needs too (by default only those of 8 MiB and more)."""
    monkeypatch.setattr(grow_module, "GROW_MIN", 0)


def turn(s: Session, n: int, settle: bool = True, answer: bool = True) -> str:
    s.append_message(user_message(f"one more {n}"))
    s.append_message(assistant_message(None, [call(f"grow_{n}", "grep", '{"q": "x"}')]))
    op = s.append_tool_dispatched(f"grow_{n}", "grep", {"q": "x"})
    if answer:
        s.append_message(tool_message(f"grow_{n}", "x: 1"))
    if settle:
        s.append_tool_settled(op, "completed", duration=0.5)
    return op


def appended(path: str, write: Callable[[Session], Any]) -> None:
    with Session.load(path) as s:
        write(s)


def raw(path: str, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)


def same_as_whole(tmp_path: Any, src: str, out: str) -> Dict[str, List[Dict[str, Any]]]:
    """The tables of `out` equal those of a new export of the same files (same paths)."""
    fresh = str(tmp_path / f"fresh-{len(os.listdir(tmp_path))}")
    export(src, fresh)
    got, want = all_tables(out), all_tables(fresh)
    for table in want:
        assert got[table] == want[table], table
    return got


def line_of(path: str, n: int) -> Dict[str, Any]:
    with open(path, "rb") as f:
        return json.loads(f.read().splitlines()[n])


def pending_base(path: str) -> str:
    """A transcript ending with a call dispatched and not answered nor settled."""
    small(path)
    with Session.load(path) as s:
        s.append_message(assistant_message(None, [call("late", "bash", '{"cmd": "make"}')]))
        return s.append_tool_dispatched("late", "bash", {"cmd": "make"})


def unanswered_base(path: str) -> str:
    """A transcript ending with a call settled that no tool message answered."""
    op = pending_base(path)
    with Session.load(path) as s:
        s.append_tool_settled(op, "failed", error="killed")
    return op


def settle_line(path: str, new_id: str, **changes: Any) -> bytes:
    """The transcript's last tool-settled line again, with another id and `changes` to its payload."""
    with open(path, "rb") as f:
        settle = [json.loads(x) for x in f.read().splitlines() if b'"tool-settled"' in x][-1]
    settle["id"] = new_id
    settle["payload"].update(changes)
    return (json.dumps(settle) + "\n").encode()


def responses(s: Session, *ids: str) -> None:
    """A response per id (None: one without an id), each streamed over two lines (the first
    line's output count not final yet), then one more without an id."""
    for n, rid in enumerate(ids):
        s.append_message(assistant_message(f"part one of {n}"), usage=Usage(100 + n, 1, 2000, None, rid))
        s.append_message(assistant_message(f"part two of {n}"), usage=Usage(100 + n, 50 + n, 2000, None, rid))
    s.append_message(assistant_message("an answer of its own"), usage=Usage(output=9))


def settle_pending(s: Session, outcome: str = "completed") -> None:
    s.append_tool_settled(s.pending_tool_operations()[0].op_id, outcome, duration=2.0, error="boom", reason="why")


# What is appended, and whether the re-run can read only the new bytes.
GROWTHS: Dict[str, Any] = {
    "turns": (small, lambda p: appended(p, lambda s: [turn(s, n) for n in range(5)]), True),
    "a call left pending": (small, lambda p: appended(p, lambda s: turn(s, 1, settle=False, answer=False)), True),
    "a call answered, not settled": (small, lambda p: appended(p, lambda s: turn(s, 1, settle=False)), True),
    "an elision of a new message": (small, lambda p: appended(p, lambda s: s.append_elision(
        [(s.append_message(user_message("secret " * 50)), "[elided]")])), True),
    "grants where there were none": (small, lambda p: appended(p, lambda s: (
        s.append_grants({"bash": {"allow": ["ls"]}}), turn(s, 1))), True),
    "dispatches under the grants of before": (every_kind, lambda p: appended(p, lambda s: turn(s, 7)), True),
    "an answer and a settle of a call pending before": (pending_base, lambda p: appended(p, lambda s: (
        s.append_message(tool_message("late", "done")), settle_pending(s))), True),
    "a settle of a call pending before, then its answer": (pending_base, lambda p: appended(p, lambda s: (
        settle_pending(s, "failed"), turn(s, 1), s.append_message(tool_message("late", "late result")))), True),
    "an answer to a call pending before": (pending_base, lambda p: appended(p, lambda s: s.append_message(
        tool_message("late", "done"))), True),
    "an answer to a call settled unanswered before": (unanswered_base, lambda p: appended(p, lambda s: (
        turn(s, 1), s.append_message(tool_message("late", "done")))), True),
    "a second settle of a call settled before": (unanswered_base, lambda p: raw(p, settle_line(p, "again")), False),
    "a settle of a call pending before with a bad outcome": (pending_base, lambda p: (
        raw(p, settle_line(p, "bad", **{"op-id": line_of(p, -1)["id"], "outcome": "maybe"})),), False),
    "a settle of a call pending before, and a refused line": (pending_base, lambda p: (
        appended(p, settle_pending), raw(p, settle_line(p, "twice"))), False),
    "a compaction": (small, lambda p: appended(p, lambda s: s.append_compaction(
        "summary", s.append_message(user_message("fold me")), 100, 10)), False),
    "a rewind": (small, lambda p: appended(p, lambda s: (turn(s, 1), s.append_rewind(None))), False),
    "an elision of an earlier message": (small, lambda p: appended(p, lambda s: s.append_elision(
        [(s.message_ids[0], "[elided]")])), False),
    "grants after grants": (every_kind, lambda p: appended(p, lambda s: s.append_grants({"all": True})), False),
    "a first model": (small, lambda p: appended(p, lambda s: s.append_message(
        assistant_message("hi"), extra={"model": "m-9"})), False),
    "responses with token usage": (every_kind, lambda p: appended(p, lambda s: responses(s, "resp_a", "resp_b")), True),
    # A response counted before gets a later line: the line it is counted at moves.
    "a line of a response counted before": (every_kind, lambda p: appended(p, lambda s: responses(
        s, "resp_every_1")), False),
    "an id used before": (small, lambda p: raw(p, (json.dumps(dict(line_of(p, 1))) + "\n").encode()), False),
    "a torn line": (small, lambda p: (appended(p, lambda s: turn(s, 1)), raw(p, b'{"v":1,"id":"x","ty')), False),
    "a line that is no envelope": (small, lambda p: (appended(p, lambda s: turn(s, 1)),
                                                     raw(p, b'{"not": "an envelope"}\n')), False),
}


@pytest.mark.parametrize("name", list(GROWTHS))
def test_a_grown_transcript_gets_the_rows_of_a_whole_export(tmp_path: Any, name: str) -> None:
    base, grow, fast = GROWTHS[name]
    src, out = tmp_path / "src", str(tmp_path / "out")
    path = str(src / "a.jsonl")
    os.makedirs(src)
    base(path)
    small(str(src / "other.jsonl"), "a neighbour")
    first = export(str(src), out)
    assert first.count("exported") == 2
    grow(path)
    again = export(str(src), out)
    result = {os.path.basename(f.path): f for f in again.files}
    assert result["a.jsonl"].status == "exported" and result["other.jsonl"].status == "unchanged"
    assert result["a.jsonl"].grown is fast, name
    got = same_as_whole(tmp_path, str(src), out)
    assert len(got["sessions"]) == 2
    if fast:
        assert result["a.jsonl"].bytes < os.path.getsize(path)  # only the new bytes were read
        assert "read only where it grew" in again.summary()


def test_a_response_whose_lines_straddle_two_growths_is_counted_once(tmp_path: Any) -> None:
    """A response's first line read by one run (grown), its last by the next: the next run
    reads the file whole (its id is among those the first growth kept), and the totals
    count the response once, at its last line, as a whole export does."""
    src, out = tmp_path / "src", str(tmp_path / "out")
    a = small(str(src / "a.jsonl"))
    export(str(src), out)
    appended(a, lambda s: s.append_message(assistant_message("streaming"), usage=Usage(300, 1, 40, 7, "resp_x")))
    first = export(str(src), out)
    assert first.files[0].grown
    got = same_as_whole(tmp_path, str(src), out)
    assert got["sessions"][0]["output_tokens"] == 1
    appended(a, lambda s: s.append_message(assistant_message("streamed"), usage=Usage(300, 60, 40, 7, "resp_x")))
    second = export(str(src), out)
    assert second.files[0].status == "exported" and not second.files[0].grown
    got = same_as_whole(tmp_path, str(src), out)
    [row] = got["sessions"]
    assert (row["input_tokens"], row["output_tokens"], row["cache_read_tokens"], row["cache_write_tokens"],
            row["responses"]) == (300, 60, 40, 7, 1)
    assert [m["usage_counted"] for m in got["messages"] if m["response_id"] == "resp_x"] == [False, True]
    appended(a, lambda s: responses(s, "resp_y"))  # new responses only: read where it grew again
    third = export(str(src), out)
    assert third.files[0].grown
    [row] = same_as_whole(tmp_path, str(src), out)["sessions"]
    assert (row["input_tokens"], row["output_tokens"], row["responses"]) == (400, 119, 3)


def test_growing_again_and_again_then_a_whole_export(tmp_path: Any) -> None:
    """The appendix keeps each run's new rows; a change that needs a whole export takes
    them out of it; other transcripts' rows there stay."""
    src, out = tmp_path / "src", str(tmp_path / "out")
    a, b = small(str(src / "a.jsonl")), small(str(src / "b.jsonl"), "bee")
    export(str(src), out)
    for n in range(3):
        appended(a, lambda s: turn(s, n))
        appended(b, lambda s: turn(s, 10 + n, settle=n != 2))
        again = export(str(src), out)
        assert [f.grown for f in again.files] == [True, True]
        same_as_whole(tmp_path, str(src), out)
    # A call dispatched in the last run's new lines, settled now: its row is in the appendix.
    appended(b, lambda s: s.append_tool_settled(s.pending_tool_operations()[0].op_id, "failed"))
    again = export(str(src), out)
    assert {os.path.basename(f.path): (f.status, f.grown) for f in again.files} == {
        "a.jsonl": ("unchanged", False), "b.jsonl": ("exported", True)}
    same_as_whole(tmp_path, str(src), out)
    appended(b, lambda s: s.append_compaction("summary", s.message_ids[-1], 100, 10))
    again = export(str(src), out)
    assert {os.path.basename(f.path): (f.status, f.grown) for f in again.files} == {
        "a.jsonl": ("unchanged", False), "b.jsonl": ("exported", False)}
    same_as_whole(tmp_path, str(src), out)
    appended(a, lambda s: turn(s, 20))
    assert [f.grown for f in export(str(src), out).files if f.path == a] == [True]
    same_as_whole(tmp_path, str(src), out)
    os.unlink(a)
    assert export(str(src), out).count("removed") == 1
    got = same_as_whole(tmp_path, str(src), out)
    assert [r["path"] for r in got["sessions"]] == [b]
    ids = os.listdir(os.path.join(out, "_versions", "_ids"))
    assert len([n for n in ids if n.endswith(".ids")]) >= 1


def test_a_file_that_is_not_the_one_exported_is_read_whole(tmp_path: Any) -> None:
    """A copy put in its place (another inode), or bytes changed before the old end, or a
    file that shrank: the checks see it, and the whole file is read."""
    src, out = tmp_path / "src", str(tmp_path / "out")
    path = small(str(src / "a.jsonl"))
    export(str(src), out)
    copy = str(tmp_path / "copy.jsonl")
    shutil.copyfile(path, copy)
    appended(copy, lambda s: turn(s, 1))
    os.replace(copy, path)
    assert not export(str(src), out).files[0].grown
    same_as_whole(tmp_path, str(src), out)
    # Same inode, the last line before the old end changed (same length), then more lines.
    size = os.path.getsize(path)
    with open(path, "r+b") as f:
        data = f.read()
        at = data.rindex(b'"completed"')
        f.seek(at)
        f.write(b'"failed"   ')
    appended(path, lambda s: turn(s, 2))
    assert os.path.getsize(path) > size
    r = export(str(src), out)
    assert not r.files[0].grown
    same_as_whole(tmp_path, str(src), out)


def test_a_grown_export_by_one_core_goes_on_with_the_other(tmp_path: Any, backend_name: str) -> None:
    """The state a run keeps (the id side file above all) is the same whichever core wrote it."""
    from llm_agent_session import _backend

    other = "pure" if backend_name == "native" else "native"
    src, out = tmp_path / "src", str(tmp_path / "out")
    path = every_kind(str(src / "a.jsonl"))
    export(str(src), out)
    appended(path, lambda s: turn(s, 1))
    _backend.use(other)
    try:
        assert export(str(src), out).files[0].grown
        raw(path, (json.dumps(line_of(path, 3)) + "\n").encode())  # an id of the first export's lines
        r = export(str(src), out)
        assert not r.files[0].grown and r.files[0].verdict == "would-fail"
    finally:
        _backend.use(backend_name)
    same_as_whole(tmp_path, str(src), out)


def test_an_operation_stays_open_from_run_to_run_until_its_settle(tmp_path: Any) -> None:
    """A call pending at the whole export, still pending after a run that read other new
    lines, answered in the next and settled in the one after: each run reads only its new
    lines, and its row (in the transcript's own bucket) follows."""
    src, out = tmp_path / "src", str(tmp_path / "out")
    path = str(src / "a.jsonl")
    os.makedirs(src)
    pending_base(path)
    export(str(src), out)
    steps = [lambda s: turn(s, 1), lambda s: s.append_message(tool_message("late", "done")), settle_pending]
    for step in steps:
        appended(path, step)
        again = export(str(src), out)
        assert [f.grown for f in again.files] == [True]
        got = same_as_whole(tmp_path, str(src), out)
    late = [r for r in got["tool_calls"] if r["call_id"] == "late"]
    assert [(r["outcome"], r["answered"], r["duration"]) for r in late] == [("completed", True, 2.0)]


def test_grown_transcripts_in_worker_processes(tmp_path: Any) -> None:
    """With --jobs, the buckets (the appendix among them) are built in worker processes:
    the same rows."""
    src, out = tmp_path / "src", str(tmp_path / "out")
    paths = [str(src / f"p{i}.jsonl") for i in range(3)]
    for path in paths:
        pending_base(path)
    small(str(src / "other.jsonl"))
    export(str(src), out, jobs=2)
    for n, path in enumerate(paths):
        appended(path, lambda s: (turn(s, n), settle_pending(s)))
    again = export(str(src), out, jobs=2)
    assert sorted(f.grown for f in again.files) == [False, True, True, True]
    same_as_whole(tmp_path, str(src), out)


def test_growth_beside_new_removed_and_rewritten_transcripts(tmp_path: Any) -> None:
    """In one run: transcripts that grew (one settling a call open since the whole export),
    others gone, new, or read whole; their buckets are built from all of it."""
    import socket

    from llm_agent_session.dataset.manifest import read_manifest
    from llm_agent_session.dataset.sources import Source, bucket_of, session_id_of
    from llm_agent_session.dataset.buckets import published

    def bucket(path: str) -> int:
        return bucket_of(session_id_of(Source.of(path, socket.gethostname(), os.stat(path))))

    src, out = tmp_path / "src", str(tmp_path / "out")
    grower = str(src / "grower.jsonl")
    pending_base(grower)
    others: List[str] = []
    while len(others) < 12 or sum(bucket(p) == bucket(grower) for p in others) < 2:
        others.append(small(str(src / f"s{len(others)}.jsonl"), f"hello {len(others)}"))
    # Those sharing the grower's bucket first: one grows, one is read whole, one goes.
    others.sort(key=lambda p: bucket(p) != bucket(grower))
    export(str(src), out)
    manifest = read_manifest(out)
    home = manifest.sources[next(k for k in manifest.sources if k.endswith(grower))]
    assert len(published(manifest, f"{home.date}/{home.bucket}").sources) > 2
    appended(grower, lambda s: (turn(s, 1), settle_pending(s)))
    appended(others[0], lambda s: turn(s, 2))
    appended(others[1], lambda s: s.append_rewind(None))
    for path in others[2:5]:
        os.unlink(path)
    for i in range(3):
        small(str(src / f"new{i}.jsonl"), f"new {i}")
    again = export(str(src), out)
    by_name = {os.path.basename(f.path): (f.status, f.grown) for f in again.files}
    grew, rewound = (os.path.basename(p) for p in others[:2])
    assert by_name["grower.jsonl"] == by_name[grew] == ("exported", True)
    assert by_name[rewound] == ("exported", False) and again.count("removed") == 3
    same_as_whole(tmp_path, str(src), out)
