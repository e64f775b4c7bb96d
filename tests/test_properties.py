"""docs/durability.md ("after every append the in-memory state is what Session.load of the same file
would give"), 4 (the fold) and 5 (peek sees every line), checked on random histories."""

from __future__ import annotations

import os
import shutil
import tempfile

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llm_agent_session import Message, Session, TranscriptError

from tests.support.helpers import pending_as_dicts, reference_replay, sha

SETTINGS = settings(max_examples=int(os.environ.get("LAS_PROP_EXAMPLES", "40")), deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=20) | st.sampled_from(
    ["", "a\u2028b", "\u2029", "日本語", "\x00\x1f\"\\", "🎉"])
json_scalar = st.none() | st.booleans() | st.integers(min_value=-(2 ** 70), max_value=2 ** 70) | \
    st.floats(allow_nan=False, allow_infinity=False) | text
json_value = st.recursive(json_scalar, lambda inner: st.lists(inner, max_size=3) |
                          st.dictionaries(text, inner, max_size=3), max_leaves=8)
content = st.none() | text | st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": text}), max_size=2)

message = st.builds(
    lambda role, c, name, sticky, sysprompt, depth: Message(role, c, name=name, sticky=sticky,
                                                            sysprompt=sysprompt, depth=depth),
    st.sampled_from(["user", "assistant", "system"]), content, st.none() | text,
    st.booleans(), st.booleans(), st.none() | st.integers(0, 5))
extras = st.none() | st.dictionaries(st.sampled_from(["finish-reason", "usage", "x-note", "name"]),
                                     text, max_size=3)
SECTION_POOL = ["identity block", "AGENTS.md: run tests", "today is Tuesday", "branch main", "a\u2028b"]

op = st.one_of(
    st.tuples(st.just("message"), message, extras),
    st.tuples(st.just("grants"), st.dictionaries(text, json_value, max_size=3)),
    st.tuples(st.just("compaction"), st.integers(0, 10 ** 6), text, st.booleans()),
    st.tuples(st.just("elision"), st.lists(st.tuples(st.integers(0, 10 ** 6), content), min_size=1, max_size=3)),
    st.tuples(st.just("dispatch"), st.sampled_from(["read", "write"]), json_value | st.just('{"a": [1, 2]}'),
              st.none() | text, st.none() | st.integers(0, 9)),
    st.tuples(st.just("tool-result"), st.integers(0, 10 ** 6), content),
    st.tuples(st.just("settle"), st.integers(0, 10 ** 6),
              st.sampled_from(["completed", "failed", "outcome-unknown"]), st.none() | text),
    st.tuples(st.just("run-context"),
              st.lists(st.tuples(st.sampled_from(["id", "agents", "date"]), st.sampled_from(SECTION_POOL)),
                       max_size=4),
              st.lists(st.tuples(text, json_value), max_size=3)),
    st.tuples(st.just("sync"), st.lists(message, max_size=2)),
    st.tuples(st.just("rewind"), st.none() | st.integers(0, 10 ** 6)),
    st.tuples(st.just("sync-rewind"), st.integers(0, 10 ** 6), st.lists(message, max_size=2)),
)


def _state(s):
    return (s.messages, s.message_ids, s.grants, pending_as_dicts(s),
            [s.run_context_section(sha(t)) for t in SECTION_POOL])


def _run(s, ops):
    calls = {}  # call id -> op id
    n_lines = 1
    for step in ops:
        kind = step[0]
        if kind == "message":
            s.append_message(step[1], extra=step[2])
        elif kind == "grants":
            s.append_grants(step[1])
        elif kind == "compaction":
            if not s.message_ids:
                continue
            target = s.message_ids[step[1] % len(s.message_ids)]
            s.append_compaction(step[2], target, 100, 10, fallback=step[3])
        elif kind == "elision":
            if not s.message_ids:
                continue
            s.append_elision([(s.message_ids[i % len(s.message_ids)], stub) for i, stub in step[1]])
        elif kind == "dispatch":
            call_id = f"call-{len(calls)}"
            calls[call_id] = s.append_tool_dispatched(call_id, step[1], step[2], idempotency=step[3], round=step[4])
        elif kind == "tool-result":
            if not calls:
                continue
            call_id = sorted(calls)[step[1] % len(calls)]
            s.append_message(Message("tool", step[2], tool_call_id=call_id))
        elif kind == "settle":
            pending = s.pending_tool_operations()
            if not pending:
                continue
            s.append_tool_settled(pending[step[1] % len(pending)].op_id, step[2], reason=step[3])
        elif kind == "run-context":
            s.append_run_context(step[1], step[2])
        elif kind == "sync":
            new = s.sync_messages(list(s.messages) + step[1])
            assert len(new) == len(step[1])
            n_lines += len(step[1]) - 1
        elif kind == "rewind":
            if step[1] is None:
                s.append_rewind(None)
            elif s.message_ids:
                s.append_rewind(s.message_ids[step[1] % len(s.message_ids)])
            else:
                continue
        elif kind == "sync-rewind":
            keep = step[1] % (len(s.messages) + 1)
            before = len(s.events)
            wanted = list(s.messages)[:keep] + step[2]
            new = s.sync_messages(wanted, allow_rewind=True)
            assert s.messages == wanted and len(new) <= len(wanted) - keep  # the common prefix may be longer
            n_lines += len(s.events) - before - 1
        n_lines += 1
        # after every append, live state == reference fold of what the session says it wrote
        ref = reference_replay(s.events)
        assert (s.messages, s.message_ids, s.grants, pending_as_dicts(s)) == (
            ref["messages"], ref["message_ids"], ref["grants"], ref["pending"])
    return n_lines


