"""docs/FORMAT.md (values JSON cannot carry, nesting; fatal lines) and docs/ARCHITECTURE.md (both backends
agree on every input): bad input on write and on read."""

from __future__ import annotations

import json
import os
import shutil
import sys

import pytest

from llm_agent_session import (
    CorruptTranscript,
    Message,
    NotATranscript,
    Session,
    TranscriptError,
    UnsupportedVersion,
    _backend,
    user_message,
)

from tests.support.helpers import (
    compaction_line,
    env_line,
    lines_of,
    meta_line,
    msg_line,
    read,
    run_context,
    run_py,
    write_raw,
)


class Opaque:
    pass


BAD_VALUES = [
    ("nan", float("nan")),
    ("inf", float("inf")),
    ("ninf", float("-inf")),
    ("surrogate", "abc\ud800def"),
    ("lowsurrogate", "\udfff"),
    ("bytes", b"raw"),
    ("bytearray", bytearray(b"raw")),
    ("set", {1, 2}),
    ("frozenset", frozenset()),
    ("object", Opaque()),
    ("complex", 1j),
]


@pytest.mark.parametrize("name,value", BAD_VALUES, ids=[n for n, _ in BAD_VALUES])
def test_bad_value_in_extra_refused_naming_key(session, tpath, name, value):
    session.append_message(user_message("ok"))
    before = read(tpath)
    state = (session.messages, session.message_ids, list(session.events))
    with pytest.raises((TypeError, ValueError)) as ei:
        session.append_message(user_message("x"), extra={"outer": {"list": [0, {"the_bad_key": value}]}})
    assert "the_bad_key" in str(ei.value)
    assert read(tpath) == before
    assert (session.messages, session.message_ids, list(session.events)) == state


@pytest.mark.parametrize("name,value", BAD_VALUES, ids=[n for n, _ in BAD_VALUES])
def test_bad_value_everywhere_writes_nothing(session, tpath, name, value):
    mid = session.append_message(user_message("ok"))
    op = session.append_tool_dispatched("c", "t", {})
    before = read(tpath)
    attempts = [
        lambda: session.append_message(user_message(value)),
        lambda: session.append_message(Message("user", [{"type": "text", "text": value}])),
        lambda: session.append_message({"role": "user", "content": "x", "tool_calls": [{"bad_call_key": value}]}),
        lambda: session.append_grants({"grant_key": value}),
        lambda: session.append_elision([(mid, {"stub_key": value})]),
        lambda: session.append_tool_dispatched("c2", "t", {"arg_key": value}),
        lambda: run_context(session, [("n", "t")], [("fact_key", value)]),
        lambda: session.sync_messages([user_message("ok"), Message("user", {"sync_key": value})]),
    ]
    for attempt in attempts:
        with pytest.raises((TypeError, ValueError)):
            attempt()
    assert read(tpath) == before
    assert [o.op_id for o in session.pending_tool_operations()] == [op]
    assert session.message_ids == [mid]
    assert session.grants == {}


@pytest.mark.parametrize("name,value", BAD_VALUES, ids=[n for n, _ in BAD_VALUES])
def test_bad_value_in_meta_creates_nothing(tpath, name, value):
    with pytest.raises((TypeError, ValueError)) as ei:
        Session.create(tpath, {"fine": 1, "meta_key": value})
    assert "meta_key" in str(ei.value)
    assert not tpath.exists()
    assert os.listdir(tpath.parent) == []


def test_non_string_keys_refused(session, tpath):
    before = read(tpath)
    for bad in [{1: "x"}, {None: 1}, {("a",): 1}]:
        with pytest.raises((TypeError, ValueError)):
            session.append_grants({"g": bad})
    assert read(tpath) == before


def test_nan_in_tool_arguments_string_kept_as_string(session, tpath):
    # a *string* holding NaN is not JSON, so it is stored as the string itself, not refused
    session.append_tool_dispatched("c", "t", '{"x": NaN}')
    assert json.loads(lines_of(tpath)[-1])["payload"]["arguments"] == '{"x": NaN}'


