"""docs/FORMAT.md, `run-context`: run-context lines, per-section deduplication, run_context_section."""

from __future__ import annotations

import json

import pytest

from llm_agent_session import Session, user_message

from tests.support.helpers import (
    env_line,
    lines_of,
    meta_line,
    msg_line,
    read,
    run_context,
    sha,
    write_raw,
)

IDENTITY = "You are sadna, a careful coding agent."
AGENTS = "# AGENTS.md\nRun the tests before committing. ✓"


def _payload(tpath):
    return json.loads(lines_of(tpath)[-1])


def test_first_line_carries_text(session, tpath):
    rid = run_context(session, [("identity", IDENTITY), ("agents", AGENTS)],
                      [("date", "2026-08-09"), ("branch", "main"), ("dirty", False), ("n", [1, {"b": 2}])])
    obj = _payload(tpath)
    assert obj["id"] == rid and obj["type"] == "run-context"
    assert obj["payload"] == {
        "sections": [
            {"name": "identity", "digest": sha(IDENTITY), "text": IDENTITY},
            {"name": "agents", "digest": sha(AGENTS.encode("utf-8")), "text": AGENTS},
        ],
        "facts": [["date", "2026-08-09"], ["branch", "main"], ["dirty", False], ["n", [1, {"b": 2}]]],
    }
    assert session.run_context_section(sha(IDENTITY)) == IDENTITY
    assert session.run_context_section(sha(AGENTS)) == AGENTS


def test_repeat_points_at_carrying_line(session, tpath):
    r1 = run_context(session, [("identity", IDENTITY), ("agents", AGENTS)], [("date", "d1")])
    r2 = run_context(session, [("agents", AGENTS), ("volatile", "today is d2"), ("identity", IDENTITY)],
                     [("date", "d2")])
    assert _payload(tpath)["payload"] == {
        "sections": [
            {"name": "agents", "digest": sha(AGENTS), "rendered-in": r1},
            {"name": "volatile", "digest": sha("today is d2"), "text": "today is d2"},
            {"name": "identity", "digest": sha(IDENTITY), "rendered-in": r1},
        ],
        "facts": [["date", "d2"]],
    }
    r3 = run_context(session, [("volatile", "today is d2"), ("identity", IDENTITY)])
    secs = _payload(tpath)["payload"]["sections"]
    assert secs == [{"name": "volatile", "digest": sha("today is d2"), "rendered-in": r2},
                    {"name": "identity", "digest": sha(IDENTITY), "rendered-in": r1}]
    assert _payload(tpath)["payload"]["facts"] == []
    assert len({r1, r2, r3}) == 3


def test_repeat_within_one_line_points_at_itself(session, tpath):
    rid = run_context(session, [("a", "same text"), ("b", "same text"), ("c", "other")])
    assert _payload(tpath)["payload"]["sections"] == [
        {"name": "a", "digest": sha("same text"), "text": "same text"},
        {"name": "b", "digest": sha("same text"), "rendered-in": rid},
        {"name": "c", "digest": sha("other"), "text": "other"},
    ]


def test_same_digest_different_name_still_deduplicated(session, tpath):
    r1 = run_context(session, [("x", "body")])
    run_context(session, [("renamed", "body")])
    assert _payload(tpath)["payload"]["sections"] == [{"name": "renamed", "digest": sha("body"), "rendered-in": r1}]


def test_run_context_is_never_a_message(session, tpath):
    m1 = session.append_message(user_message("u1"))
    run_context(session, [("identity", IDENTITY)])
    m2 = session.append_message(user_message("u2"))
    assert session.message_ids == [m1, m2]
    cid = session.append_compaction("S", m2, 10, 1)
    assert session.message_ids == [cid]
    assert session.run_context_section(sha(IDENTITY)) == IDENTITY  # untouched by compaction
    session.close()
    with Session.load(tpath) as s:
        assert s.message_ids == [cid]
        assert s.run_context_section(sha(IDENTITY)) == IDENTITY


def test_index_rebuilt_on_load(session, tpath):
    r1 = run_context(session, [("identity", IDENTITY)])
    session.close()
    with Session.load(tpath) as s:
        assert s.run_context_section(sha(IDENTITY)) == IDENTITY
        run_context(s, [("identity", IDENTITY), ("new", "new text")])
    assert _payload(tpath)["payload"]["sections"][0] == {"name": "identity", "digest": sha(IDENTITY),
                                                         "rendered-in": r1}


def test_lines_after_a_load_point_at_the_first_carrier(session, tpath):
    # After a native load, which line carries a digest comes from the file's index
    # (`SectionTexts.line_of`) or from what was appended since; both must answer.
    r1 = run_context(session, [("identity", IDENTITY)])
    session.close()
    with Session.load(tpath) as s:
        r2 = run_context(s, [("new", "new text")])
        run_context(s, [("again", "new text"), ("identity", IDENTITY)])
        assert _payload(tpath)["payload"]["sections"] == [
            {"name": "again", "digest": sha("new text"), "rendered-in": r2},
            {"name": "identity", "digest": sha(IDENTITY), "rendered-in": r1},
        ]
        assert s.run_context_section(sha("new text")) == "new text"
    with Session.load(tpath) as s:
        run_context(s, [("new", "new text")])
        assert _payload(tpath)["payload"]["sections"] == [
            {"name": "new", "digest": sha("new text"), "rendered-in": r2},
        ]