@SETTINGS
@given(ops=st.lists(op, max_size=25))
def test_live_state_equals_loaded_state(ops):
    d = tempfile.mkdtemp(prefix="las-prop-")
    try:
        path = os.path.join(d, "p.jsonl")
        with Session.create(path, {"prop": True}) as s:
            n_lines = _run(s, ops)
            live = _state(s)
            live_events = list(s.events)
        assert len(live_events) == n_lines
        with Session.load(path) as s:
            assert s.warnings == []
            assert _state(s) == live
            assert s.events == live_events
            ref = reference_replay(s.events)
            assert [s.run_context_section(sha(t)) for t in SECTION_POOL] == [
                ref["sections"].get(sha(t)) for t in SECTION_POOL]
        p = Session.peek(path)
        assert p["warnings"] == [] and "error" not in p
        assert list(p["envelopes"]) == live_events
        assert p["end"] == p["size"] == os.path.getsize(path) and p["pending"] == 0
        assert list(p["messages"]) == [Message.from_dict(e.payload) for e in live_events if e.type == "message"]
        with open(path, "rb") as f:
            assert f.read().count(b"\n") == n_lines
    finally:
        shutil.rmtree(d)


@SETTINGS
@given(ops=st.lists(op, max_size=15), cut=st.integers(1, 400))
def test_any_torn_tail_repairs_to_the_prefix(ops, cut):
    d = tempfile.mkdtemp(prefix="las-prop-")
    try:
        path = os.path.join(d, "p.jsonl")
        with Session.create(path, {}) as s:
            _run(s, ops)
        with open(path, "rb") as f:
            data = f.read()
        body = data[:-1]
        start = body.rfind(b"\n") + 1
        if start == 0:
            return  # only the meta line: tearing it is NotATranscript, tested elsewhere
        last = data[start:]
        keep = start + (cut % len(last))
        if keep == start:
            keep += 1
        torn = data[:keep]
        with open(path, "wb") as f:
            f.write(torn)
        good = data[:start]
        tail = torn[start:]
        with Session.load(path) as s:
            loaded = (s.messages, s.message_ids)
            w = list(s.warnings)
        with open(path, "rb") as f:
            after = f.read()
        if tail.rstrip(b" \t\r\n") and after != torn + b"\n":
            assert after == good
            assert len(w) == 1
        # either way the result loads cleanly again and is stable
        with Session.load(path) as s:
            assert s.warnings == []
            assert (s.messages, s.message_ids) == loaded
    finally:
        shutil.rmtree(d)


# --------------------------------------------------------------------------- damaged files

from llm_agent_session import _backend  # noqa: E402

from tests.support.helpers import (  # noqa: E402
    compaction_line,
    dispatched_line,
    elision_line,
    env_line,
    meta_line,
    msg_line,
    settled_line,
)

LINE_POOL = [
    msg_line("m1", content="héllo"),
    msg_line("m2", "assistant", "日本語\u2028x", sticky=True),
    msg_line("m3", "tool", "r", tool_call_id="c1"),
    compaction_line("c1", "m2"),
    compaction_line("c2", "m1"),
    elision_line("e1", [("m1", "stub")]),
    dispatched_line("o1", "c1"),
    settled_line("s1", "o1"),
    env_line("g1", "grants", {"grants": {"a": [1, 2.5, None]}}),
    env_line("r1", "run-context", {"sections": [{"name": "n", "digest": "sha256:00", "text": "t"}], "facts": []}),
    env_line("u1", "future-type", {"deep": [[[[{"x": 1}]]]]}),
    b"\n",
    b"  \r\n",
    b"\xff\xfe\n",
    b'{"id":"x"\n',
    b"[]\n",
]