def _nested(depth):
    v = []
    for _ in range(depth - 1):
        v = [v]
    return v


def test_write_nesting_limit(session, tpath):
    session.append_message(user_message("deep-ish"), extra={"d": _nested(50)})
    before = read(tpath)
    for depth in (101, 150, 5000, 200_000):
        with pytest.raises(ValueError):
            session.append_message(user_message("deep"), extra={"d": _nested(depth)})
        with pytest.raises(ValueError):
            session.append_grants({"d": _nested(depth)})
    assert read(tpath) == before
    session.close()
    with Session.load(tpath) as s:
        assert s.events[-1].payload["d"] == _nested(50)


def test_self_containing_value_refused(session, tpath):
    before = read(tpath)
    loop = []
    loop.append(loop)
    d = {}
    d["self"] = d
    for bad in (loop, d):
        with pytest.raises(ValueError):
            session.append_grants({"x": bad})
    assert read(tpath) == before


# --------------------------------------------------------------------------- read side


def _deep_line(id_, depth):
    """An unknown-type envelope whose whole line nests `depth` levels."""
    inner = "[" * (depth - 2) + "]" * (depth - 2)
    return ('{"id":"%s","payload":{"x":%s},"ts":"2026-01-01T00:00:00.000000Z","type":"deep","v":1}\n'
            % (id_, inner)).encode()


@pytest.mark.parametrize("depth", [100, 128, 129, 200])
def test_read_parses_at_least_128_levels(tpath, depth):
    write_raw(tpath, meta_line(), _deep_line("d", depth), msg_line("m1"))
    with Session.load(tpath) as s:
        assert s.message_ids == ["m1"]
        assert s.events[1].type == "deep"


@pytest.mark.parametrize("depth", [600, 100_000])
@pytest.mark.parametrize("last", [False, True])
def test_read_refuses_very_deep_lines(tpath, depth, last):
    lines = [meta_line(), msg_line("m1"), _deep_line("d", depth)] + ([] if last else [msg_line("m2")])
    data = write_raw(tpath, *lines)
    with pytest.raises(CorruptTranscript) as ei:
        Session.load(tpath)
    assert ei.value.line == 3
    assert read(tpath) == data
    p = Session.peek(tpath)  # peek skips it with a warning, never crashes
    assert len(p["warnings"]) == 1


ENVELOPE_DEFECTS = {
    "missing-v": b'{"id":"x","payload":{"role":"user"},"ts":"t","type":"message"}\n',
    "missing-id": b'{"payload":{"role":"user"},"ts":"t","type":"message","v":1}\n',
    "extra-key": b'{"id":"x","payload":{"role":"user"},"ts":"t","type":"message","v":1,"w":2}\n',
    "empty-id": b'{"id":"","payload":{"role":"user"},"ts":"t","type":"message","v":1}\n',
    "int-id": b'{"id":5,"payload":{"role":"user"},"ts":"t","type":"message","v":1}\n',
    "payload-list": b'{"id":"x","payload":[],"ts":"t","type":"message","v":1}\n',
    "payload-null": b'{"id":"x","payload":null,"ts":"t","type":"grants","v":1}\n',
    "type-int": b'{"id":"x","payload":{},"ts":"t","type":3,"v":1}\n',
    "array": b'[1,2]\n',
    "number": b'7\n',
    "role-missing": b'{"id":"x","payload":{"content":"c"},"ts":"t","type":"message","v":1}\n',
    "role-int": b'{"id":"x","payload":{"role":1},"ts":"t","type":"message","v":1}\n',
    "duplicate-id": msg_line("m1"),
    "second-meta-dup": meta_line(),
    "trailing-garbage": msg_line("m9")[:-1] + b" x\n",
    "two-values": msg_line("m9")[:-1] + msg_line("m10"),
    "nan-literal": b'{"id":"x","payload":{"role":"user","n":NaN},"ts":"t","type":"message","v":1}\n',
    "single-quotes": b"{'id':'x'}\n",
    "raw-control-char": b'{"id":"x","payload":{"role":"user","content":"a\x01b"},"ts":"t","type":"message","v":1}\n',
    "compaction-missing-keys": b'{"id":"x","payload":{"summary":"s"},"ts":"t","type":"compaction","v":1}\n',
    "elision-items-not-list": b'{"id":"x","payload":{"items":5},"ts":"t","type":"elision","v":1}\n',
}


