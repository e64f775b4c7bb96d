"""What the importers keep of a source's values (issues #24 item 6 and #25), on both
backends: integers of any length, exactly; each envelope's time from its source record,
in UTC; a count the source does not state left out, never 0."""

from __future__ import annotations

import json

import pytest
from tests.support.import_fixtures import cc_assistant, cc_user, check_exit, cx, cx_msg, jsonl, tool_result, tool_use, write

from llm_agent_session import Session
from llm_agent_session.canonical import int_to_str, str_to_int
from llm_agent_session.importers import claude_code, codex
from llm_agent_session.importers._source_time import source_time

BIG = str_to_int("7" * 5000)  # past CPython's 4,300-digit limit for int <-> str


def holds(value, wanted) -> bool:
    if isinstance(value, dict):
        return any(holds(v, wanted) for v in value.values())
    if isinstance(value, list):
        return any(holds(v, wanted) for v in value)
    return type(value) is int and value == wanted


def _big_sources():
    t = "2025-08-21T10:00:{:02d}.000Z".format
    cc = [cc_user("u1", None, "go", t(0)),
          cc_assistant("a1", "u1", "m1", tool_use("t1", "Calc", {"n": "BIG"}), t(1)),
          cc_user("u2", "a1", [tool_result("t1", [{"type": "text", "text": "done"}])], t(2), toolUseResult={"n": "BIG"})]
    cxs = [cx("session_meta", {"id": "s", "seed": "BIG"}, 0), cx_msg("user", "go", 1),
           cx("response_item", {"type": "function_call", "name": "calc", "arguments": {"n": "BIG"}, "call_id": "c1"}, 2),
           cx("response_item", {"type": "function_call_output", "call_id": "c1", "output": {"content": "done", "n": "BIG"}}, 3)]
    return {"claude-code": (claude_code, cc), "codex": (codex, cxs)}


@pytest.mark.parametrize("fmt", ["claude-code", "codex"])
def test_integers_past_4300_digits_are_imported_exactly(tmp_path, fmt):
    importer, records = _big_sources()[fmt]
    lines = [json.dumps(r).replace('"BIG"', int_to_str(BIG)) for r in records]
    src, out = str(tmp_path / "s.jsonl"), str(tmp_path / "o.jsonl")
    # Imported in two parts: a failure of the first would leave lines the second refuses.
    for upto in (2, len(lines)):
        write(src, "\n".join(lines[:upto]) + "\n")
        report = importer.import_transcript(src, out)
        assert report["status"] in ("imported", "appended"), report["error"]
        assert report["malformed"] == [] and report["warnings"] == []
    assert check_exit(out) == 0
    with Session.load(out) as s:
        dispatched = [ev.payload for ev in s.events if ev.type == "tool-dispatched"]
        assert dispatched[0]["arguments"] == {"n": BIG}
        assert [ev.payload["outcome"] for ev in s.events if ev.type == "tool-settled"] == ["completed"]
        assert s.pending_tool_operations() == []
        kept = [ev.type for ev in s.events if ev.type in ("message", "run-context") and holds(ev.payload, BIG)]
        assert kept == (["message"] if fmt == "claude-code" else ["run-context"])  # toolUseResult, session_meta
        call = next(m for m in s.messages if m.tool_calls).tool_calls[0]
        assert int_to_str(BIG) in call["function"]["arguments"]


@pytest.mark.parametrize("text,ts", [
    ("2025-08-20T09:00:01.250Z", "2025-08-20T09:00:01.250000Z"),
    ("2025-09-10T12:00:00Z", "2025-09-10T12:00:00.000000Z"),
    ("2025-09-10T12:00:00.123456789Z", "2025-09-10T12:00:00.123456Z"),  # cut, not rounded
    ("2025-09-10T01:30:00+02:00", "2025-09-09T23:30:00.000000Z"),
    ("2025-12-31T23:30:00.5-0130", "2026-01-01T01:00:00.500000Z"),
    ("2025-01-01 10:00:00", "2025-01-01T10:00:00.000000Z"),  # no zone: taken as UTC
    ("2025-02-30T00:00:00Z", None), ("2025-01-01T24:00:00Z", None), ("yesterday", None), (1735689600, None),
    ("0001-01-01T00:30:00+01:00", None),
])
def test_source_times_in_the_line_format(text, ts):
    assert source_time(text) == ts


def test_every_envelope_carries_its_source_time_in_utc(tmp_path):
    text = jsonl([
        cc_user("u1", None, "hi", "2025-08-21T12:00:00.125+02:00"),
        cc_assistant("a1", "u1", "m1", tool_use("t1", "Bash", {"command": "ls"}), "2025-08-21T10:00:01.5Z"),
        cc_user("u2", "a1", [tool_result("t1", "a.py")], "not a time"),
        cc_user("u3", "u2", "thanks", None),
    ])
    src, out = str(tmp_path / "s.jsonl"), str(tmp_path / "o.jsonl")
    report = claude_code.import_transcript(write(src, text), out)
    with Session.load(out) as s:
        events = list(s.events)
    got = [(ev.type, ev.ts) for ev in events]
    assert got[:4] == [("session-meta", "2025-08-21T10:00:00.125000Z"), ("message", "2025-08-21T10:00:00.125000Z"),
                       ("message", "2025-08-21T10:00:01.500000Z"), ("tool-dispatched", "2025-08-21T10:00:01.500000Z")]
    # No time, or one that is not a time: the import's own, and the source's text is kept.
    checkpoint_ts = events[-1].ts
    assert [ev.ts[:13] for ev in events[4:]] == [checkpoint_ts[:13]] * 4
    assert events[4].payload["source-ts"] == "not a time" and "source-ts" not in events[6].payload
    assert any("1 source time(s) are not times (the first: 'not a time')" in w for w in report["warnings"])


def test_a_count_the_source_does_not_state_is_left_out(tmp_path):
    cc = jsonl([
        cc_user("u1", None, "hi", "2025-08-21T10:00:00Z"),
        {"parentUuid": None, "logicalParentUuid": "u1", "isSidechain": False, "type": "system",
         "subtype": "compact_boundary", "compactMetadata": {"trigger": "auto"}, "uuid": "c1",
         "timestamp": "2025-08-21T10:00:01Z"},
        cc_user("u2", "c1", "Summary: said hi.", "2025-08-21T10:00:02Z", isCompactSummary=True),
    ])
    rollout = jsonl([cx("session_meta", {"id": "s"}, 0), cx_msg("user", "hi", 1), cx("compacted", {"message": "said hi"}, 2)])
    for importer, text in ((claude_code, cc), (codex, rollout)):
        out = str(tmp_path / f"{importer.FORMAT}.jsonl")
        importer.import_transcript(write(str(tmp_path / f"src-{importer.FORMAT}.jsonl"), text), out)
        with Session.load(out) as s:
            compaction = next(ev.payload for ev in s.events if ev.type == "compaction")
        assert "tokens-before" not in compaction and "tokens-after" not in compaction, compaction
