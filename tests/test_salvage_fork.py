"""the README's salvage and fork: Session.salvage and Session.fork."""

from __future__ import annotations

import json
import os
import stat

import pytest

from llm_agent_session import (
    DanglingReference,
    Session,
    SessionLocked,
    TranscriptError,
    assistant_message,
    system_message,
    user_message,
)

from tests.support.helpers import (
    compaction_line,
    lines_of,
    meta_line,
    msg_line,
    read,
    write_raw,
)


@pytest.fixture
def src(tmp_path):
    return tmp_path / "src.jsonl"


@pytest.fixture
def out(tmp_path):
    return tmp_path / "out" / "salvaged.jsonl"


def _check_report_shape(report):
    assert isinstance(report, dict)
    assert {"dropped", "kept", "loads", "error"} <= set(report)
    assert isinstance(report["kept"], int)
    assert isinstance(report["loads"], bool)
    for d in report["dropped"]:
        assert {"line", "start", "end", "reason"} <= set(d)
        assert isinstance(d["reason"], str) and d["reason"]


def test_salvage_drops_bad_lines_keeps_rest_verbatim(src, out):
    good = [meta_line("meta", {"a": 1}), msg_line("m1", content="é\u2028x"), msg_line("m2"), msg_line("m3"),
            msg_line("m4")]
    bad1 = b'{"id":"broken", nope}\n'
    bad2 = b'{"id":"x\xff"}\n'
    data = write_raw(src, good[0], good[1], bad1, good[2], bad2, good[3], good[4])
    report = Session.salvage(src, out)
    _check_report_shape(report)
    assert read(src) == data  # never in place
    assert read(out) == b"".join(good)  # verbatim, in order
    start1 = len(good[0] + good[1])
    start2 = start1 + len(bad1) + len(good[2])
    assert [(d["line"], d["start"]) for d in report["dropped"]] == [(3, start1), (5, start2)]
    assert report["dropped"][0]["end"] in (start1 + len(bad1) - 1, start1 + len(bad1))
    assert report["dropped"][1]["end"] in (start2 + len(bad2) - 1, start2 + len(bad2))
    assert report["kept"] == 5
    assert report["loads"] is True and report["error"] is None
    with Session.load(out) as s:
        assert s.message_ids == ["m1", "m2", "m3", "m4"]
        assert s.meta == {"a": 1}
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o600
    assert os.listdir(out.parent) == [out.name]  # published atomically: no temporary left


def test_salvage_reports_result_that_does_not_load(src, out):
    data = write_raw(src, meta_line(), msg_line("m1"), msg_line("m2")[:-5] + b"!!!!\n", msg_line("m3"),
                     compaction_line("c1", "m2"), msg_line("m4"))
    report = Session.salvage(src, out)
    _check_report_shape(report)
    assert [d["line"] for d in report["dropped"]] == [3]
    assert report["kept"] == 5
    assert report["loads"] is False
    assert isinstance(report["error"], str)
    assert "m2" in report["error"] or "line 4" in report["error"]
    assert out.exists()
    with pytest.raises(DanglingReference):
        Session.load(out)
    assert read(src) == data


def test_salvage_of_torn_tail(src, out):
    with Session.create(src, {}) as s:
        ids = [s.append_message(user_message(str(i))) for i in range(3)]
    good = read(src)
    write_raw(src, good + b'{"id":"to')
    report = Session.salvage(src, out)
    assert read(out) == good
    assert len(report["dropped"]) == 1 and report["dropped"][0]["line"] == 5
    assert report["dropped"][0]["start"] == len(good)
    assert report["loads"] is True
    assert read(src) == good + b'{"id":"to'  # salvage never repairs in place


def test_salvage_refuses_existing_out_and_in_place(src, out):
    data = write_raw(src, meta_line(), b"bad\n", msg_line("m1"))
    out.parent.mkdir(parents=True)
    existing = write_raw(out, b"do not touch\n")
    with pytest.raises(FileExistsError):
        Session.salvage(src, out)
    assert read(out) == existing
    with pytest.raises((FileExistsError, ValueError)):
        Session.salvage(src, src)
    assert read(src) == data


def test_salvage_clean_file_is_identical(src, out):
    with Session.create(src, {"m": 1}) as s:
        s.append_message(user_message("x"))
        s.append_grants({"g": True})
    report = Session.salvage(src, out)
    assert report["dropped"] == [] and report["kept"] == 3 and report["loads"] is True
    assert read(out) == read(src)


def test_salvage_missing_source(src, out):
    with pytest.raises(FileNotFoundError):
        Session.salvage(src, out)
    assert not out.exists()


# --------------------------------------------------------------------------- fork


@pytest.fixture
def history(src):
    s = Session.create(src, {"agent": "a", "model": "m"})
    ids = [s.append_message(system_message("sys")), s.append_message(user_message("u1")),
           s.append_message(assistant_message("a1"))]
    op = s.append_tool_dispatched("c1", "t", {"x": 1})
    g = s.append_grants({"write": True})
    c = s.append_compaction("S", ids[2], 10, 2)
    after = s.append_message(user_message("u2"))
    s.close()
    return {"ids": ids, "op": op, "grants": g, "compaction": c, "after": after}


