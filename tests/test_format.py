"""docs/FORMAT.md: the envelope, exact serialisation, ts, ids, v, blank lines, CRLF."""

from __future__ import annotations

import json
import math
import os
import stat
import uuid
from datetime import datetime, timedelta, timezone

import pytest

from llm_agent_session import (
    CorruptTranscript,
    Event,
    Message,
    Session,
    TranscriptError,
    UnsupportedVersion,
    assistant_message,
    system_message,
    tool_message,
    user_message,
)

from tests.support.helpers import (
    ENVELOPE_KEYS,
    TS_RE,
    UUID7_RE,
    canon,
    env_line,
    lines_of,
    meta_line,
    msg_line,
    read,
    write_raw,
)


def _assert_canonical(raw: bytes):
    assert raw.endswith(b"\n")
    assert raw.count(b"\n") == 1
    obj = json.loads(raw)
    assert list(obj) == ENVELOPE_KEYS
    assert (canon(obj) + "\n").encode("utf-8") == raw, raw
    return obj


def test_create_writes_exactly_one_meta_line(tpath):
    meta = {"zeta": 1, "agent": "sadna", "nested": {"b": [3, {"y": 1, "x": 2}], "a": None}, "model": "kimi-k2"}
    with Session.create(tpath, meta) as s:
        assert s.meta == meta
        assert s.messages == []
        assert s.message_ids == []
        assert s.grants == {}
    lines = lines_of(tpath)
    assert len(lines) == 1
    obj = _assert_canonical(lines[0])
    assert obj["type"] == "session-meta"
    assert obj["payload"] == meta  # exactly as given, nothing added
    assert obj["v"] == 1 and type(obj["v"]) is int
    assert lines[0].endswith(b',"v":1}\n')
    assert lines[0].startswith(b'{"id":"')


def test_meta_none_is_empty_mapping(tpath):
    with Session.create(tpath) as s:
        assert s.meta == {}
    assert json.loads(read(tpath))["payload"] == {}


def test_every_line_is_canonical_and_keys_sorted_everywhere(session, tpath):
    session.append_message(Message("user", [{"type": "text", "text": "hé", "z": {"b": 1, "a": 2}}]),
                           extra={"finish-reason": "stop", "b-extra": {"y": [1, {"d": 0, "c": 1}]}})
    session.append_grants({"tools": {"write": True, "read": True}, "a": []})
    session.append_tool_dispatched("c1", "grep", {"z": 1, "a": {"q": 2, "p": 1}}, idempotency="k", run_id="r", round=3)
    for raw in lines_of(tpath):
        _assert_canonical(raw)
    raw = lines_of(tpath)[1]
    # nested keys sorted in the raw text
    assert b'{"a":2,"b":1}' in raw
    assert b'"b-extra":{"y":[1,{"c":1,"d":0}]}' in raw
    # compact separators: no space after : or , anywhere outside strings
    assert b": " not in raw and b", " not in raw


def test_same_envelope_same_bytes_on_reload_and_peek(session, tpath):
    session.append_message(user_message("x"), extra={"k": [1, 2.5, None, True]})
    before = read(tpath)
    session.close()
    s = Session.load(tpath)
    s.close()
    assert read(tpath) == before
    for ev, raw in zip(s.events, lines_of(tpath)):
        assert (canon({"id": ev.id, "payload": ev.payload, "ts": ev.ts, "type": ev.type, "v": ev.v}) + "\n").encode() == raw


def test_non_ascii_written_as_itself(session, tpath):
    text = "héllo 日本語 🎉 Ω"
    session.append_message(user_message(text))
    raw = lines_of(tpath)[-1]
    assert text.encode("utf-8") in raw
    assert b"\\u" not in raw


@pytest.mark.parametrize("ch,esc", [("\u2028", b"\\u2028"), ("\u2029", b"\\u2029")])
def test_line_separators_escaped(session, tpath, ch, esc):
    content = f"a{ch}b{ch}"
    mid = session.append_message(user_message(content), extra={f"k{ch}": ch})
    raw = lines_of(tpath)[-1]
    assert ch.encode("utf-8") not in raw
    assert raw.count(esc) == 4  # in content twice, in the extra key and value
    text = read(tpath).decode("utf-8")
    assert len(text.splitlines()) == len(lines_of(tpath))  # no reader ever sees a break inside a line
    session.close()
    with Session.load(tpath) as s:
        assert s.messages[-1].content == content
        assert s.events[-1].payload[f"k{ch}"] == ch
        assert s.message_ids[-1] == mid