@pytest.mark.parametrize("defect", sorted(ENVELOPE_DEFECTS))
def test_defective_middle_line_is_fatal(tpath, defect):
    lines = [meta_line(), msg_line("m1"), ENVELOPE_DEFECTS[defect], msg_line("m2")]
    data = write_raw(tpath, *lines)
    with pytest.raises(CorruptTranscript) as ei:
        Session.load(tpath)
    e = ei.value
    assert (e.line, e.offset) == (3, len(lines[0]) + len(lines[1]))
    assert f"line 3" in str(e) and f"byte {e.offset}" in str(e) and str(tpath) in str(e)
    assert isinstance(e.reason, str) and e.reason
    assert read(tpath) == data


@pytest.mark.parametrize("setup", [b"", b"\n\n  \n", b"\x00\x00\x00", b"hello world\n",
                                   b'{"id":"m","payload":{},"ts":"t","type":"message","v":1}\n',
                                   b"[1]\n", meta_line()[:-1][:30],
                                   b"\xff\xfe binary \x00\n" + meta_line()])
def test_not_a_transcript_and_never_modified(tpath, setup):
    data = write_raw(tpath, setup)
    with pytest.raises(NotATranscript) as ei:
        Session.load(tpath)
    assert isinstance(ei.value, TranscriptError)
    assert read(tpath) == data
    assert os.listdir(tpath.parent) == [tpath.name]


def test_first_line_message_then_meta_is_not_a_transcript(tpath):
    data = write_raw(tpath, msg_line("m1"), meta_line())
    with pytest.raises(NotATranscript):
        Session.load(tpath)
    assert read(tpath) == data


def test_first_line_not_meta_with_torn_tail_untouched(tpath):
    data = write_raw(tpath, msg_line("m1"), msg_line("m2"), b'{"id":"to')
    with pytest.raises(NotATranscript):
        Session.load(tpath)
    assert read(tpath) == data


def test_unsupported_version_has_attributes(tpath):
    lines = [meta_line(), msg_line("m1"), env_line("x", "message", {"role": "user"}, v=2), msg_line("m2")]
    write_raw(tpath, *lines)
    with pytest.raises(UnsupportedVersion) as ei:
        Session.load(tpath)
    e = ei.value
    assert (e.line, e.offset) == (3, len(lines[0]) + len(lines[1]))
    assert os.fspath(e.path) == os.fspath(tpath)
    assert e.reason


def test_load_of_a_directory_is_an_error(tmp_path):
    with pytest.raises((OSError, TranscriptError)):
        Session.load(tmp_path)


# --------------------------------------------------------------------------- both backends agree


