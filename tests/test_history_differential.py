"""``History.read`` on the native core against the pure reference.

The native core folds the file in Rust (``rust/replay/history.rs``) and builds the
structures from its notes (``rust/py/history.rs``; the big mappings entry by entry, when
asked for); the pure one feeds every envelope peek lists to ``HistoryFold.feed``. Both
must leave a ``History`` equal in every field, in order (removals, elisions, operations
with their payloads, answers, calls, grants, problems, the call ids still waiting, the
``FoldState``, each id's position), with payloads kept or not, and ``feed`` must go on
from either alike. Inputs: generated transcripts, damaged ones (the fold refuses lines),
hostile lines, a transcript big enough for two threads, and the native build without a
descriptor of its own (operations built at once).
"""

from __future__ import annotations

import os
import random
from typing import Any, List, Tuple

import pytest

pytest.importorskip("llm_agent_session._native")

from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from tests.test_native_replay_differential import (  # noqa: E402
    SETTINGS,
    damage,
    error_outcome,
    line,
    on_backend,
    representative,
    transcripts,
)

from llm_agent_session import Session  # noqa: E402
from llm_agent_session.history import History  # noqa: E402


@pytest.fixture(autouse=True)
def backend_name() -> str:
    """These tests switch between both backends themselves: one run, not one per backend."""
    return "both"


def history_view(h: History, ids: List[str]) -> Tuple[Any, ...]:
    """Everything a History holds, in order; `ids`: the envelope ids to ask `index_of` about."""
    state = h.state
    return (
        h.keep_payloads,
        h.count,
        h.meta,
        h.meta is state.meta,
        list(h.removed.items()),
        list(h.elided.items()),
        list(h.operations.items()),
        list(h.answers.items()),
        list(h.calls.items()),
        list(h.grants_by_id.items()),
        h.grants_id,
        h.grants_id is None or state.grants is h.grants_by_id[h.grants_id],
        h.problems,
        list(h._unanswered.items()),
        [h.index_of(i) for i in ids],
        h.live_ids,
        h.pending(),
        state.messages,
        state.grants,
        sorted(state.settled),
        dict(state.sections),
        dict(state.section_lines),
        [(k, list(v)) for k, v in state.waiting_by_call.items()],
    )


def ids_of(path: Any) -> List[str]:
    return [e.id for e in Session.peek(path)["envelopes"]] + ["nope", ""]


def read_outcome(path: Any, keep_payloads: bool) -> Any:
    try:
        h = History.read(path, keep_payloads)
    except Exception as e:  # noqa: BLE001 - class and text are what we compare
        return error_outcome(e)
    return history_view(h, ids_of(path))


def read_then_feed(path: Any, data: bytes, cut: int, keep_payloads: bool) -> Any:
    """Read the first `cut` bytes, then feed the envelopes the rest adds."""
    path.write_bytes(data[:cut])
    h = History.read(path, keep_payloads)
    path.write_bytes(data)
    h.feed_all(list(Session.peek(path)["envelopes"])[h.count :])
    return history_view(h, ids_of(path))


def assert_same_history(tmp_path: Any, data: bytes, cuts: List[int] = ()) -> None:
    path = tmp_path / "h.jsonl"
    for keep in (True, False):
        path.write_bytes(data)
        want = on_backend("pure", lambda: read_outcome(path, keep))
        assert on_backend("native", lambda: read_outcome(path, keep)) == want, (keep, data[-300:])
        for cut in cuts:
            # feed() goes on from a read: to what reading the whole file gives.
            for backend in ("native", "pure"):
                assert on_backend(backend, lambda: read_then_feed(path, data, cut, keep)) == want, (backend, cut)


def line_ends(data: bytes) -> List[int]:
    return [0] + [i + 1 for i, b in enumerate(data) if b == 0x0A]


@pytest.mark.slow
@SETTINGS
@given(data=transcripts(), pick=st.randoms(use_true_random=False))
def test_generated_histories_agree(tmp_path_factory: Any, data: bytes, pick: random.Random) -> None:
    assert_same_history(tmp_path_factory.mktemp("g"), data, [pick.choice(line_ends(data))])


@pytest.mark.slow
@SETTINGS
@given(data=transcripts(), seed=st.integers(0, 2**32 - 1), rounds=st.integers(1, 3))
def test_damaged_histories_agree(tmp_path_factory: Any, data: bytes, seed: int, rounds: int) -> None:
    rng = random.Random(seed)
    for _ in range(rounds):
        data = damage(data, rng)
    assert_same_history(tmp_path_factory.mktemp("d"), data, [rng.choice(line_ends(data))])


def raw(id_: str, type_: str, payload: str, ts: str = '"2026-01-01T00:00:00Z"') -> bytes:
    """An envelope line written by hand (escapes, repeated keys, odd values)."""
    return f'{{"id":"{id_}","payload":{payload},"ts":{ts},"type":"{type_}","v":1}}\n'.encode()