def test_control_characters_escaped(session, tpath):
    content = "".join(chr(i) for i in range(0x20)) + "\"\\"
    session.append_message(user_message(content))
    raw = lines_of(tpath)[-1]
    assert all(b >= 0x20 for b in raw[:-1])
    session.close()
    with Session.load(tpath) as s:
        assert s.messages[-1].content == content


def test_ts_format_is_utc_six_digits(session, tpath):
    for i in range(5):
        session.append_message(user_message(str(i)))
    now = datetime.now(timezone.utc)
    for obj in map(json.loads, lines_of(tpath)):
        assert TS_RE.match(obj["ts"]), obj["ts"]
        parsed = datetime.strptime(obj["ts"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc)
        assert abs(parsed - now) < timedelta(hours=1)  # UTC, not local time
    assert [e.ts for e in session.events] == [json.loads(l)["ts"] for l in lines_of(tpath)]


def test_new_ids_are_uuid7_unique_and_sorted(session, tpath):
    ids = [session.append_message(user_message(str(i))) for i in range(300)]
    ids.append(session.append_grants({"a": True}))
    ids.append(session.append_tool_dispatched("c", "t", {}))
    ids.append(session.append_compaction("s", ids[10], 100, 10))
    assert len(set(ids)) == len(ids)
    for i in ids + [session.events[0].id]:
        assert UUID7_RE.match(i), i
        assert uuid.UUID(i).version == 7
        assert str(uuid.UUID(i)) == i  # canonical lowercase form
    assert ids == sorted(ids)  # version 7: ids sort by creation time
    file_ids = [json.loads(l)["id"] for l in lines_of(tpath)]
    assert file_ids[1:] == ids


def test_returned_ids_are_the_envelope_ids(session, tpath):
    a = session.append_message(user_message("a"))
    g = session.append_grants({"x": 1})
    o = session.append_tool_dispatched("c", "t", "{}")
    st = session.append_tool_settled(o, "completed")
    file = [json.loads(l) for l in lines_of(tpath)]
    assert [(x["id"], x["type"]) for x in file[1:]] == [
        (a, "message"), (g, "grants"), (o, "tool-dispatched"), (st, "tool-settled")]
    assert [e.id for e in session.events] == [x["id"] for x in file]


def test_events_shape(session, tpath):
    session.append_message(user_message("a"), extra={"finish-reason": "stop"})
    ev = session.events
    assert all(isinstance(e, Event) for e in ev)
    assert ev[0].type == "session-meta" and ev[0].payload == {"agent": "test"}
    assert ev[1].type == "message"
    assert ev[1].payload == {"role": "user", "content": "a", "finish-reason": "stop"}
    assert ev[1].v == 1 and type(ev[1].v) is int
    e = Event("i", "t", "ts", 1, {})
    assert (e.id, e.type, e.ts, e.v, e.payload) == ("i", "t", "ts", 1, {})


@pytest.mark.parametrize("v", [2, 0, 1.0, True, "1", None, -1])
def test_v_other_than_integer_1_is_unsupported(tpath, v):
    data = write_raw(tpath, meta_line(), msg_line("m1"), env_line("m2", "message", {"role": "user"}, v=v),
                     msg_line("m3"))
    with pytest.raises(UnsupportedVersion) as ei:
        Session.load(tpath)
    assert ei.value.line == 3
    assert ei.value.offset == len(meta_line()) + len(msg_line("m1"))
    assert str(tpath) in str(ei.value)
    assert read(tpath) == data


@pytest.mark.parametrize("v", [2, 1.0, True])
def test_v_on_last_line_is_never_repaired_away(tpath, v):
    data = write_raw(tpath, meta_line(), msg_line("m1"), env_line("m2", "message", {"role": "user"}, v=v))
    with pytest.raises(UnsupportedVersion) as ei:
        Session.load(tpath)
    assert ei.value.line == 3
    assert ei.value.path is not None and ei.value.reason
    assert read(tpath) == data


def test_unknown_type_kept_in_events_skipped_by_messages(tpath):
    data = write_raw(tpath, meta_line(), msg_line("m1"),
                     env_line("u1", "from-the-future", {"anything": [1, 2]}),
                     env_line("u2", "grants-v9", {"grants": {"bad": True}}),
                     msg_line("m2", "assistant", "ok"))
    with Session.load(tpath) as s:
        assert [e.id for e in s.events] == ["meta-0", "m1", "u1", "u2", "m2"]
        assert s.events[2].type == "from-the-future" and s.events[2].payload == {"anything": [1, 2]}
        assert s.message_ids == ["m1", "m2"]
        assert s.grants == {}
        s.append_message(user_message("more"))
    assert read(tpath).startswith(data)


def test_unknown_type_as_last_line_is_kept(tpath):
    data = write_raw(tpath, meta_line(), msg_line("m1"), env_line("u1", "newer", {}))
    with Session.load(tpath) as s:
        assert s.events[-1].id == "u1"
        assert s.warnings == []
    assert read(tpath) == data


def test_read_accepts_any_nonempty_string_id(tpath):
    write_raw(tpath, meta_line("m"), msg_line("1"), msg_line("not a uuid at all ✓"), msg_line("x" * 500))
    with Session.load(tpath) as s:
        assert s.message_ids == ["1", "not a uuid at all ✓", "x" * 500]


def test_blank_lines_ignored_anywhere(tpath):
    write_raw(tpath, b"\n \t\r\n", meta_line(), b"\n", b"   \n", msg_line("m1"), b"\t\r\n", msg_line("m2"), b"\n\n  \n")
    with Session.load(tpath) as s:
        assert s.message_ids == ["m1", "m2"]
        assert s.warnings == []
        s.append_message(user_message("m3"))
    with Session.load(tpath) as s:
        assert [m.content for m in s.messages] == ["hi", "hi", "m3"]


def test_crlf_line_endings(tpath):
    raw = meta_line() + msg_line("m1", content="a") + msg_line("m2", content="b")
    data = write_raw(tpath, raw.replace(b"\n", b"\r\n"))
    with Session.load(tpath) as s:
        assert s.message_ids == ["m1", "m2"]
        assert [m.content for m in s.messages] == ["a", "b"]
        new = s.append_message(user_message("c"))
    out = read(tpath)
    assert out.startswith(data)
    with Session.load(tpath) as s:
        assert s.message_ids == ["m1", "m2", new]


def test_big_ints_and_floats_round_trip_exactly(session, tpath):
    values = {"big": 2 ** 200, "neg": -(10 ** 40), "f": 0.1, "tiny": 5e-324, "max": 1.7976931348623157e308,
              "one": 1.0, "third": 1 / 3, "negzero": -0.0, "i": 7}
    session.append_message(user_message("n"), extra={"nums": values})
    session.close()
    with Session.load(tpath) as s:
        got = s.events[-1].payload["nums"]
        assert got == values
        for k, v in values.items():
            assert type(got[k]) is type(v), k
        assert math.copysign(1.0, got["negzero"]) == -1.0
    p = Session.peek(tpath)
    assert p["envelopes"][-1].payload["nums"] == values
    assert type(p["envelopes"][-1].payload["nums"]["one"]) is float


def test_ints_of_any_size_round_trip(session, tpath):
    # docs/FORMAT.md: "Integers of any size and floats round-trip exactly."
    huge = 7 ** 6000  # more digits than Python's default int<->str limit
    session.append_message(user_message("n"), extra={"huge": huge, "neg": -huge})
    session.close()
    with Session.load(tpath) as s:
        assert s.events[-1].payload["huge"] == huge
        assert s.events[-1].payload["neg"] == -huge


def test_file_mode_and_parent_dirs(tmp_path):
    path = tmp_path / "a" / "b" / "c" / "run.jsonl"
    with Session.create(path, {}):
        pass
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(tmp_path / "a" / "b" / "c").st_mode) == 0o700
    assert stat.S_IMODE(os.stat(tmp_path / "a").st_mode) == 0o700
    # no temporary file left beside it
    assert os.listdir(path.parent) == ["run.jsonl"]