AGREEMENT_INPUTS = {
    "clean": meta_line() + msg_line("m1"),
    "torn": meta_line() + msg_line("m1") + b'{"id":"x',
    "torn-utf8": meta_line() + msg_line("m1") + "{\"a\":\"é".encode()[:-1],
    "nul-tail": meta_line() + msg_line("m1") + b"\0" * 64,
    "two-bad": meta_line() + b"bad\n" + b"worse",
    "bad-mid": meta_line() + b"bad\n" + msg_line("m1"),
    "invalid-utf8-last-line": meta_line() + msg_line("m1") + b'{"id":"\xff"}\n',
    "invalid-utf8-last-line-torn": meta_line() + msg_line("m1") + b'{"id":"\xff',
    "dup-keys": meta_line() + b'{"id":"a","id":"b","payload":{"role":"user"},"ts":"t","type":"message","v":1}\n',
    "dup-keys-last": meta_line() + msg_line("m1") + b'{"id":"m2","payload":{"role":"user","role":"x"},"ts":"t","type":"message","v":1}\n',
    "deep-127": meta_line() + _deep_line("d", 127),
    "deep-511": meta_line() + _deep_line("d", 511),
    "deep-512": meta_line() + _deep_line("d", 512),
    "deep-513": meta_line() + _deep_line("d", 513),
    "deep-514": meta_line() + _deep_line("d", 514),
    "deep-513-mid": meta_line() + _deep_line("d", 513) + msg_line("m1"),
    "huge-int": meta_line() + b'{"id":"x","payload":{"n":' + b"9" * 5000 + b'},"ts":"t","type":"u","v":1}\n',
    "huge-exp": meta_line() + b'{"id":"x","payload":{"n":1e400},"ts":"t","type":"u","v":1}\n',
    "neg-zero": meta_line() + b'{"id":"x","payload":{"n":-0,"f":-0.0,"e":1E2},"ts":"t","type":"u","v":1}\n',
    "bom": b"\xef\xbb\xbf" + meta_line(),
    "v-float": meta_line() + env_line("x", "message", {"role": "user"}, v=1.0),
    "v-1e0": meta_line() + b'{"id":"x","payload":{"role":"user"},"ts":"t","type":"message","v":1e0}\n',
    "v-big": meta_line() + b'{"id":"x","payload":{"role":"user"},"ts":"t","type":"message","v":100000000000000000000001}\n',
    "meta-v2": env_line("m", "session-meta", {}, v=2) + msg_line("m1"),
    "ts-int": meta_line() + b'{"id":"x","payload":{"role":"user"},"ts":5,"type":"message","v":1}\n',
    "blank-cr-only": meta_line() + b"\r\r\n" + msg_line("m1"),
    "vertical-tab": meta_line() + b"\x0b\n" + msg_line("m1"),
    "formfeed-last": meta_line() + msg_line("m1") + b"\x0c",
    "u2028-raw": meta_line() + msg_line("m1", content="a\u2028b"),
    "escaped-slash": meta_line() + b'{"id":"x\\/y","payload":{"role":"user"},"ts":"t","type":"message","v":1}\n',
    "crlf-torn": (meta_line() + msg_line("m1")).replace(b"\n", b"\r\n") + b"{",
    "compaction-dangling-last": meta_line() + msg_line("m1") + compaction_line("c", "zz"),
    "settle-unknown": meta_line() + b'{"id":"s","payload":{"op-id":"q","outcome":"failed"},"ts":"t","type":"tool-settled","v":1}\n',
    "elision-stub-missing": meta_line() + msg_line("m1") + b'{"id":"e","payload":{"items":[{"id":"m1"}]},"ts":"t","type":"elision","v":1}\n',
    "grants-not-object": meta_line() + b'{"id":"g","payload":{"grants":[1]},"ts":"t","type":"grants","v":1}\n',
    "dispatched-no-call-id": meta_line() + b'{"id":"o","payload":{"tool":"t"},"ts":"t","type":"tool-dispatched","v":1}\n',
    "lone-surrogate-escape": meta_line() + b'{"id":"x","payload":{"role":"user","content":"\\ud800"},"ts":"t","type":"message","v":1}\n' + msg_line("m1"),
    "surrogate-pair-escape": meta_line() + b'{"id":"x","payload":{"role":"user","content":"\\ud83d\\ude00"},"ts":"t","type":"message","v":1}\n',
    "long-line": meta_line() + msg_line("big", content="é" * 1_500_000) + msg_line("after"),
    "long-torn-line": meta_line() + msg_line("m1") + msg_line("big", content="日" * 700_000)[:-100],
    "many-lines": meta_line() + b"".join(msg_line(f"m{i}", content=str(i)) for i in range(5_000)),
    "run-context-bad": meta_line() + b'{"id":"r","payload":{"sections":7},"ts":"t","type":"run-context","v":1}\n',
}


