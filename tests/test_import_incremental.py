"""An import that resumes gives what one import gives (issue #24, item 1), on both backends:
for every cut of a source at a line boundary, importing the part before the cut and then
the whole leaves the same live messages, pending operations and token totals as one
import of the whole; an operation dispatched on a branch the source later abandons is settled
``outcome-unknown``, saying so."""

from __future__ import annotations

import os
from typing import Any, Dict, List, Tuple

import pytest
from tests.support.import_fixtures import (
    cc_assistant,
    cc_user,
    claude_code_session,
    claude_code_subagent,
    claude_code_with_sidechain,
    codex_legacy,
    codex_rollout,
    cx,
    cx_msg,
    jsonl,
    tool_result,
    tool_use,
    write,
)

from llm_agent_session import Session, usage
from llm_agent_session.importers import claude_code, codex

# Every source fixture of the test suite, and the joined ones the fuzz and backend tests use.
FIXTURES = {
    "codex": (codex, codex_rollout()),
    "codex-legacy": (codex, codex_legacy()),
    "codex-joined": (codex, codex_rollout() + codex_legacy()),
    "claude-code": (claude_code, claude_code_session()),
    "claude-code-sidechain": (claude_code, claude_code_with_sidechain()),
    "claude-code-subagent": (claude_code, claude_code_subagent()),
    "claude-code-joined": (claude_code, claude_code_session() + claude_code_with_sidechain()),
}


def state(path: str) -> Tuple[List[Dict[str, Any]], List[Tuple[Any, ...]], Dict[str, Any]]:
    """The live messages, the pending operations (all but their op id), and the token usage
    of the live messages' responses, each counted once with its final figures (a response
    whose last line or token count an earlier import had not seen is written again, and
    counted at the copy written last)."""
    with Session.load(path) as s:
        messages = [m.to_dict() for m in s.messages]
        pending = [(p.call_id, p.tool, p.arguments, p.arguments_digest, p.dispatched_at, p.state)
                   for p in s.pending_tool_operations()]
        envelopes = {e.id: e for e in s.events}
        live = {envelopes[i].payload.get("token-usage", {}).get("response-id") for i in s.message_ids
                if envelopes[i].type == "message"}  # (a compaction's summary is no response)
    counted = {c.usage.response_id: c.usage.figures for c in usage.read(path).counted.values()}
    assert None not in counted  # every response the importers write has an id
    return messages, pending, {rid: figures for rid, figures in counted.items() if rid in live}


def every_response(report: Any) -> Dict[str, Any]:
    """Every counted response of the transcripts an import made (sidechains, subagents too):
    a response the source abandoned after an import saw it (a rewound Claude Code branch)
    is still counted once there, rewound; one import of the whole source never sees it."""
    out = {c.usage.response_id: c.usage.figures for c in usage.read(report["out"]).counted.values()}
    for child in report["transcripts"]:
        out.update(every_response(child))
    return out


def states(report: Any) -> List[Any]:
    """The state of every transcript an import made (sidechains, subagents too), by name."""
    out = [(os.path.basename(report["out"]), state(report["out"]))]
    for child in report["transcripts"]:
        out.extend(states(child))
    return out


def grown(importer: Any, tmp_path: Any, text: str, cuts: List[int], name: str) -> Any:
    """Import each prefix of ``text`` (its first ``cut`` lines) into one OUT, then the whole."""
    lines = text.splitlines(keepends=True)
    src, out = str(tmp_path / "src" / name), str(tmp_path / "out" / name)
    for cut in cuts + [len(lines)]:
        write(src, "".join(lines[:cut]))
        report = importer.import_transcript(src, out)
        assert report["status"] in ("imported", "appended", "unchanged"), (cut, report["error"])
    return report


def once(importer: Any, tmp_path: Any, text: str, name: str) -> Any:
    return states(importer.import_transcript(write(str(tmp_path / "whole" / name), text), str(tmp_path / "one" / name)))


def _every_cut(tmp_path: Any, fixture: str, cuts: Any) -> None:
    importer, text = FIXTURES[fixture]
    want = once(importer, tmp_path, text, "s.jsonl")
    for cut in cuts(len(text.splitlines())):
        got = grown(importer, tmp_path / f"cut-{cut}", text, [cut], "s.jsonl")
        assert states(got) == want, f"cut after line {cut}"
        whole = every_response(importer.import_transcript(str(tmp_path / "whole" / "s.jsonl"),
                                                          str(tmp_path / "one" / "s.jsonl")))
        assert every_response(got).items() >= whole.items(), f"cut after line {cut}"


@pytest.mark.slow
@pytest.mark.parametrize("fixture", sorted(FIXTURES))
def test_every_cut_then_the_whole_is_one_import(tmp_path: Any, fixture: str) -> None:
    _every_cut(tmp_path, fixture, lambda n: range(n))


# The fast tier's share of the tests above and below: growths that once differed from one
# import (lines imported first, then lines imported next; the source then ends there).
SOME_GROWTHS = [("codex", 5, 23), ("codex", 14, 20), ("codex", 19, 26),
                ("claude-code-joined", 6, 31), ("claude-code-joined", 22, 31)]


@pytest.mark.parametrize("fixture,first,second", SOME_GROWTHS)
def test_some_growths_are_one_import(tmp_path: Any, fixture: str, first: int, second: int) -> None:
    importer, text = FIXTURES[fixture]
    upto = "".join(text.splitlines(keepends=True)[:second])
    got = grown(importer, tmp_path / "grown", upto, [first], "s.jsonl")
    assert states(got) == once(importer, tmp_path, upto, "s.jsonl")


