"""Loads through a side index against whole reads (docs/FORMAT.md, "The side index").

A transcript's prefix is indexed, the rest appended (a torn tail sometimes), and
``Session.load`` with the index must equal ``Session.load(index=False)`` in every
observable: messages and their ids, grants, pending operations, every event, warnings,
settled operations, run-context sections, ``message_extra`` of every envelope, an
append after the load, the file's bytes, and for files that fail, the same exception,
text and line. On both cores, each with the index either core wrote; and both cores
write the same index byte for byte, and an index extended over appended bytes is the
index a whole read writes (with the same key).

Inputs: the random transcripts of ``test_native_replay_differential`` (every line type,
unknown types, blank lines; damaged, too), with a later ``session-meta`` and an
``import-checkpoint`` among them.
"""

from __future__ import annotations

import os
import random
import struct
from typing import Any, Callable, List, Optional, Tuple

import pytest

pytest.importorskip("llm_agent_session._native")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from llm_agent_session import Session, _backend, _index, _peek  # noqa: E402
from llm_agent_session._core import IndexedReplay  # noqa: E402
from tests.test_native_replay_differential import damage, error_outcome, extra_outcome, line, representative, transcripts  # noqa: E402

KEY = (0x0123456789ABCDEF, 0xFEDCBA9876543210)
BACKENDS = ("native", "pure")


@pytest.fixture(autouse=True)
def backend_name() -> str:
    """These tests switch between both backends themselves: one run, not one per backend."""
    return "both"


@pytest.fixture(autouse=True)
def small_files_get_indexes(monkeypatch: Any) -> None:
    monkeypatch.setattr(_index, "AUTO_MIN_BYTES", 0)


def on_backend(name: str, fn: Callable[[], Any]) -> Any:
    previous = _backend.core.name
    _backend.use(name)
    try:
        return fn()
    finally:
        _backend.use(previous)


def index_fd(path: Any, data: bytes) -> int:
    """A read-only descriptor of a file holding `data` (as the cache's would be)."""
    where = str(path) + ".idx-under-test"
    with open(where, "wb") as f:
        f.write(data)
    fd = os.open(where, os.O_RDONLY)
    os.unlink(where)
    return fd


def core_replay(path: Any, index: Optional[bytes] = None, key: Optional[Tuple[int, int]] = KEY) -> IndexedReplay:
    """The core's replay of the whole file at `path` through `index`, writing the index."""
    fd = os.open(path, os.O_RDONLY)
    ifd = None
    try:
        if index is not None:
            ifd = index_fd(path, index)
        st = _index.identity(os.fstat(fd))
        return _backend.core.replay_indexed(
            fd, st[2], st, st, _index.secret(), index_fd=ifd, index_max=len(index or b""), write=True, key=key,
            path=str(path),
        )
    finally:
        os.close(fd)
        if ifd is not None:
            os.close(ifd)


def index_of(path: Any) -> Optional[bytes]:
    """The index a whole read of `path` writes: the same bytes on both cores (None: the
    file fails, on both)."""
    made = []
    for name in BACKENDS:
        try:
            made.append(on_backend(name, lambda: core_replay(path).index_bytes))
        except Exception as e:  # noqa: BLE001 - a file that fails gets no index
            made.append(type(e).__name__)
    assert made[0] == made[1]
    return made[0] if isinstance(made[0], bytes) else None


def observe(path: Any, index: bool) -> Tuple[Tuple[Any, ...], str]:
    """Everything a load of `path` gives (and appends after it), and what became of the index."""
    try:
        s = Session.load(path, index=index)
    except Exception as e:  # noqa: BLE001 - class and text are what we compare
        return error_outcome(e) + (path.read_bytes(),), "failed"
    with s:
        used = s._index_used
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
            [extra_outcome(s, e.id) for e in s.events],
            [extra_outcome(s, m) for m in ("nope", "")],
        )
        # Appends after the load: a run context deduped against what was read, a settle
        # of each pending operation and of a settled one, a compaction.
        known = list(dict.fromkeys(state.sections.get(d) for d in digests))[:2]
        s.append_run_context([("k", t) for t in known] + [("new", "fresh text")])
        settles: List[Any] = []
        for op in s.pending_tool_operations() + [None]:
            try:
                op_id = op.op_id if op is not None else next(iter(sorted(state.settled)), "nothing")
                settles.append(bool(s.append_tool_settled(op_id, "completed")))
            except Exception as e:  # noqa: BLE001
                settles.append(error_outcome(e))
        if s.message_ids:
            s.append_compaction("sum", s.message_ids[-1], 2, 1)
        after = (s.events[-1].payload, s.run_context_section(digests[0]) if digests else None, settles, s.messages)
    _index.flush()
    return read + after, used