def test_create_refuses_existing_path_and_leaves_it(tpath):
    data = write_raw(tpath, b"precious, not a transcript\n")
    os.chmod(tpath, 0o644)
    with pytest.raises(FileExistsError):
        Session.create(tpath, {"x": 1})
    assert read(tpath) == data
    assert stat.S_IMODE(os.stat(tpath).st_mode) == 0o644
    assert os.listdir(tpath.parent) == [tpath.name]


def test_create_refuses_existing_transcript(session, tpath):
    session.append_message(user_message("a"))
    data = read(tpath)
    with pytest.raises(FileExistsError):
        Session.create(tpath, {})
    assert read(tpath) == data


def test_create_accepts_str_path(tmp_path):
    p = str(tmp_path / "s.jsonl")
    with Session.create(p, {"a": 1}) as s:
        s.append_message(user_message("x"))
    with Session.load(p) as s:
        assert s.meta == {"a": 1}
        assert [m.content for m in s.messages] == ["x"]


def test_session_attributes(session, tpath):
    assert os.fspath(session.path) == os.fspath(tpath)
    assert session.warnings == []
    assert session.pending_tool_operations() == []


def test_message_payload_shape_on_disk(session, tpath):
    session.append_message(system_message("sys"))
    session.append_message(assistant_message(None, [{"id": "c1", "type": "function",
                                                     "function": {"name": "f", "arguments": "{}"}}]))
    session.append_message(tool_message("c1", "result"))
    session.append_message(Message("user", "x", name="bob", sticky=True, depth=0))
    payloads = [json.loads(l)["payload"] for l in lines_of(tpath)[1:]]
    assert payloads == [
        {"role": "system", "content": "sys", "sysprompt": True},
        {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function",
                                              "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "content": "result", "tool_call_id": "c1"},
        {"role": "user", "content": "x", "name": "bob", "sticky": True, "depth": 0},
    ]


def test_create_leaves_a_single_link(tpath):
    with Session.create(tpath, {}):
        assert os.stat(tpath).st_nlink == 1


def test_create_refuses_dangling_symlink(tmp_path):
    link = tmp_path / "run.jsonl"
    os.symlink(tmp_path / "nowhere.jsonl", link)
    with pytest.raises(FileExistsError):
        Session.create(link, {})
    assert os.path.islink(link) and not (tmp_path / "nowhere.jsonl").exists()


@pytest.mark.parametrize("fsync", [False, True])
def test_fsync_option(tmp_path, fsync):
    p = tmp_path / "f.jsonl"
    with Session.create(p, {"f": fsync}, fsync=fsync) as s:
        a = s.append_message(user_message("x"))
        s.append_grants({"g": 1})
    with Session.load(p, fsync=fsync) as s:
        assert s.message_ids == [a]
        assert s.grants == {"g": 1}


def test_grants_last_line_wins(session, tpath):
    assert session.grants == {}
    session.append_grants({"read": True, "write": True})
    session.append_grants({"read": True})  # a revocation is a smaller snapshot
    assert session.grants == {"read": True}
    payload = json.loads(lines_of(tpath)[-1])["payload"]
    assert payload == {"grants": {"read": True}}
    session.close()
    with Session.load(tpath) as s:
        assert s.grants == {"read": True}
        s.append_grants({})
        assert s.grants == {}
    with Session.load(tpath) as s:
        assert s.grants == {}


def test_grants_must_be_an_object(session, tpath):
    before = read(tpath)
    for bad in ([1, 2], "all", None, 5):
        with pytest.raises((TypeError, ValueError)):
            session.append_grants(bad)
    assert read(tpath) == before


def test_raw_line_separators_inside_strings_do_not_split_lines(tpath):
    # hand-written by another tool: U+2028, U+2029 and NEL unescaped inside a JSON string
    line = ('{"id":"m1","payload":{"content":"a\u2028b\u2029c\u0085d\u000b","role":"user"},'
            '"ts":"2026-01-01T00:00:00.000000Z","type":"message","v":1}\n')
    line = line.replace("\u000b", "\\u000b").encode("utf-8")
    write_raw(tpath, meta_line(), line, msg_line("m2"))
    with Session.load(tpath) as s:
        assert s.message_ids == ["m1", "m2"]
        assert s.messages[0].content == "a\u2028b\u2029c\u0085d\u000b"
    p = Session.peek(tpath)
    assert [e.id for e in p["envelopes"]] == ["meta-0", "m1", "m2"]


@pytest.mark.parametrize("junk", [b"\x0c\n", b"\x0b\n", "\u00a0\n".encode(), "\u2028\n".encode(), b"\x00\n"])
def test_non_json_whitespace_line_is_not_blank(tpath, junk):
    # blank means only space, tab and CR; anything else is a malformed line
    data = write_raw(tpath, meta_line(), msg_line("m1"), junk, msg_line("m2"))
    with pytest.raises(CorruptTranscript) as ei:
        Session.load(tpath)
    assert ei.value.line == 3
    assert read(tpath) == data


def test_trailing_blank_without_newline_then_append(tpath):
    write_raw(tpath, meta_line(), msg_line("m1"), b"  \t")
    with Session.load(tpath) as s:
        assert s.message_ids == ["m1"]
        new = s.append_message(user_message("after"))
    with Session.load(tpath) as s:
        assert s.message_ids == ["m1", new]
        assert s.warnings == []


def test_load_through_dangling_symlink_is_file_not_found(tmp_path):
    link = tmp_path / "run.jsonl"
    os.symlink(tmp_path / "gone.jsonl", link)
    with pytest.raises(FileNotFoundError):
        Session.load(link)
    assert os.path.islink(link) and not (tmp_path / "gone.jsonl").exists()


def test_returned_state_cannot_change_the_session(session, tpath):
    # docs/durability.md: the in-memory state is what a load of the file gives; a caller editing what it
    # was handed (or what it passed in) must not grant itself permissions the file never held
    given = {"tools": {"write": False}}
    session.append_grants(given)
    given["tools"]["write"] = True
    got = session.grants
    try:
        got["tools"]["write"] = True
        got["admin"] = True
    except TypeError:
        pass  # a read-only view is fine too
    assert session.grants == {"tools": {"write": False}}
    meta = session.meta
    try:
        meta["agent"] = "changed"
    except TypeError:
        pass
    assert session.meta == {"agent": "test"}
    session.close()
    with Session.load(tpath) as s:
        assert s.grants == {"tools": {"write": False}}


def test_error_hierarchy():
    import llm_agent_session as las
    for name in ["NotATranscript", "CorruptTranscript", "UnsupportedVersion", "DanglingReference",
                 "SessionLocked", "SessionClosed", "SessionBroken", "TranscriptConflict", "ToolOperationError"]:
        cls = getattr(las, name)
        assert issubclass(cls, las.TranscriptError) and issubclass(cls, Exception), name
    assert issubclass(las.DanglingReference, las.CorruptTranscript)
    assert issubclass(las.TranscriptError, Exception)


def test_public_names():
    import llm_agent_session as las
    for name in ["Session", "Message", "Event", "PendingToolOperation", "system_message", "user_message",
                 "assistant_message", "tool_message", "backend", "TranscriptError", "NotATranscript",
                 "CorruptTranscript", "UnsupportedVersion", "DanglingReference", "SessionLocked", "SessionClosed",
                 "SessionBroken", "TranscriptConflict", "ToolOperationError"]:
        assert hasattr(las, name), name
    assert las.backend() in ("native", "pure")


def test_backend_selection_in_a_fresh_process(backend_name):
    import subprocess
    import sys
    from tests.support.helpers import child_env
    from llm_agent_session import _backend
    code = ("import warnings, json\n"
            "with warnings.catch_warnings(record=True) as w:\n"
            "    warnings.simplefilter('always')\n"
            "    import llm_agent_session as las\n"
            "print(json.dumps([las.backend(), [str(x.message) for x in w]]))\n")
    env = child_env()
    env.pop("LLM_AGENT_SESSION_BACKEND")
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    name, warned = json.loads(r.stdout)
    if "native" in _backend.available():
        assert name == "native" and warned == []
    else:
        assert name == "pure" and warned  # used automatically, with a warning
    env["LLM_AGENT_SESSION_BACKEND"] = "pure"
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert json.loads(r.stdout) == ["pure", []]