def test_unknown_digest_is_none(session):
    run_context(session, [("a", "x")])
    assert session.run_context_section(sha("never written")) is None
    assert session.run_context_section("sha256:" + "0" * 64) is None


def test_section_none_when_carrying_line_is_gone(tpath):
    # a rendered-in pointing at a line that is not in the file is not an error
    d = sha("lost text")
    write_raw(tpath, meta_line(), msg_line("m1"),
              env_line("r2", "run-context", {"sections": [{"name": "a", "digest": d, "rendered-in": "r1-gone"}],
                                             "facts": []}),
              msg_line("m2"))
    with Session.load(tpath) as s:
        assert s.run_context_section(d) is None
        assert s.message_ids == ["m1", "m2"]
        # nothing in this transcript carries the text now, so the next line carries it again
        rid = run_context(s, [("a", "lost text")])
        assert _payload(tpath)["payload"]["sections"] == [{"name": "a", "digest": d, "text": "lost text"}]
        assert s.run_context_section(d) == "lost text"
    with Session.load(tpath) as s:
        assert s.run_context_section(d) == "lost text"
        assert s.events[-1].id == rid


def test_section_none_when_carrying_line_dropped_by_salvage(tmp_path):
    src, out = tmp_path / "src.jsonl", tmp_path / "out.jsonl"
    with Session.create(src, {}) as s:
        s.append_message(user_message("u"))
        r1 = run_context(s, [("identity", IDENTITY)])
        run_context(s, [("identity", IDENTITY), ("v", "vol")])
        s.append_message(user_message("after"))
    data = read(src)
    lines = data.split(b"\n")
    # damage the carrying line (line 3) in the middle of the file
    lines[2] = lines[2][:20] + b"\xff garbage"
    write_raw(src, b"\n".join(lines))
    report = Session.salvage(src, out)
    assert [d["line"] for d in report["dropped"]] == [3]
    with Session.load(out) as s:
        assert s.run_context_section(sha(IDENTITY)) is None
        assert s.run_context_section(sha("vol")) == "vol"
        assert r1 not in [e.id for e in s.events]


def test_bad_facts_and_sections_refused(session, tpath):
    before = read(tpath)
    with pytest.raises((TypeError, ValueError)):
        run_context(session, [("a", "x")], [("nan", float("nan"))])
    with pytest.raises((TypeError, ValueError)):
        run_context(session, [("a", "x")], [("b", b"bytes")])
    with pytest.raises((TypeError, ValueError)):
        run_context(session, [("a", "lone \udc80 surrogate")])
    with pytest.raises((TypeError, ValueError)):
        run_context(session, [("a", 5)])
    assert read(tpath) == before
    # a refused line must not have registered its sections either
    r = run_context(session, [("a", "x")])
    assert _payload(tpath)["payload"]["sections"] == [{"name": "a", "digest": sha("x"), "text": "x"}]
    assert _payload(tpath)["id"] == r


def test_run_context_with_u2028_text(session, tpath):
    text = "line\u2028sep\u2029para"
    run_context(session, [("s", text)])
    assert "\u2028".encode() not in read(tpath)
    assert _payload(tpath)["payload"]["sections"][0]["digest"] == sha(text.encode("utf-8"))
    session.close()
    with Session.load(tpath) as s:
        assert s.run_context_section(sha(text)) == text


def test_hand_written_rendered_in_followed(tpath):
    d = sha("body")
    write_raw(tpath, meta_line(),
              env_line("r1", "run-context", {"sections": [{"name": "a", "digest": d, "text": "body"}],
                                             "facts": [["k", 1]]}),
              env_line("r2", "run-context", {"sections": [{"name": "a", "digest": d, "rendered-in": "r1"}],
                                             "facts": []}))
    with Session.load(tpath) as s:
        assert s.run_context_section(d) == "body"
        assert s.messages == []


def test_facts_or_sections_as_a_dict_are_never_split_into_characters(session, tpath):
    # A mapping is the natural thing to pass; it must be taken as its items, in order,
    # or refused, never iterated as keys and each key unpacked into characters.
    before = read(tpath)
    try:
        run_context(session, [("s", "text")], {"os": "linux", "tz": "UTC"})
    except (TypeError, ValueError):
        assert read(tpath) == before
    else:
        assert _payload(tpath)["payload"]["facts"] == [["os", "linux"], ["tz", "UTC"]]
    before = read(tpath)
    try:
        session.append_run_context({"id": "identity text"})
    except (TypeError, ValueError):
        assert read(tpath) == before
    else:
        assert _payload(tpath)["payload"]["sections"][0]["name"] == "id"


def test_string_pairs_are_not_split(session, tpath):
    before = read(tpath)
    with pytest.raises((TypeError, ValueError)):
        run_context(session, [("s", "t")], ["ab"])
    with pytest.raises((TypeError, ValueError)):
        session.append_run_context(["xy"])
    with pytest.raises((TypeError, ValueError)):
        session.append_elision(["ab"])
    assert read(tpath) == before
