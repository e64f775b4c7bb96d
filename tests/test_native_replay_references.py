"""References the replay resolves by id, on both backends (docs/FORMAT.md's replay; docs/ARCHITECTURE.md's two cores).

The native fold resolves every reference (a compaction's, an elision's, a rewind's, a
settle's, a `tool` message's call) through the envelope-id map and a per-envelope
slot rather than through maps of its own; these transcripts aim at the places where a
slot could go stale: after a compaction or a rewind moved or dropped messages, an
operation settled twice, a reference to an envelope of another type or to the line
itself, call ids shared by several operations. Each must load alike on both backends
(same state, or the same exception class, text and line).
"""

from __future__ import annotations

from typing import Any, List

import pytest

pytest.importorskip("llm_agent_session._native")

from tests.test_native_replay_differential import assert_same_load, line  # noqa: E402


@pytest.fixture(autouse=True)
def backend_name() -> str:
    """Each case runs on both backends itself."""
    return "both"


def msg(id_: str, role: str = "user", **extra: Any) -> bytes:
    return line(id_, "message", {"role": role, "content": id_, **extra})


def dispatched(id_: str, call: str) -> bytes:
    return line(id_, "tool-dispatched", {"call-id": call, "tool": "t", "arguments": {}})


def settled(id_: str, op: str) -> bytes:
    return line(id_, "tool-settled", {"op-id": op, "outcome": "completed"})


META = line("m", "session-meta", {})
COMPACTED = [msg("s", "system", sysprompt=True), msg("a"), msg("b"), msg("c"),
             line("k", "compaction", {"summary": "sum", "replaces-through-id": "b"})]
REWOUND = [msg("a"), msg("b"), msg("c"), line("w", "rewind", {"to-id": "a"})]

CASES: List[List[bytes]] = [
    # After a compaction: the summary, the sticky message and what followed are live.
    COMPACTED + [line("e", "elision", {"items": [{"id": "c", "stub": 1}, {"id": "k", "stub": 2}, {"id": "s", "stub": 3}]})],
    COMPACTED + [line("e", "elision", {"items": [{"id": "a", "stub": 1}]})],
    COMPACTED + [line("e", "elision", {"items": [{"id": "b", "stub": 1}]})],
    COMPACTED + [line("w", "rewind", {"to-id": "k"}), msg("d"), line("e", "elision", {"items": [{"id": "c", "stub": 1}]})],
    COMPACTED + [line("k2", "compaction", {"summary": "again", "replaces-through-id": "k"})],
    COMPACTED + [line("k2", "compaction", {"summary": "again", "replaces-through-id": "a"})],
    # After a rewind: a later message takes a dropped message's place in the list.
    REWOUND + [msg("d"), line("e", "elision", {"items": [{"id": "b", "stub": 1}]})],
    REWOUND + [msg("d"), line("e", "elision", {"items": [{"id": "d", "stub": 1}, {"id": "a", "stub": 2}]})],
    REWOUND + [msg("d"), msg("e"), line("k", "compaction", {"summary": "x", "replaces-through-id": "c"})],
    REWOUND + [msg("d"), line("w2", "rewind", {"to-id": "c"})],
    REWOUND + [msg("d"), line("w2", "rewind", {"to-id": "d"}), msg("f")],
    REWOUND + [line("w2", "rewind", {"to-id": None}), msg("d"), line("w3", "rewind", {"to-id": "a"})],
    # References to an envelope that is not a live message, or to the line itself.
    [dispatched("d1", "c1"), line("k", "compaction", {"summary": "x", "replaces-through-id": "d1"})],
    [msg("a"), line("k", "compaction", {"summary": "x", "replaces-through-id": "k"})],
    [msg("a"), line("w", "rewind", {"to-id": "w"})],
    [msg("a"), line("e", "elision", {"items": [{"id": "e", "stub": 1}]})],
    [msg("a"), line("e", "elision", {"items": [{"id": "m", "stub": 1}]})],
    # Settles: twice, of a message, of itself, of a compaction summary.
    [dispatched("d1", "c1"), settled("s1", "d1"), settled("s2", "d1")],
    [msg("a"), settled("s1", "a")],
    [settled("s1", "s1")],
    [msg("a"), line("k", "compaction", {"summary": "x", "replaces-through-id": "a"}), settled("s1", "k")],
    [dispatched("d1", "c1"), settled("s1", "s1")],
    # Calls shared by several operations, answered before and after settles.
    [dispatched("d1", "c1"), dispatched("d2", "c1"), settled("s1", "d1"), msg("t", "tool", tool_call_id="c1")],
    [dispatched("d1", "c1"), dispatched("d2", "c1"), msg("t", "tool", tool_call_id="c1"), dispatched("d3", "c1")],
    [dispatched("d1", "c1"), settled("s1", "d1"), dispatched("d2", "c1"), msg("t", "tool", tool_call_id="c1"),
     settled("s2", "d2"), dispatched("d3", "c1")],
    [dispatched("d1", "c1"), msg("t", "user", tool_call_id="c1"), dispatched("d2", "c2"),
     msg("t2", "tool", tool_call_id="c2"), msg("t3", "tool", tool_call_id="c1")],
    [dispatched("d1", "c1"), msg("t", "tool", tool_call_id="c1"), settled("s1", "d1"), settled("s2", "d1")],
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_references_resolve_alike(tmp_path: Any, case: int) -> None:
    assert_same_load(tmp_path, META + b"".join(CASES[case]))
