"""The native replay and scan against the pure-Python reference (docs/ARCHITECTURE.md's two cores).

`Session.load`, `Session.peek`, `Session.salvage` and `Session.fork` run on both
backends over the same bytes and must give equal results (messages, ids, grants,
events, pending operations, warnings, run-context sections, peek fields and survey,
salvage reports and output bytes) or the same exception class with the same text and
line; and peek's survey must say what load gives wherever load reads what peek reads.
Inputs: hypothesis-generated transcripts and damaged variants of them (cut at random
offsets, inside multi-byte characters, bytes flipped, garbage or duplicate lines
inserted, ids broken), and one representative transcript cut at every byte offset.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
from typing import Any, Callable, Dict, List, Tuple

import pytest

pytest.importorskip("llm_agent_session._native")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from llm_agent_session import Session, _backend  # noqa: E402
from llm_agent_session.canonical import str_to_int  # noqa: E402


@pytest.fixture(autouse=True)
def backend_name() -> str:
    """These tests switch between both backends themselves: one run, not one per backend."""
    return "both"


SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
TS = "2026-08-09T13:10:08.542283Z"


# --- building transcripts ------------------------------------------------------------


def line(id_: Any, type_: Any, payload: Any, **over: Any) -> bytes:
    env = {"id": id_, "payload": payload, "ts": TS, "type": type_, "v": 1}
    env.update(over)
    text = json.dumps(env, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029").encode() + b"\n"


JSON_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
    st.sampled_from(["caf\u00e9", "\U0001f600 x", "\u2028", 'q"\\/\t\n\x01', "\u65e5\u672c"]),
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)


@st.composite
def transcripts(draw: Any) -> bytes:
    """A transcript that replays (mostly): every type, references to live ids."""
    out = [line("meta-0", "session-meta", draw(st.dictionaries(st.text(max_size=5), JSON_VALUES, max_size=3)))]
    live: List[str] = []
    pending: List[Tuple[str, str]] = []
    digests: List[str] = []
    for n in range(draw(st.integers(min_value=0, max_value=25))):
        id_ = f"e{n}-" + draw(st.sampled_from(["a", "\u00e9", "\U0001f600", "x" * 90]))
        kind = draw(
            st.sampled_from(
                ["message", "message", "message", "compaction", "elision", "grants",
                 "dispatched", "settled", "run-context", "rewind", "other"]
            )
        )
        if kind == "message":
            payload: Dict[str, Any] = {"role": draw(st.sampled_from(["user", "assistant", "tool", "system"]))}
            for key, strat in [
                ("content", st.one_of(st.none(), st.text(max_size=20), st.lists(JSON_VALUES, max_size=2))),
                ("tool_calls", st.lists(JSON_VALUES, max_size=2)),
                ("tool_call_id", st.sampled_from([c for _, c in pending] + ["c-x"])),
                ("name", st.text(max_size=5)),
                ("sticky", st.sampled_from([True, False, None, 1])),
                ("sysprompt", st.sampled_from([True, False])),
                ("depth", st.sampled_from([0, 3, None])),
                ("finish-reason", st.text(max_size=5)),
            ]:
                if draw(st.booleans()):
                    payload[key] = draw(strat)
            out.append(line(id_, "message", payload))
            live.append(id_)
        elif kind == "compaction" and live:
            through = draw(st.sampled_from(live))
            out.append(line(id_, "compaction", {"summary": draw(st.text(max_size=10)),
                                                "replaces-through-id": through, "tokens-before": 9,
                                                "tokens-after": 1, "fallback": False}))
            live = live[live.index(through) + 1 :] + [id_]  # approximate: enough for references
        elif kind == "elision" and live:
            items = [{"id": draw(st.sampled_from(live)), "stub": draw(JSON_VALUES)} for _ in range(draw(st.integers(1, 3)))]
            out.append(line(id_, "elision", {"items": items}))
        elif kind == "rewind":
            # Mostly a live id; sometimes null, a dead id, or a malformed to-id (load refuses).
            to = draw(st.sampled_from(live + [None, "gone", 7] if live else [None, "gone"]))
            payload = {"to-id": to} if draw(st.integers(0, 9)) else {}
            out.append(line(id_, "rewind", payload))
            if to is None:
                live = []
            elif to in live:
                live = live[: live.index(to) + 1]
        elif kind == "grants":
            out.append(line(id_, "grants", {"grants": draw(st.dictionaries(st.text(max_size=4), JSON_VALUES, max_size=3))}))
        elif kind == "dispatched":
            call = f"c-{n}"
            out.append(line(id_, "tool-dispatched", {"call-id": call, "tool": "t", "arguments": draw(JSON_VALUES),
                                                     "arguments-digest": "sha256:0", "idempotency": None,
                                                     "run-id": draw(st.sampled_from([None, "r1"])), "round": 2}))
            pending.append((id_, call))
        elif kind == "settled" and pending:
            op, _ = pending.pop(draw(st.integers(0, len(pending) - 1)))
            payload = {"op-id": op, "outcome": draw(st.sampled_from(["completed", "failed", "outcome-unknown"]))}
            if draw(st.booleans()):
                payload["artifact"] = {"file": draw(st.sampled_from(["a.txt", "../x", ".", "\u00e9" * 130, "ok"]))}
            out.append(line(id_, "tool-settled", payload))
        elif kind == "run-context":
            sections = []
            for _ in range(draw(st.integers(0, 3))):
                if digests and draw(st.booleans()):
                    sections.append({"name": "n", "digest": draw(st.sampled_from(digests)), "rendered-in": "x"})
                else:
                    text = draw(st.text(max_size=8))
                    d = "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
                    digests.append(d)
                    sections.append({"name": "n", "digest": d, "text": text})
            out.append(line(id_, "run-context", {"sections": sections, "facts": []}))
        else:
            out.append(line(id_, draw(st.sampled_from(["future-type", "message-v2"])), {"x": draw(JSON_VALUES)}))
        if draw(st.integers(0, 9)) == 0:
            out.append(draw(st.sampled_from([b"\n", b"  \t\r\n", b"\r\n"])))
    return b"".join(out)


def damage(data: bytes, rng: random.Random) -> bytes:
    """One kind of damage a crash, an editor or a bad merge does."""
    how = rng.randrange(7)
    lines = data.splitlines(keepends=True)
    if how == 0 and data:  # cut anywhere (mid-line, mid-character)
        return data[: rng.randrange(len(data) + 1)]
    if how == 1 and data:  # flip a byte
        i = rng.randrange(len(data))
        return data[:i] + bytes([data[i] ^ (1 << rng.randrange(8))]) + data[i + 1 :]
    if how == 2:  # garbage line
        i = rng.randrange(len(lines) + 1)
        junk = rng.choice([b"not json\n", b"{}\n", b"[1,2]\n", b"\xff\xfe\n", b'{"id":"q","v":2}\n', b"\"\\ud800\"\n"])
        return b"".join(lines[:i] + [junk] + lines[i:])
    if how == 3 and lines:  # duplicate a line
        i = rng.randrange(len(lines))
        return b"".join(lines[: i + 1] + [lines[i]] + lines[i + 1 :])
    if how == 4 and len(lines) > 1:  # drop a line (breaks references)
        i = rng.randrange(1, len(lines))
        return b"".join(lines[:i] + lines[i + 1 :])
    if how == 5 and data:  # break an id
        return data.replace(b'"id":"e', b'"id":"E', rng.randrange(1, 4))
    if how == 6 and lines:  # swap two lines
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
        return b"".join(lines)
    return data + b'{"id":"torn'


# --- comparing outcomes ----------------------------------------------------------------


def on_backend(name: str, fn: Callable[[], Any]) -> Any:
    previous = _backend.core.name
    _backend.use(name)
    try:
        return fn()
    finally:
        _backend.use(previous)


def error_outcome(e: BaseException) -> Tuple[Any, ...]:
    return ("error", type(e).__name__, str(e), getattr(e, "line", None), getattr(e, "reason", None))


def extra_outcome(s: Session, id_: str) -> Any:
    try:
        return s.message_extra(id_)
    except KeyError:
        return "KeyError"


def load_outcome(path: Any, data: bytes) -> Tuple[Any, ...]:
    path.write_bytes(data)
    try:
        s = Session.load(path)
    except Exception as e:  # noqa: BLE001 - class and text are what we compare
        return error_outcome(e) + (path.read_bytes(),)
    with s:
        state = s._state
        digests = sorted(state.section_lines)
        read = (
            "ok",
            s.meta,
            s.messages,
            s.message_ids,
            s.grants,
            list(s.events),
            len(s.events),
            s.events[-1] if len(s.events) else None,
            s.pending_tool_operations(),
            s.warnings,
            sorted(state.settled),
            dict(state.sections),
            dict(state.section_lines),
            {k: list(v) for k, v in state.waiting_by_call.items()},
            path.read_bytes(),
            [s.run_context_section(d) for d in digests + ["sha256:none"]],
            [extra_outcome(s, e.id) for e in s.events],  # the native core keeps them apart
        )
        # An append after the replay dedupes against what the replay read.
        known = list(dict.fromkeys(state.sections.get(d) for d in digests))[:2]
        s.append_run_context([("k", t) for t in known] + [("new", "fresh text")])
        return read + (s.events[-1].payload, s.run_context_section(digests[0]) if digests else None)


def assert_same_load(tmp_path: Any, data: bytes) -> None:
    path = tmp_path / "t.jsonl"
    want = on_backend("pure", lambda: load_outcome(path, data))
    got = on_backend("native", lambda: load_outcome(path, data))
    assert got == want, data[-300:]


def peek_outcome(path: Any, **kw: Any) -> Any:
    try:
        r = Session.peek(path, **kw)
    except Exception as e:  # noqa: BLE001
        return error_outcome(e)
    r = dict(r)
    r["envelopes"] = list(r["envelopes"])
    r["messages"] = list(r["messages"])
    return r


def assert_same_peek(tmp_path: Any, data: bytes, offsets: List[int] = ()) -> None:
    path = tmp_path / "p.jsonl"
    path.write_bytes(data)
    for kw in [{}, {"survey": True}] + [{"offset": o} for o in offsets]:
        want = on_backend("pure", lambda: peek_outcome(path, **kw))
        got = on_backend("native", lambda: peek_outcome(path, **kw))
        assert got == want, (kw, data[-300:])


def assert_survey_matches_load(tmp_path: Any, data: bytes) -> None:
    """Where load reads every line as peek does, the survey says what load gives."""
    path = tmp_path / "v.jsonl"
    path.write_bytes(data)
    view = Session.peek(path, survey=True)
    if "error" in view or view["warnings"] or view["pending"]:
        return
    try:
        s = Session.load(path)
    except Exception:  # noqa: BLE001 - the survey is lenient where load refuses
        return
    with s:
        survey = view["survey"]
        assert survey["live_messages"] == len(s.messages), data[-300:]
        assert survey["pending_tool_operations"] == s.pending_tool_operations(), data[-300:]
        assert sum(survey["counts"].values()) == len(s.events)


def salvage_outcome(tmp_path: Any, data: bytes) -> Any:
    src = tmp_path / "s.jsonl"
    out = tmp_path / "s-out.jsonl"
    src.write_bytes(data)
    if out.exists():
        out.unlink()
    try:
        report = Session.salvage(src, out)
    except Exception as e:  # noqa: BLE001
        return error_outcome(e)
    return report, out.read_bytes()


def fork_outcome(tmp_path: Any, data: bytes, through: str) -> Any:
    src = tmp_path / "f.jsonl"
    out = tmp_path / "f-out.jsonl"
    src.write_bytes(data)
    if out.exists():
        out.unlink()
    try:
        s = Session.fork(src, out, through, meta={"m": 1})
    except Exception as e:  # noqa: BLE001
        return error_outcome(e)
    with s:
        return s.messages, s.message_ids, s.grants, [e.payload for e in s.events][1:], s.pending_tool_operations()


def assert_same_everything(tmp_path: Any, data: bytes) -> None:
    assert_same_load(tmp_path, data)
    on_backend("native", lambda: assert_survey_matches_load(tmp_path, data))
    nl = [i + 1 for i, b in enumerate(data) if b == 0x0A]
    assert_same_peek(tmp_path, data, nl[:1] + nl[len(nl) // 2 : len(nl) // 2 + 1] + [len(data) + 5])
    assert on_backend("native", lambda: salvage_outcome(tmp_path, data)) == on_backend(
        "pure", lambda: salvage_outcome(tmp_path, data)
    )
    for through in ["e3-a", "e5-\u00e9", "meta-0", "nope"]:
        assert on_backend("native", lambda: fork_outcome(tmp_path, data, through)) == on_backend(
            "pure", lambda: fork_outcome(tmp_path, data, through)
        )


# --- the tests ----------------------------------------------------------------------------


@SETTINGS
@given(data=transcripts())
def test_generated_transcripts_agree(tmp_path_factory: Any, data: bytes) -> None:
    assert_same_everything(tmp_path_factory.mktemp("g"), data)


@SETTINGS
@given(data=transcripts(), seed=st.integers(0, 2**32 - 1), rounds=st.integers(1, 3))
def test_damaged_transcripts_agree(tmp_path_factory: Any, data: bytes, seed: int, rounds: int) -> None:
    rng = random.Random(seed)
    for _ in range(rounds):
        data = damage(data, rng)
    assert_same_everything(tmp_path_factory.mktemp("d"), data)


def representative() -> bytes:
    """Every type, multi-byte characters, escapes, a compaction, an elision, a pending op, a rewind."""
    return b"".join(
        [
            line("m0", "session-meta", {"agent": "t\u00e9st", "n": 10**20}),
            line("a1", "message", {"role": "system", "content": "be \U0001f600", "sysprompt": True}),
            line("a2", "message", {"role": "user", "content": "h\u00e9llo \u2028 \"q\"\\", "finish-reason": "x"}),
            b"  \r\n",
            line("d1", "tool-dispatched", {"call-id": "c1", "tool": "grep", "arguments": {"p": [1, 2.5, None]},
                                           "arguments-digest": "sha256:ab", "idempotency": None, "run-id": "r",
                                           "round": 1}),
            line("a3", "message", {"role": "tool", "tool_call_id": "c1", "content": "\u65e5\u672c"}),
            line("g1", "grants", {"grants": {"fs": ["read"], "big": -(10**25)}}),
            line("c1", "compaction", {"summary": "s\u00e9", "replaces-through-id": "a2", "tokens-before": 5,
                                      "tokens-after": 1, "fallback": False}),
            line("r1", "run-context", {"sections": [{"name": "n", "digest": "sha256:1", "text": "t\u00e9"}],
                                       "facts": [["k", 1.5e-7]]}),
            line("l1", "elision", {"items": [{"id": "a3", "stub": "[elided \u00e9]"}]}),
            line("x1", "future-type", {"anything": [True, False]}),
            line("d2", "tool-dispatched", {"call-id": "c2", "tool": "t", "arguments": "x",
                                           "arguments-digest": "sha256:cd", "idempotency": "k", "run-id": None,
                                           "round": None}),
            line("s1", "tool-settled", {"op-id": "d1", "outcome": "completed", "duration": 0.25}),
            line("a4", "message", {"role": "assistant", "content": None, "tool_calls": [{"id": "c3"}]}),
            line("a5", "message", {"role": "user", "content": "undo me"}),
            line("w1", "rewind", {"to-id": "a4"}),
            line("a6", "message", {"role": "user", "content": "instead"}),
        ]
    )


def test_every_truncation_of_a_representative_transcript_agrees(tmp_path: Any) -> None:
    data = representative()
    assert len(data) > 1500
    for cut in range(len(data) + 1):
        assert_same_load(tmp_path, data[:cut])
        assert_same_peek(tmp_path, data[:cut])


def test_a_transcript_big_enough_for_two_threads_agrees(tmp_path: Any) -> None:
    """Past the native core's split size, with failures in either half."""
    body = [line("m0", "session-meta", {})]
    for i in range(20000):
        body.append(line(f"id-{i}", "message", {"role": "user", "content": "x" * 500 + str(i)}))
        if i % 1000 == 999:
            body.append(line(f"c-{i}", "compaction", {"summary": f"s{i}", "replaces-through-id": f"id-{i}"}))
        if i % 1000 == 500:
            body.append(line(f"w-{i}", "rewind", {"to-id": f"id-{i - 3}"}))
    data = b"".join(body)
    assert len(data) > 9 << 20
    assert_same_load(tmp_path, data)
    assert_same_peek(tmp_path, data)  # with the survey, its facts from both halves
    on_backend("native", lambda: assert_survey_matches_load(tmp_path, data))
    lines = data.splitlines(keepends=True)
    # Around the split (40% of the bytes), in the second thread's first batch of records
    # (8,192), in its second (the last lines), at the end.
    split = len(lines) * 2 // 5
    for at in (5, split - 1, split + 2, split + 700, len(lines) // 2 + 3, len(lines) - 2):
        broken = b"".join(lines[:at] + [lines[1]] + lines[at:])  # a duplicate id
        assert_same_load(tmp_path, broken)
        broken = b"".join(lines[:at] + [b"{oops}\n"] + lines[at:])
        assert_same_load(tmp_path, broken)


def test_lazy_events_survive_close_without_keeping_the_lock(tmp_path: Any) -> None:
    """The native events read through a descriptor of their own, which holds no lock."""
    path = tmp_path / "lock.jsonl"
    path.write_bytes(representative())

    def run() -> Any:
        s = Session.load(path)
        events = s.events
        s.close()
        again = Session.load(path)  # the lock was released
        again.close()
        return list(events), events[-1], events[0], len(events)

    assert on_backend("native", run) == on_backend("pure", run)


def test_numbers_and_strings_build_like_json_loads(tmp_path: Any) -> None:
    """Ints of any size, floats at the edges, escapes, surrogate pairs, duplicate keys."""
    digits = "7" * 5000
    raw_payload = (
        '{"role":"user","content":[%s,-%s,12345678901234567890,-0,0.1,-0.0,1e-320,'
        '1.7976931348623157e308,5e-324,"\\u00e9\\ud83d\\ude00\\n\\t\\"\\\\\\/\\u2028"],'
        '"d":{"k":1,"x":2,"k":3},"d":{"k":4,"k":"\\u0041"}}' % (digits, digits)
    )
    data = (
        line("m0", "session-meta", {})
        + b'{"id":"a1","payload":' + raw_payload.encode() + b',"ts":"t","type":"message","v":1}\n'
        + b'{"id":"a2","payload":{"role":"x","z":"\\ud800","z":1},"ts":"t","type":"message","v":1}\n'
    )
    assert_same_load(tmp_path, data)
    assert_same_peek(tmp_path, data)

    def payloads() -> Any:
        with Session.load(tmp_path / "t.jsonl") as s:
            return [e.payload for e in s.events]

    (tmp_path / "t.jsonl").write_bytes(data)
    got = on_backend("native", payloads)
    assert got[0] == {}
    assert got[1]["content"][0] == str_to_int(digits) and list(got[1]["d"]) == ["k"] and got[1]["d"]["k"] == "A"
    assert got[2] == {"role": "x", "z": 1}


def test_peek_sequences_behave_like_lists(tmp_path: Any) -> None:
    path = tmp_path / "p.jsonl"
    path.write_bytes(representative())

    def view() -> Any:
        r = Session.peek(path)
        env, msgs = r["envelopes"], r["messages"]
        return (
            len(env), env[0], env[-1], env[2:5], env[::-3], list(env) == env, env == list(env),
            len(msgs), msgs[-1], msgs[1:], [m.role for m in msgs],
        )

    assert on_backend("native", view) == on_backend("pure", view)


def test_event_payloads_are_built_on_first_access(tmp_path: Any) -> None:
    """Native events carry their header at once and build the payload when it is first
    read; equality, repr, copies, pickles and dataclass helpers see the built payload."""
    import copy
    import dataclasses
    import pickle

    path = tmp_path / "lazy.jsonl"
    path.write_bytes(representative())

    def views() -> Any:
        out = []
        for events in (list(Session.peek(path)["envelopes"]), Session.load(path).events):
            for e in events:
                out.append((e.id, e.type, e.ts, e.v, repr(e), pickle.loads(pickle.dumps(e)), copy.copy(e),
                            copy.deepcopy(e), dataclasses.asdict(e), dataclasses.replace(e, ts="x"), e))
        for m in Session.peek(path)["messages"]:
            out.append((m.role, m.is_sticky, m.to_dict(), repr(m), pickle.loads(pickle.dumps(m)), copy.copy(m),
                        copy.deepcopy(m), dataclasses.asdict(m), m.with_content("x"), m))
        return out

    def deferred() -> Tuple[bool, ...]:
        view = Session.peek(path)
        e, m = view["envelopes"][1], view["messages"][0]
        before = "payload" not in vars(e) and "content" not in vars(m)
        e.payload, m.content
        after = "payload" in vars(e) and "content" in vars(m)
        return before, after, not any(k.startswith("_deferred") for k in {**vars(e), **vars(m)})

    assert on_backend("native", views) == on_backend("pure", views)
    assert on_backend("native", deferred) == (True, True, True)


def test_header_of_every_shape_of_envelope(tmp_path: Any) -> None:
    """The header skim takes only the canonical shape; every other shape (key order,
    spacing, escaped keys and ids, duplicates, extra keys) is parsed in full, and both
    backends agree on what each line says."""
    shapes = [
        b'{"v":1,"type":"message","ts":"t","payload":{"role":"user","content":"a"},"id":"k1"}',
        b' { "id" : "k2" , "payload" : { "role" : "user" } , "ts" : "t" , "type" : "message" , "v" : 1 } \r',
        b'{"id":"k\\u0033","payload":{"role":"user","content":"}{\\"]["},"ts":"t\\n","type":"mess\\u0061ge","v":1}',
        b'{"i\\u0064":"k4","payload":{"role":"user"},"ts":"t","type":"message","v":1}',
        b'{"id":"dup","id":"k5","payload":{"role":"user"},"ts":"t","type":"message","v":1}',
        b'{"id":"k6","payload":{"role":"a"},"payload":{"role":"user"},"ts":"t","type":"message","v":1}',
        b'{"id":"k7","payload":{"role":"user"},"ts":"t","type":"message","v":1,"extra":[1,{"v":2}]}',
        b'{"id":"k8","payload":{"role":"user","content":"\xc3\xa9\\ud83d\\ude00"},"ts":"t","type":"message","v":1}',
        b'{"id":"k9","payload":{"role":"user"},"ts":"t","type":"message","v":1.0}',
        b'{"id":"k10","payload":{"role":"user"},"ts":"t","type":"message","v":10}',
        b'{"id":"k11","payload":[],"ts":"t","type":"message","v":1}',
    ]
    data = line("m0", "session-meta", {}) + b"\n".join(shapes) + b"\n"
    assert_same_peek(tmp_path, data)
    for shape in shapes:  # each alone after the meta: load and peek agree, line by line
        assert_same_load(tmp_path, line("m0", "session-meta", {}) + shape + b"\n")
        assert_same_peek(tmp_path, line("m0", "session-meta", {}) + shape + b"\n")


def test_a_payload_changed_under_a_peek_is_an_error_not_wrong_data(tmp_path: Any) -> None:
    """A file rewritten in place or cut short after a peek (no writer of this library does
    that): the payload or content built later is refused with ValueError, never a panic."""
    path = tmp_path / "changed.jsonl"
    data = representative()
    path.write_bytes(data)

    def run() -> Any:
        events = Session.peek(path)["envelopes"]
        first = events[1]
        with open(path, "r+b") as f:  # same length, the second line's payload broken
            start = data.index(b"\n") + 1
            f.seek(start + data[start:].index(b'"payload":{') + len(b'"payload":'))
            f.write(b"[")
        with pytest.raises(ValueError, match="changed under a lazy read"):
            first.payload
        return True

    assert on_backend("native", run)
    path.write_bytes(data)

    def run_message() -> Any:
        message = Session.peek(path)["messages"][-1]
        with open(path, "r+b") as f:
            f.truncate(len(data) // 2)
        with pytest.raises(ValueError, match="shorter than when it was read"):
            message.content
        return True

    assert on_backend("native", run_message)


def test_iterating_reads_windows_across_long_lines(tmp_path: Any) -> None:
    """Iteration reads 256 KiB windows: lines that straddle a window's end, a line longer
    than a window, and the messages' sparser lines all come out as the pure core's."""
    body = [line("m0", "session-meta", {})]
    for i in range(3000):
        size = 300_000 if i == 1500 else 40 + (i * 37) % 400
        body.append(line(f"u{i}", "message", {"role": "user", "content": "é" * (size // 2)}))
        if i % 7 == 0:
            body.append(line(f"g{i}", "grants", {"grants": {"n": i}}))
    data = b"".join(body)
    assert_same_peek(tmp_path, data, offsets=[len(body[0]), len(b"".join(body[: len(body) // 2]))])
    assert_same_load(tmp_path, data)


def test_iterating_a_two_thread_peek_gives_the_pure_events(tmp_path: Any) -> None:
    """Iterating a native peek builds each Event from the header its scan kept (no read of
    the file): past the split size, with more distinct types than the scan keeps by index,
    ids too long to keep, ids and timestamps that pack and that nearly do, escaped and
    non-ASCII headers, other key orders and bad lines in both halves, every Event (id,
    type, ts, v, payload) is the pure core's."""
    body = [line("m0", "session-meta", {})]
    stamps = [TS, "2026-08-09T13:10:08.54228Z", "2026-08-09T13:10:08+00:00", "", "2026-08-09 13:10", "t\u00e9"]
    for i in range(14000):
        type_ = f"custom-{i % 90}" if i % 5 == 0 else "message"
        uuid = "%08x-%04x-7%03x-8%03x-%012x" % (i * 2654435761 % 2**32, i % 2**16, i % 4096, i % 4096, i * 40503)
        id_ = [uuid, uuid.upper(), f"id-{i}-\u00e9\U0001f600", uuid[:-1]][i % 4]
        payload = {"role": "user", "content": "y" * 600 + str(i)}
        body.append(line(id_, type_, payload, ts=stamps[i % len(stamps)]))
        if i % 997 == 0:
            body.append(line("L" * 70_000 + str(i), "message", {"role": "user", "content": str(i)}))
            body.append(line(f"ts-{i}", "message", {"role": "user"}, ts="T" * 66_000))
            body.append(line(f"ty-{i}", "k" * 65_600, {}))
            body.append(b'{"v":1,"type":"mess\\u0061ge","ts":"t\\n","payload":{"role":"user"},"id":"e\\u0033-%d"}\n' % i)
            body.append(b"{not json\n\n")
    data = b"".join(body)
    assert len(data) > 9 << 20
    path = tmp_path / "two.jsonl"
    path.write_bytes(data)
    half = len(b"".join(body[: len(body) // 2]))

    def events(**kw: Any) -> Any:
        return [(e.id, e.type, e.ts, e.v, e.payload) for e in Session.peek(path, **kw)["envelopes"]]

    for kw in ({}, {"survey": True}, {"offset": half}):
        want = on_backend("pure", lambda: events(**kw))
        assert on_backend("native", lambda: events(**kw)) == want
        assert len(want) > (7000 if kw else 14000)


def test_iterating_after_the_file_changed_refuses_the_payload(tmp_path: Any) -> None:
    """The header comes from the scan; the payload is still read and validated on first
    access, so a line broken after the peek gives ValueError, never wrong data."""
    path = tmp_path / "changed.jsonl"
    data = representative()
    path.write_bytes(data)

    def run() -> Any:
        envelopes = Session.peek(path)["envelopes"]
        ids = [e.id for e in Session.peek(path)["envelopes"]]
        with open(path, "r+b") as f:  # same length, the second line's payload broken
            start = data.index(b"\n") + 1
            f.seek(start + data[start:].index(b'"payload":{') + len(b'"payload":'))
            f.write(b"[")
        events = list(envelopes)
        assert [e.id for e in events] == ids
        with pytest.raises(ValueError, match="changed under a lazy read"):
            events[1].payload
        return events[0].payload == json.loads(data.splitlines()[0])["payload"]

    assert on_backend("native", run)


def test_a_scans_spans_behave_like_the_pure_list(tmp_path: Any) -> None:
    """The native scan's spans are made on access (a LazyList over `_native.Spans`): length,
    indexing from either end, slices, iteration and equality are the pure core's list's."""
    path = tmp_path / "spans.jsonl"
    path.write_bytes(representative())

    def view() -> Any:
        fd = os.open(path, os.O_RDONLY)
        try:
            spans = _backend.core.scan(fd, 0, os.fstat(fd).st_size, False, True).spans
        finally:
            os.close(fd)
        with pytest.raises(IndexError):
            spans[len(spans)]
        return len(spans), spans[0], spans[-1], spans[1:4], spans[::-2], list(spans), spans == list(spans)

    assert on_backend("native", view) == on_backend("pure", view)