def _outcome(path):
    try:
        s = Session.load(path)
    except BaseException as e:  # compare whatever happens, class and place included
        r = (type(e).__name__, getattr(e, "line", None), getattr(e, "offset", None),
             getattr(e, "reason", None), str(e))
    else:
        with s:
            r = ("ok", [(e.id, e.type, e.ts, e.v, e.payload) for e in s.events], s.messages, s.message_ids,
                 s.grants, s.warnings, s.pending_tool_operations())
    p = Session.peek(path)
    peeked = (p.get("error"), p["meta"], [(e.id, e.type, e.payload) for e in p["envelopes"]], list(p["messages"]),
              p["warnings"], p["end"], p["pending"], p["size"])
    return r, read(path), peeked


@pytest.mark.parametrize("name", sorted(AGREEMENT_INPUTS))
def test_backends_agree(tmp_path, backend_name, other_backend, name):
    data = AGREEMENT_INPUTS[name]
    results = {}
    try:
        for b in (backend_name, other_backend):
            d = tmp_path / b
            d.mkdir()
            path = d / "same.jsonl"  # same file name so messages compare; the dir differs
            write_raw(path, data)
            _backend.use(b)
            r = _outcome(path)
            limit = sys.get_int_max_str_digits()
            sys.set_int_max_str_digits(0)  # repr of the huge-int inputs
            try:
                results[b] = repr(r).replace(str(d), "<dir>")
            finally:
                sys.set_int_max_str_digits(limit)
    finally:
        _backend.use(backend_name)
    assert results[backend_name] == results[other_backend]


@pytest.mark.parametrize("depth,ok", [(511, True), (512, True), (513, False), (514, False)])
def test_read_nesting_limit_is_512(tpath, depth, ok):
    # the lead's decision: a line nested deeper than 512 levels (the envelope object is
    # level 1) is CorruptTranscript, in the middle or as the last line
    data = write_raw(tpath, meta_line(), _deep_line("d", depth), msg_line("m1"))
    if ok:
        with Session.load(tpath) as s:
            assert s.message_ids == ["m1"]
    else:
        with pytest.raises(CorruptTranscript) as ei:
            Session.load(tpath)
        assert ei.value.line == 2
        assert read(tpath) == data


_MEMORY_PROBE = r"""
import resource
def peak():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
before = peak()
try:
    Session.load(sys.argv[1]).close()
except CorruptTranscript:
    pass
Session.peek(sys.argv[1])
print(peak() - before)
"""


@pytest.mark.parametrize("deep", [False, True])
def test_a_long_line_with_many_brackets_reads_in_linear_memory(tmp_path, backend_name, deep):
    """Issue #24, item 7: a 30 MB string (escapes every few bytes) beside more than 512
    brackets, read by `load` and `peek`, costs a small multiple of the line (the pure
    core's bracket count once took 2.8 GB here)."""
    size = 30_000_000
    text = ('ab\\"c\\\\d' * (size // 9))  # JSON escapes: a quote and a backslash, inside the string
    brackets = "[" * 600 + "]" * 600 if deep else ",".join(["[]"] * 600)
    line = ('{"id":"big","payload":{"s":"%s","b":[%s]},"ts":"2026-01-01T00:00:00.000000Z","type":"big","v":1}\n'
            % (text, brackets)).encode()
    path = tmp_path / "long.jsonl"
    write_raw(path, meta_line(), line, msg_line("m1"))
    out = run_py(_MEMORY_PROBE, str(path), timeout=300)  # on this backend, asserted in the child
    grown = int(out.stdout)
    assert grown < 10 * len(line), f"{grown / 1e6:.0f} MB for a {len(line) / 1e6:.0f} MB line"