def peek_outcome(path: Any, **kw: Any) -> Any:
    """Everything a peek gives (the lazy sequences as lists), or its error."""
    try:
        r = dict(_peek.peek(str(path), **kw))
    except Exception as e:  # noqa: BLE001
        return error_outcome(e)
    for key in ("envelopes", "messages", "spans"):
        if key in r:
            r[key] = list(r[key])
    return r


def staged(path: Any, prefix: bytes, rest: bytes, builder: str) -> Optional[bytes]:
    """A new file at `path` holding `prefix`, indexed by the core `builder`, then `rest`
    appended; the index (None: the prefix cannot be indexed)."""
    _index.remove(path)
    if path.exists():
        path.unlink()
    path.write_bytes(prefix)
    index = on_backend(builder, lambda: _try(lambda: core_replay(path).index_bytes))
    with open(path, "ab") as f:
        f.write(rest)
    return index


def _try(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except Exception:  # noqa: BLE001
        return None


def assert_index_agrees(tmp_path: Any, data: bytes, cut: int) -> List[str]:
    """Index the first `cut` lines of `data`, append the rest, and hold every load
    through the index (each core, with either core's index) to a whole read. Returns
    what became of the index each time."""
    lines = data.splitlines(keepends=True)
    prefix = b"".join(lines[:cut])
    rest = data[len(prefix) :]
    path = tmp_path / "t.jsonl"
    path.write_bytes(prefix)
    if not prefix.endswith(b"\n") or index_of(path) is None:
        return []
    index = staged(path, prefix, rest, "native")
    assert index is not None
    if data.endswith(b"\n"):
        whole = index_of(path)
        # An index extended over the appended bytes is the whole read's, byte for byte.
        for name in BACKENDS:
            extended = on_backend(name, lambda: _try(lambda: core_replay(path, index, key=None)))
            if whole is not None:
                assert extended is not None and extended.used == "used", name
                assert (extended.index_bytes or index) == whole, name
    used = []
    for name in BACKENDS:
        # A peek through the index of the prefix, the rest scanned (the survey: only
        # when no whole line follows the index, else from a whole scan).
        _index.write(str(path), staged(path, prefix, rest, name) or b"")
        for kw in ({}, {"survey": True}, {"spans": True}):
            peeked = on_backend(name, lambda: peek_outcome(path, index=True, **kw))
            assert peeked == on_backend(name, lambda: peek_outcome(path, index=False, **kw)), (name, kw)
        staged(path, prefix, rest, name)
        want, _ = on_backend(name, lambda: observe(path, index=False))
        for builder in BACKENDS:
            index = staged(path, prefix, rest, builder)
            assert index is not None
            _index.write(str(path), index)
            got, how = on_backend(name, lambda: observe(path, index=True))
            assert got == want, (name, builder, how, data[-300:])
            used.append(how)
    _index.remove(path)
    return used


EXTRA_LINES = [
    line("late-meta", "session-meta", {"again": True}),
    line("imp-1", "import-checkpoint", {"format": "codex", "source": "x", "bytes": 1, "lines": 1,
                                        "digest": "sha256:00", "importer": "t"}),
]


@st.composite
def indexed_cases(draw: Any) -> Tuple[bytes, int]:
    data = draw(transcripts())
    lines = data.splitlines(keepends=True)
    for extra in draw(st.lists(st.sampled_from(EXTRA_LINES), max_size=2, unique=True)):
        lines.insert(draw(st.integers(1, len(lines))), extra)
    data = b"".join(lines)
    if draw(st.integers(0, 5)) == 0:
        data = damage(data, random.Random(draw(st.integers(0, 2**32 - 1))))
    return data, draw(st.integers(1, max(len(lines), 1)))


SHORT = settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
LONG = settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))


@SHORT
@given(case=indexed_cases())
def test_a_load_through_an_index_is_a_whole_read(tmp_path_factory: Any, case: Tuple[bytes, int]) -> None:
    data, cut = case
    assert_index_agrees(tmp_path_factory.mktemp("i"), data, cut)


@LONG
@given(case=indexed_cases())
def test_hypothesis_index_loads_are_whole_reads(tmp_path_factory: Any, case: Tuple[bytes, int]) -> None:
    data, cut = case
    assert_index_agrees(tmp_path_factory.mktemp("i"), data, cut)


def representative_cuts(tmp_path: Any, cuts: Any) -> None:
    data = representative() + line("late", "message", {"role": "user", "content": "tail"})
    lines = data.splitlines(keepends=True)
    used = []
    for cut in cuts(len(lines)):
        used += assert_index_agrees(tmp_path, data, cut)
        # The same with a torn tail appended after the index's end.
        used += assert_index_agrees(tmp_path, data + b'{"id":"torn', cut)
    assert used and set(used) == {"used"}, used


