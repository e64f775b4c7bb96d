"""The importers on damaged sources (issue #16): random cuts and byte flips never crash an
import and always give a report; whatever is written loads clean (``check`` exit 0); a
source imported in two parts leaves what one import of it leaves (issue #24)."""

from __future__ import annotations

import os
import shutil
import tempfile

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.support.import_fixtures import check_exit, claude_code_session, claude_code_with_sidechain, codex_legacy, codex_rollout

from llm_agent_session import Session
from llm_agent_session.importers import claude_code, codex

SOURCES = {
    "claude-code": (claude_code, (claude_code_session() + claude_code_with_sidechain()).encode()),
    "codex": (codex, (codex_rollout() + codex_legacy()).encode()),
}


def damage(data: bytes, cut: int, flips: list) -> bytes:
    out = bytearray(data[: max(1, cut % (len(data) + 1))])
    for pos, value in flips:
        if out:
            out[pos % len(out)] = value
    return bytes(out)


def _state(path):
    """Live messages and pending operations (but for op ids)."""
    with Session.load(path) as s:
        return ([m.to_dict() for m in s.messages],
                [(p.call_id, p.tool, p.arguments, p.state) for p in s.pending_tool_operations()])


def _outputs(report):
    yield report
    for child in report["transcripts"]:
        yield from _outputs(child)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    fmt=st.sampled_from(sorted(SOURCES)),
    cut=st.integers(min_value=0, max_value=1 << 20),
    flips=st.lists(st.tuples(st.integers(min_value=0, max_value=1 << 20), st.integers(0, 255)), max_size=12),
    grow=st.booleans(),
)
def test_damaged_sources_never_crash(fmt, cut, flips, grow):
    importer, data = SOURCES[fmt]
    work = tempfile.mkdtemp(prefix="las-import-fuzz-")
    try:
        src, out = os.path.join(work, "src.jsonl"), os.path.join(work, "out.jsonl")
        damaged = damage(data, cut, flips)
        with open(src, "wb") as fh:
            fh.write(damaged[: len(damaged) // 2] if grow else damaged)
        reports = [importer.import_transcript(src, out)]
        if grow:  # the rest arrives later: an incremental import of a damaged source
            with open(src, "wb") as fh:
                fh.write(damaged)
            reports.append(importer.import_transcript(src, out))
            # ... which leaves what one import of the whole leaves.
            once = importer.import_transcript(src, os.path.join(work, "once.jsonl"))
            assert [_state(r["out"]) for r in _outputs(reports[-1])] == [_state(r["out"]) for r in _outputs(once)]
        for report in reports:
            for r in _outputs(report):
                # The source only grew: nothing is refused, however damaged it is.
                assert r["status"] in ("imported", "appended", "unchanged"), r["error"]
                assert check_exit(r["out"]) == 0
                for m in r["malformed"]:
                    assert m["line"] >= 1 and 0 <= m["offset"] < len(damaged)
    finally:
        shutil.rmtree(work, ignore_errors=True)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
    | st.sampled_from(["user", "assistant", "tool_use", "tool_result", "message", "u1", "toolu_read", "call_ls",
                       "compact_boundary", "thread_rolled_back", "function_call", "\ud800 lone surrogate", 10**400]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)


def _paths(value, path=()):
    yield path
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, path + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, path + (i,))


def _replace(value, path, new):
    if not path:
        return new
    value[path[0]] = _replace(value[path[0]], path[1:], new)
    return value


@settings(max_examples=80, deadline=None)
@given(fmt=st.sampled_from(sorted(SOURCES)), edits=st.lists(st.tuples(st.integers(0, 1 << 16), st.integers(0, 1 << 16), JSON_VALUES), min_size=1, max_size=6))
def test_well_formed_lines_with_wrong_shapes_never_crash(fmt, edits):
    """Every line parses, but fields hold values of the wrong type or shape."""
    import json

    importer, data = SOURCES[fmt]
    records = [json.loads(line) for line in data.decode().splitlines()]
    for which, where, new in edits:
        rec = records[which % len(records)]
        paths = list(_paths(rec))
        records[which % len(records)] = _replace(rec, paths[where % len(paths)], new)
    work = tempfile.mkdtemp(prefix="las-import-fuzz-")
    try:
        src, out = os.path.join(work, "src.jsonl"), os.path.join(work, "out.jsonl")
        with open(src, "w") as fh:
            fh.write("".join(json.dumps(r) + "\n" for r in records))
        report = importer.import_transcript(src, out)
        for r in _outputs(report):
            assert r["status"] == "imported", r["error"]
            assert check_exit(r["out"]) == 0
    finally:
        shutil.rmtree(work, ignore_errors=True)