def test_fork_copies_prefix_byte_for_byte(src, out, history):
    orig_lines = lines_of(src)
    data = read(src)
    forked = Session.fork(src, out, history["grants"])
    try:
        new_lines = lines_of(out)
        assert new_lines[1:] == orig_lines[1:6]  # through the grants line, byte for byte
        meta = json.loads(new_lines[0])
        assert meta["type"] == "session-meta"
        assert meta["id"] != json.loads(orig_lines[0])["id"]  # a fresh meta line
        assert meta["payload"] == {"agent": "a", "model": "m",
                                   "forked-from": {"path": meta["payload"]["forked-from"]["path"],
                                                   "id": history["grants"]}}
        assert os.path.samefile(meta["payload"]["forked-from"]["path"], src)
        assert forked.meta == meta["payload"]
        assert forked.message_ids == history["ids"]
        assert forked.grants == {"write": True}
        assert [o.op_id for o in forked.pending_tool_operations()] == [history["op"]]
        # a loaded session with its lock and append handle
        with pytest.raises(SessionLocked):
            Session.load(out)
        new = forked.append_message(user_message("branch"))
    finally:
        forked.close()
    assert read(src) == data
    with Session.load(out) as s:
        assert s.message_ids == history["ids"] + [new]
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o600
    assert os.listdir(out.parent) == [out.name]


def test_fork_with_meta(src, out, history):
    with Session.fork(src, out, history["compaction"], meta={"agent": "b"}) as forked:
        assert forked.meta["agent"] == "b" and "model" not in forked.meta
        assert forked.meta["forked-from"]["id"] == history["compaction"]
        assert forked.message_ids == [history["ids"][0], history["compaction"]]
    assert lines_of(out)[1:] == lines_of(src)[1:7]


def test_fork_through_last_line(src, out, history):
    with Session.fork(src, out, history["after"]) as forked:
        with Session.load(src) as orig:
            assert forked.messages == orig.messages
            assert forked.message_ids == orig.message_ids
    assert lines_of(out)[1:] == lines_of(src)[1:]


def test_fork_unknown_id_creates_nothing(src, out, history):
    with pytest.raises((TranscriptError, ValueError, LookupError)):
        Session.fork(src, out, "no-such-id")
    assert not out.exists()
    assert not out.parent.exists() or os.listdir(out.parent) == []


def test_fork_refuses_existing_out(src, out, history):
    out.parent.mkdir(parents=True)
    existing = write_raw(out, b"mine\n")
    with pytest.raises(FileExistsError):
        Session.fork(src, out, history["after"])
    assert read(out) == existing


def test_fork_while_original_is_open(src, out, history):
    with Session.load(src) as s:
        s.append_message(user_message("more"))
        with Session.fork(src, out, history["ids"][1]) as f:
            assert f.message_ids == history["ids"][:2]
        s.append_message(user_message("still writing"))


def test_salvage_drops_json_that_is_not_an_envelope(src, out):
    data = write_raw(src, meta_line(), msg_line("m1"), b'{"foo":1}\n', b"[1,2]\n", msg_line("m2"))
    report = Session.salvage(src, out)
    assert [d["line"] for d in report["dropped"]] == [3, 4]
    assert read(out) == meta_line() + msg_line("m1") + msg_line("m2")
    assert report["loads"] is True


def test_salvage_with_damaged_meta_reports_not_loading(src, out):
    write_raw(src, b'{"id":"meta-0","payl\n', msg_line("m1"), msg_line("m2"))
    report = Session.salvage(src, out)
    assert [d["line"] for d in report["dropped"]] == [1]
    assert report["loads"] is False
    assert isinstance(report["error"], str) and report["error"]
    if out.exists():
        assert read(out) == msg_line("m1") + msg_line("m2")


def test_salvage_keeps_blank_lines_out_and_crlf_lines_verbatim(src, out):
    lines = [meta_line().replace(b"\n", b"\r\n"), msg_line("m1").replace(b"\n", b"\r\n"), b"garbage\r\n",
             msg_line("m2")]
    write_raw(src, lines[0], b"\n  \n", lines[1], lines[2], lines[3])
    report = Session.salvage(src, out)
    assert [d["line"] for d in report["dropped"]] == [5]
    with Session.load(out) as s:
        assert s.message_ids == ["m1", "m2"]


def test_fork_of_a_file_with_torn_tail_after_the_cut(src, out, history):
    with open(src, "ab") as f:
        f.write(b'{"id":"torn-by-a-crash')
    data = read(src)
    with Session.fork(src, out, history["compaction"]) as forked:
        assert forked.message_ids == [history["ids"][0], history["compaction"]]
    assert read(src) == data  # fork reads; it never repairs the original