def test_every_prefix_of_a_representative_transcript_indexes_and_serves(tmp_path: Any) -> None:
    representative_cuts(tmp_path, lambda n: range(1, n + 1))


def test_a_representative_transcript_indexed_at_its_start_middle_and_end(tmp_path: Any) -> None:
    """The inner loop's share of the one above."""
    representative_cuts(tmp_path, lambda n: (1, n // 2, n))


def test_a_failure_after_the_index_is_the_whole_reads(tmp_path: Any) -> None:
    """The appended part repeats an indexed id, settles an operation settled before the
    index's end, names a message the index saw compacted away: the same error, line and
    byte as a whole read, on both cores."""
    head = [
        line("m0", "session-meta", {}),
        line("a1", "message", {"role": "user", "content": "one"}),
        line("d1", "tool-dispatched", {"call-id": "c1", "tool": "t"}),
        line("s1", "tool-settled", {"op-id": "d1", "outcome": "completed"}),
        line("a2", "message", {"role": "user", "content": "two"}),
        line("k1", "compaction", {"summary": "s", "replaces-through-id": "a1"}),
    ]
    tails = [
        [line("a1", "message", {"role": "user", "content": "again"})],
        [line("x", "message", {"role": "user"}), line("s1", "grants", {"grants": {}})],
        [line("s2", "tool-settled", {"op-id": "d1", "outcome": "failed"})],
        [line("w", "rewind", {"to-id": "a1"})],
        [line("e", "elision", {"items": [{"id": "a2", "stub": "-"}, {"id": "a1", "stub": "-"}]})],
        [line("q", "message", {"role": "user"}), b"{oops}\n", line("r", "message", {"role": "user"})],
    ]
    for tail in tails:
        for cut in range(1, len(head) + 1):
            used = assert_index_agrees(tmp_path, b"".join(head + tail), cut)
            assert len(used) == 4 and set(used) <= {"used", "failed"}, used


def test_the_time_and_fail_sections_hold_what_the_file_says(tmp_path: Any) -> None:
    """TIME holds each block's largest time key and FAIL the dispatches settled failed,
    the same bytes from both cores and after an extension from a cut inside a block (a
    viewer jumps by them without reading the file)."""
    from llm_agent_session._pure.index_format import decode
    from llm_agent_session._times import TIME_BLOCK, time_key

    stamps = ["2026-01-01T00:00:0%d.%dZ" % (i % 10, i) for i in range(7)] + [
        "not a time", "2025-12-31 23:59:59", "2026-01-01t00:00:00.1234567+01:00", "", "2026-01-01T00:00:0"]
    lines = [line("m0", "session-meta", {})]
    for i in range(150):
        lines.append(line(f"d{i}", "tool-dispatched", {"call-id": f"c{i}", "tool": "t"}, ts=stamps[i % len(stamps)]))
        if i % 3:
            outcome = "failed" if i % 3 == 1 else "completed"
            lines.append(line(f"s{i}", "tool-settled", {"op-id": f"d{i}", "outcome": outcome},
                              ts=stamps[(i * 5) % len(stamps)]))
    data = b"".join(lines)
    path = tmp_path / "t.jsonl"
    path.write_bytes(data)
    made = index_of(path)
    assert made is not None
    index = decode(made, _index.secret())
    envelopes = _peek.peek(str(path), index=False)["envelopes"]
    keys = [time_key(e.ts) for e in envelopes]
    assert index.times == [max(keys[b:b + TIME_BLOCK]) for b in range(0, len(keys), TIME_BLOCK)]
    failed = {i for i, e in enumerate(envelopes) if e.type == "tool-dispatched" and int(e.id[1:]) % 3 == 1}
    assert {e for e in range(len(envelopes)) if index.failed[e // 8] >> (e % 8) & 1} == failed
    for name in BACKENDS:  # and a peek's table hands them to a viewer
        _index.write(str(path), made)
        fd = os.open(path, os.O_RDONLY)
        try:
            table = on_backend(name, lambda: _index.table(str(path), fd, os.fstat(fd), False))
        finally:
            os.close(fd)
        assert table is not None and table.failed == index.failed, name
        assert list(struct.unpack(f"<{len(index.times)}q", table.times)) == index.times, name
    for cut in (TIME_BLOCK - 3, 2 * TIME_BLOCK + 5):  # extended from inside a block: the whole read's bytes
        assert_index_agrees(tmp_path, data, cut)