damage = st.one_of(
    st.tuples(st.just("truncate"), st.integers(0, 10 ** 6)),
    st.tuples(st.just("flip"), st.integers(0, 10 ** 6), st.integers(0, 255)),
    st.tuples(st.just("insert"), st.integers(0, 10 ** 6),
              st.sampled_from([b"\n", b"\x00", b"\r", b"\xe6\x97", b'"', b"{", b"]", b"\\", b"\xed\xa0\x80"])),
    st.tuples(st.just("delete"), st.integers(0, 10 ** 6), st.integers(1, 20)),
)


def _damage(data: bytes, steps) -> bytes:
    for step in steps:
        if not data:
            break
        i = step[1] % (len(data) + 1)
        if step[0] == "truncate":
            data = data[:i]
        elif step[0] == "flip":
            i = min(i, len(data) - 1)
            data = data[:i] + bytes([step[2]]) + data[i + 1:]
        elif step[0] == "insert":
            data = data[:i] + step[2] + data[i:]
        else:
            data = data[:i] + data[i + step[2]:]
    return data


def _outcome(path):
    try:
        s = Session.load(path)
    except TranscriptError as e:
        out = ("error", type(e).__name__, getattr(e, "line", None), getattr(e, "offset", None),
               getattr(e, "reason", None))
    else:
        with s:
            out = ("ok", [(e.id, e.type, e.ts, e.v, e.payload) for e in s.events], s.messages, s.message_ids,
                   s.grants, s.warnings, s.pending_tool_operations())
    with open(path, "rb") as f:
        after = f.read()
    p = Session.peek(path)
    peeked = (p.get("error"), p["meta"], [(e.id, e.type, e.payload) for e in p["envelopes"]], list(p["messages"]),
              p["warnings"], p["end"], p["pending"], p["size"])
    return out, after, peeked


@settings(max_examples=int(os.environ.get("LAS_FUZZ_EXAMPLES", "100")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(picks=st.lists(st.sampled_from(LINE_POOL), max_size=10), steps=st.lists(damage, max_size=3),
       keep_meta=st.booleans())
def test_damaged_files_only_library_errors_and_backends_agree(picks, steps, keep_meta):
    """Whatever the bytes, load raises a TranscriptError or loads (never a raw ValueError,
    UnicodeDecodeError, RecursionError or a Rust panic), peek never raises, and every
    available backend gives the same answer and leaves the same bytes (the README's Errors; docs/ARCHITECTURE.md's two cores)."""
    body = _damage(b"".join(picks), steps)
    data = (meta_line() + body) if keep_meta else _damage(meta_line() + body, steps)
    results = {}
    current = __import__("llm_agent_session").backend()
    d = tempfile.mkdtemp(prefix="las-fuzz-")
    try:
        for b in _backend.available():
            path = os.path.join(d, b)
            os.mkdir(path)
            path = os.path.join(path, "t.jsonl")
            with open(path, "wb") as f:
                f.write(data)
            _backend.use(b)
            r = _outcome(path)
            results[b] = repr(r).replace(os.path.dirname(path), "<dir>")
    finally:
        _backend.use(current)
        shutil.rmtree(d)
    assert len(set(results.values())) == 1, results


@SETTINGS
@given(ops=st.lists(op, min_size=1, max_size=20), cut=st.integers(0, 10 ** 9))
def test_any_truncation_loads_the_state_the_writer_had_then(ops, cut):
    """Cut a valid transcript at any byte after its meta line (what a crash or a full disk
    leaves): it loads, and gives exactly the state the writer held after the last whole line."""
    d = tempfile.mkdtemp(prefix="las-prop-")
    try:
        path = os.path.join(d, "p.jsonl")
        with Session.create(path, {}) as s:
            _run(s, ops)
            events = list(s.events)
        with open(path, "rb") as f:
            data = f.read()
        ends = [i + 1 for i, b in enumerate(data) if b == 0x0A]
        assert len(ends) == len(events)
        cut = ends[0] + cut % (len(data) - ends[0] + 1)
        with open(path, "wb") as f:
            f.write(data[:cut])
        whole = sum(1 for e in ends if e <= cut)
        if whole < len(ends) and cut == ends[whole] - 1:
            whole += 1  # a whole last line without its newline is kept
        ref = reference_replay(events[:whole])
        with Session.load(path) as s:
            assert [e.id for e in s.events] == [e.id for e in events[:whole]]
            assert (s.messages, s.message_ids, s.grants, pending_as_dicts(s)) == (
                ref["messages"], ref["message_ids"], ref["grants"], ref["pending"])
            assert [s.run_context_section(sha(t)) for t in SECTION_POOL] == [
                ref["sections"].get(sha(t)) for t in SECTION_POOL]
        with open(path, "rb") as f:
            assert f.read() == b"".join(data[(ends[i - 1] if i else 0):ends[i]] for i in range(whole))
    finally:
        shutil.rmtree(d)