def hostile() -> bytes:
    """The representative transcript, then lines the fold refuses or reads oddly."""
    long_id = "\u00e9" * 100
    return representative() + b"".join(
        [
            raw(r"\u0064\u0031", "message", '{"role":"user"}'),  # "d1" again, spelt with escapes
            raw("t1", "tool-dispatched", '{"call-id":"c9","tool":7}'),
            raw("t2", "tool-dispatched", '{"call-id":5,"tool":"x"}'),
            raw("t3", "tool-dispatched", r'{"call-id":"c\u0039","tool":"gr\u0065p","arguments":1,"arguments":{"a":[2]}}',
                ts=r'"2026\u002d01"'),
            raw("t4", "tool-dispatched", '{"call-id":"c9","tool":"grep"}'),
            raw("m1", "message", r'{"role":"t\u006fol","tool_call_id":"c9","content":"\u202eevil"}'),
            raw("m2", "message", '{"role":"tool","tool_call_id":["c2"]}'),
            raw("s2", "tool-settled", r'{"op-id":"t3","outcome":"compl\u0065ted","extra":{"k":null}}'),
            raw("s3", "tool-settled", '{"op-id":"t3","outcome":"failed"}'),
            raw("s4", "tool-settled", '{"op-id":"a6","outcome":"failed"}'),
            raw("s5", "tool-settled", '{"op-id":"t4","outcome":"done"}'),
            raw("s6", "tool-settled", '{"op-id":"t4","outcome":"failed","artifact":{"file":"../x"}}'),
            raw("g2", "grants", "[]"),
            raw("g3", "grants", '{"grants":[]}'),
            raw("g4", "grants", '{"grants":{"a":1},"grants":{"b":2}}'),
            raw("e2", "elision", '{"items":[{"id":"a6","stub":"x"},{"id":"a6","stub":"y"}]}'),
            raw("e3", "elision", '{"items":[{"id":"a1","stub":"x"},{"id":"zz","stub":"y"}]}'),
            raw(long_id, "compaction", f'{{"summary":"s","replaces-through-id":"{long_id}x"}}'),
            raw("k2", "compaction", '{"summary":"s","replaces-through-id":"c1"}'),
            raw("w2", "rewind", '{"to-id":"c1"}'),
            b'{"id":"bad","payload":{"x":"\\ud800"},"ts":"t","type":"message","v":1}\n',
            b'{"id":"big","payload":{"x":1e999},"ts":"t","type":"message","v":1}\n',
            b'{"id":"deep","payload":' + b"[" * 600 + b"]" * 600 + b',"ts":"t","type":"x","v":1}\n',
            b'{"id":"nul","payload":{},"ts":"t","type":"x","v":1}\x00\n',
            b'{"id":"\xff","payload":{},"ts":"t","type":"x","v":1}\n',
            b'{"id":"v2","payload":{},"ts":"t","type":"x","v":2}\n',
            raw("w3", "rewind", '{"to-id":null}'),
            raw("t5", "tool-dispatched", '{"call-id":"c9","tool":"grep"}'),
            raw("m3", "message", '{"role":"tool","tool_call_id":"c9"}'),
            raw("x9", "session-meta", '{"late":true}'),
            line("tail", "message", {"role": "user", "content": "unfinished"}).rstrip(b"\n"),
        ]
    )


def test_hostile_lines_agree(tmp_path: Any) -> None:
    data = hostile()
    path = tmp_path / "h.jsonl"
    path.write_bytes(data)
    h = on_backend("native", lambda: History.read(path))
    # The lines above do what they were written to: problems, and the rest read.
    assert len(h.problems) == 11 and h.live_ids == ["m3"]
    assert h.operations["t3"].arguments == {"a": [2]} and h.operations["t3"].tool == "grep"
    assert h.operations["t3"].state == "completed" and h.operations["t4"].answered_by == "m1"
    assert h.answers["m1"] == "t3" and h.calls["c9"] == ["t3", "t4", "t5"]
    assert h.index_of("d1") == 3 and h.index_of("m3") == h.count - 2 and h.index_of("nope") is None
    ends = line_ends(data)
    assert_same_history(tmp_path, data, ends[2:5] + ends[-8:-4])


def test_nothing_is_read_where_peek_lists_nothing(tmp_path: Any) -> None:
    for data in [b"", b"\n \n", b"not json\n" + line("m", "session-meta", {}), line("a", "message", {"role": "u"}),
                 line("m", "session-meta", {}).rstrip(b"\n")]:
        assert_same_history(tmp_path, data)
    assert on_backend("native", lambda: History.read(tmp_path / "missing.jsonl")).count == 0
    assert on_backend("native", lambda: History.read(tmp_path)).count == 0  # a directory


