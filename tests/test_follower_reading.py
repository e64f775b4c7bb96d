"""What a follower of a transcript (the viewer) reads through the public library, on both
cores: peek's ``spans``, the history of exactly what a peek listed
(``History.read(end=, identity=)``), one look at every operation
(``History.each_operation``) and the cheap look for a transcript among other files
(``verdict.is_transcript``)."""

from __future__ import annotations

import os
from typing import Any, List

import pytest

from llm_agent_session import Session, assistant_message, tool_message, user_message
from llm_agent_session.history import History
from llm_agent_session.verdict import FIRST_LINE_LIMIT, is_transcript


def call(id_: str) -> dict:
    return {"id": id_, "type": "function", "function": {"name": "bash", "arguments": "{}"}}


def write_run(path: Any) -> List[str]:
    """A transcript with compactions, a rewind, an elision and tool operations in every
    state; the ids of its envelopes in file order."""
    with Session.create(path, {"agent": "t"}) as s:
        first = s.append_message(user_message("first"))
        s.append_message(assistant_message("second"))
        for k in range(4):
            s.append_message(assistant_message(None, [call(f"call_{k}")]))
            op = s.append_tool_dispatched(f"call_{k}", "bash", {"cmd": f"step {k}"})
            answer = s.append_message(tool_message(f"call_{k}", f"out {k}"))
            if k < 3:
                s.append_tool_settled(op, ("completed", "failed", "outcome-unknown")[k], duration=0.1)
        s.append_compaction("earlier", first, 10, 1)
        s.append_elision([(answer, "[elided]")])
        late = s.append_message(user_message("late"))
        s.append_rewind(late)
        s.append_tool_dispatched("call_9", "bash", {"cmd": "never settled"})
    return [e.id for e in Session.peek(path)["envelopes"]]


def test_peek_spans_name_each_envelopes_line(tmp_path: Any) -> None:
    path = tmp_path / "run.jsonl"
    ids = write_run(path)
    data = path.read_bytes()
    whole = Session.peek(path, spans=True)
    assert "spans" not in Session.peek(path)  # only when asked for
    lines = data.split(b"\n")[:-1]
    assert [tuple(span) for span in whole["spans"]] == [
        (n + 1, sum(len(line) + 1 for line in lines[:n]), len(lines[n])) for n in range(len(lines))]
    for (_, offset, length), envelope_id in zip(whole["spans"], ids):
        assert data[offset:offset + length].startswith(b'{"id":"' + envelope_id.encode() + b'"')
    with Session.load(path) as s:
        s.append_message(user_message("appended"))
    later = Session.peek(path, offset=whole["end"], identity=whole["identity"], spans=True)
    (line, offset, length), = later["spans"]  # counted from where it read; the offset is the file's
    assert (line, offset) == (1, whole["end"])
    assert path.read_bytes()[offset:offset + length + 1].endswith(b"}\n")


def test_a_history_read_up_to_a_peeks_end_is_the_fold_of_what_it_listed(tmp_path: Any) -> None:
    path = tmp_path / "run.jsonl"
    write_run(path)
    seen = Session.peek(path, spans=True)
    envelopes = list(seen["envelopes"])
    for cut in (0, 1, 10, len(envelopes) - 3, len(envelopes)):
        end = seen["spans"][cut][1] if cut < len(envelopes) else seen["end"]
        part = History.read(path, keep_payloads=False, end=end, identity=seen["identity"])
        fed = History(keep_payloads=False)
        fed.feed_all(envelopes[:cut])
        assert part.count == cut
        assert (part.live_ids, dict(part.removed), part.elided, [op.state for op in part.each_operation()]) == (
            fed.live_ids, dict(fed.removed), fed.elided, [op.state for op in fed.operations.values()]), cut
        assert [op.op_id for op in part.pending()] == [op.op_id for op in fed.pending()]
    assert History.read(path, end=seen["end"] + 10_000).count == len(envelopes)  # past the end: all of it
    assert History.read(path, identity=seen["identity"]).count == len(envelopes)


def test_a_history_read_of_another_file_by_now_is_empty(tmp_path: Any) -> None:
    path = tmp_path / "run.jsonl"
    write_run(path)
    seen = Session.peek(path)
    replaced = tmp_path / "new.jsonl"
    write_run(replaced)
    os.replace(replaced, path)  # as a repair renames its copy over the path
    assert History.read(path, identity=seen["identity"]).count == 0
    assert History.read(path, end=seen["end"], identity=seen["identity"]).live_ids == []
    assert History.read(path).count == len(Session.peek(path)["envelopes"])


@pytest.mark.parametrize("end", [-1, "12", 1.0, True])
def test_a_history_read_refuses_an_end_that_is_no_offset(tmp_path: Any, end: Any) -> None:
    path = tmp_path / "run.jsonl"
    write_run(path)
    with pytest.raises(ValueError, match="end must be an int >= 0"):
        History.read(path, end=end)


def test_each_operation_is_every_operation_in_file_order_and_keeps_none(tmp_path: Any, backend_name: str) -> None:
    path = tmp_path / "run.jsonl"
    write_run(path)
    looked = History.read(path, keep_payloads=False)
    ops = list(looked.each_operation())
    if backend_name == "native":  # a native read builds an operation when asked for: none kept
        assert not looked.operations._built  # type: ignore[attr-defined]
    want = History.read(path, keep_payloads=False)
    assert ops == list(want.operations.values())
    assert [op.state for op in ops] == ["completed", "failed", "outcome-unknown", "result-recorded", "dispatched"]
    asked = want.operations[ops[1].op_id]
    asked.state = "changed"  # one asked for before the look is the one kept
    assert [op for op in want.each_operation()][1] is asked


def test_is_transcript_is_the_first_line_that_is_not_blank(tmp_path: Any) -> None:
    real = tmp_path / "real.jsonl"
    write_run(real)
    data = real.read_bytes()
    meta, rest = data.split(b"\n", 1)
    files = {
        "real": (data, True),
        "blank lines first": (b"\n \r\n\t\n" + data, True),
        "crlf": (data.replace(b"\n", b"\r\n"), True),
        "only the meta, no newline yet": (meta, True),
        "empty": (b"", False),
        "blank lines only": (b"\n \n\r\n", False),
        "another object": (b'{"not": "a transcript"}\n', False),
        "a message first": (rest, False),
        "text": (b"\nhello\n", False),
        "a torn meta": (b'\n{"id":"x","pay', False),
        "a first line longer than the look": (b'{"id":"' + b"x" * FIRST_LINE_LIMIT + b'"}\n', True),
        "a first MiB of blank lines": (b"\n" * FIRST_LINE_LIMIT + data, True),
    }
    for name, (content, want) in files.items():
        path = tmp_path / "case.jsonl"
        path.write_bytes(content)
        assert is_transcript(str(path)) is want, name
    with pytest.raises(OSError):
        is_transcript(str(tmp_path / "missing.jsonl"))