@pytest.mark.slow
@pytest.mark.parametrize("fixture", ["codex", "claude-code"])
def test_every_two_stage_growth_is_one_import(tmp_path: Any, fixture: str) -> None:
    """Imported at one cut, then at a later one: each time as one import of what the
    source then held."""
    importer, text = FIXTURES[fixture]
    lines = text.splitlines(keepends=True)
    for second in range(2, len(lines) + 1):
        want = once(importer, tmp_path / f"at-{second}", "".join(lines[:second]), "s.jsonl")
        for first in range(1, second):
            got = grown(importer, tmp_path / f"{first}-{second}", "".join(lines[:second]), [first], "s.jsonl")
            assert states(got) == want, (first, second)


def test_codex_event_twin_written_after_the_import(tmp_path: Any) -> None:
    """An import between a turn's response_item message and its event_msg twin: the next
    import still knows the event is a duplicate, and a rollback goes to the right turn."""
    text = jsonl([
        cx("session_meta", {"id": "s"}, 0),
        cx_msg("user", "hello", 1),
        cx_msg("assistant", "hi", 2),
        cx("event_msg", {"type": "user_message", "message": "hello", "images": []}, 3),
        cx("event_msg", {"type": "agent_message", "message": "hi"}, 3),
        cx("event_msg", {"type": "task_complete"}, 4),
        cx_msg("user", "delete b.py", 5),
        cx("response_item", {"type": "function_call", "name": "shell", "arguments": "{\"command\": [\"rm\", \"b.py\"]}",
                             "call_id": "c1"}, 6),
        cx("event_msg", {"type": "user_message", "message": "delete b.py", "images": []}, 7),
        cx("event_msg", {"type": "turn_aborted", "reason": "interrupted"}, 8),
        cx("event_msg", {"type": "thread_rolled_back", "num_turns": 1}, 9),
    ])
    for cut in (3, 8):
        report = grown(codex, tmp_path / str(cut), text, [cut], "r.jsonl")
        with Session.load(report["out"]) as s:
            assert [(m.role, m.content) for m in s.messages] == [("user", "hello"), ("assistant", "hi")]
            assert s.pending_tool_operations() == []
        assert states(report) == once(codex, tmp_path / f"once-{cut}", text, "r.jsonl")


def test_a_call_on_a_branch_claude_code_abandoned_is_settled_outcome_unknown(tmp_path: Any) -> None:
    t = "2025-08-21T10:00:{:02d}.000Z".format
    base = [
        cc_user("u1", None, "hi", t(0)),
        cc_assistant("a1", "u1", "m1", {"type": "text", "text": "hello"}, t(1)),
        cc_user("u2", "a1", "delete everything", t(2)),
        cc_assistant("a2", "u2", "m2", tool_use("t1", "Bash", {"command": "rm -rf x"}), t(3)),
    ]
    # Interrupted before t1 answered; the user went back to before u2 (Esc Esc).
    later = base + [
        cc_user("u2b", "a1", "list files instead", t(5)),
        cc_assistant("a3", "u2b", "m3", tool_use("t2", "Bash", {"command": "ls"}), t(6)),
        cc_user("u3", "a3", [tool_result("t2", "a.py")], t(7)),
    ]
    src, out = str(tmp_path / "s.jsonl"), str(tmp_path / "o.jsonl")
    write(src, jsonl(base))
    assert claude_code.import_transcript(src, out)["status"] == "imported"
    with Session.load(out) as s:
        assert [p.call_id for p in s.pending_tool_operations()] == ["t1"]
    write(src, jsonl(later))
    assert claude_code.import_transcript(src, out)["status"] == "appended"
    assert state(out) == once(claude_code, tmp_path, jsonl(later), "s.jsonl")[0][1]
    with Session.load(out) as s:
        settles = {ev.payload["op-id"]: ev.payload for ev in s.events if ev.type == "tool-settled"}
        t1 = next(ev.id for ev in s.events if ev.type == "tool-dispatched" and ev.payload["call-id"] == "t1")
        assert settles[t1]["outcome"] == "outcome-unknown"
        assert "abandoned" in settles[t1]["reason"]
        assert s.pending_tool_operations() == []


def test_a_failed_append_leaves_out_as_it_was(tmp_path: Any, monkeypatch: Any) -> None:
    """Whatever fails while an import appends, OUT is cut back, so the next import goes on."""
    from llm_agent_session.importers import _bulk

    lines = claude_code_session().splitlines(keepends=True)
    src, out = str(tmp_path / "s.jsonl"), str(tmp_path / "o.jsonl")
    write(src, "".join(lines[:6]))
    claude_code.import_transcript(src, out)
    before = open(out, "rb").read()
    write(src, "".join(lines))
    real = _bulk.LineWriter.write

    def fail_late(self: Any, at: int, record: Any) -> str:
        if record.type == "tool-settled":
            self.flush()  # lines of this import already on disk
            raise RuntimeError("a bug")
        return real(self, at, record)

    monkeypatch.setattr(_bulk.LineWriter, "write", fail_late)
    report = claude_code.import_transcript(src, out)
    assert report["status"] == "failed" and "internal error" in report["error"]
    assert open(out, "rb").read() == before
    monkeypatch.undo()
    assert claude_code.import_transcript(src, out)["status"] == "appended"
    assert state(out) == once(claude_code, tmp_path, "".join(lines), "s.jsonl")[0][1]