def test_without_a_descriptor_of_its_own_operations_are_built_at_once(tmp_path: Any) -> None:
    """Where the file cannot be reopened (another inode at the path), the operations
    are built now, equal to those built on access."""
    from llm_agent_session import _native

    path, other = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    path.write_bytes(hostile())
    other.write_bytes(b"")
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        lazy, now = _native.history(fd, size, True, str(path)), _native.history(fd, size, True, str(other))
    finally:
        os.close(fd)
    assert lazy is not None and now is not None
    assert type(now.operations) is dict and type(lazy.operations) is not dict
    assert list(now.operations.items()) == list(lazy.operations.items())
    assert list(now.removed.items()) == list(lazy.removed.items())
    assert list(now.calls.items()) == list(lazy.calls.items())


def test_a_lazy_mapping_reads_and_changes_like_a_dict(tmp_path: Any) -> None:
    path = tmp_path / "r.jsonl"
    path.write_bytes(representative())
    h = on_backend("native", lambda: History.read(path))
    want = on_backend("pure", lambda: History.read(path))
    for got, ref in ((h.operations, dict(want.operations)), (h.removed, dict(want.removed)),
                     (h.answers, dict(want.answers)), (h.calls, dict(want.calls))):
        assert got == ref and list(got) == list(ref) and len(got) == len(ref) and repr(got) == repr(ref)
        first = next(iter(ref))
        assert got[first] is got[first] and first in got and "nope" not in got and 7 not in got
        with pytest.raises(KeyError):
            got["nope"]
        ref["new"] = got["new"] = ref[first]
        ref[first] = got[first] = ref["new"]
        del ref[first], got[first]
        ref[first] = got[first] = ref["new"]  # back, at the end
        assert list(got.items()) == list(ref.items())
        with pytest.raises(KeyError):
            del got["nope"]
    op = h.operations["d2"]
    op.state = "changed"
    assert h.operations["d2"].state == "changed"  # a built entry is kept


@pytest.mark.slow
def test_a_history_big_enough_for_two_threads_agrees(tmp_path: Any) -> None:
    """Past the native core's split size, with refused lines in either half."""
    body = [line("m0", "session-meta", {})]
    for i in range(20000):
        body.append(line(f"id-{i}", "message", {"role": "user", "content": "x" * 500 + str(i)}))
        if i % 100 == 5:
            body.append(line(f"d-{i}", "tool-dispatched", {"call-id": f"c{i % 300}", "tool": "t", "arguments": [i]}))
        if i % 100 == 50:
            body.append(line(f"t-{i}", "message", {"role": "tool", "tool_call_id": f"c{(i - 45) % 300}"}))
            body.append(line(f"s-{i}", "tool-settled", {"op-id": f"d-{i - 45}", "outcome": "completed"}))
        if i % 1000 == 999:
            body.append(line(f"c-{i}", "compaction", {"summary": f"s{i}", "replaces-through-id": f"id-{i}"}))
        if i % 1000 == 500:
            body.append(line(f"w-{i}", "rewind", {"to-id": f"id-{i - 3}"}))
    lines = b"".join(body).splitlines(keepends=True)
    for at in sorted((5, len(lines) * 2 // 5 + 2, len(lines) // 2 + 3, len(lines) - 2), reverse=True):
        lines[at:at] = [lines[1], b"{oops}\n", line("x", "compaction", {"summary": "", "replaces-through-id": "id-0"})]
    data = b"".join(lines)
    assert len(data) > 9 << 20
    path = tmp_path / "big.jsonl"
    path.write_bytes(data)
    h = on_backend("native", lambda: History.read(path))
    assert len(h.problems) == 7 and len(h.operations) == 200
    assert_same_history(tmp_path, data)


def test_a_pass_over_a_lazy_mapping_keeps_nothing_it_built(tmp_path: Any) -> None:
    """``passing_items`` (the viewer's look at every operation) gives ``items()`` and
    keeps no entry it built; ``removed`` keeps none either, its values being the read's
    shared Removals (the same object on every access all the same)."""
    from llm_agent_session._history_fold import passing_items

    path = tmp_path / "r.jsonl"
    path.write_bytes(representative())
    h = on_backend("native", lambda: History.read(path, keep_payloads=False))
    want = on_backend("pure", lambda: History.read(path, keep_payloads=False))
    op = h.operations["d2"]
    op.state = "changed"  # built and changed before the pass: the pass gives this one
    want.operations["d2"].state = "changed"
    for got, ref in ((h.operations, want.operations), (h.removed, want.removed), (h.calls, want.calls)):
        assert list(passing_items(got)) == list(passing_items(ref)) == list(ref.items())
    assert dict(passing_items(h.operations))["d2"] is op
    assert list(h.operations._built) == ["d2"]  # type: ignore[attr-defined]
    assert list(h.removed.items()) == list(want.removed.items())
    first = next(iter(h.removed))
    assert h.removed[first] is h.removed[first] and not h.removed._built  # type: ignore[attr-defined]
