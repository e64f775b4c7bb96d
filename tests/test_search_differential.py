"""The search's byte scan (``find_lines``): the native core (``rust/search/lines.rs``) against the
pure one (``_pure/search.py``) and both against the obvious line-by-line answer, on lines
with escapes, non-ASCII and case differences, on lines longer than a read block, and in
ranges that start and stop anywhere; then ``search.needle`` and ``search.groups_of`` on a
real transcript."""

from __future__ import annotations

import os
import sys
from typing import List, Tuple

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llm_agent_session import Session, assistant_message, search, tool_message, user_message
from llm_agent_session._pure import search as pure

native = pytest.importorskip("llm_agent_session._native")


def obvious(data: bytes, needle: bytes, start: int, end: int, ignore_case: bool, limit: int) -> Tuple[List[int], int]:
    if ignore_case:
        data, needle = data.lower(), needle.lower()
    found: List[int] = []
    at = start
    while at < end and at < len(data):
        nl = data.find(b"\n", at)
        line_end = len(data) if nl == -1 else nl + 1
        if needle in data[at:line_end]:
            found.append(at)
            if len(found) >= limit:
                return found, line_end
        at = line_end
    return found, max(at, start)


def both(path, needle: bytes, start: int, end: int, ignore_case: bool, limit: int = sys.maxsize):
    fd = os.open(path, os.O_RDONLY)
    try:
        return (pure.find_lines(fd, needle, start, end, ignore_case, limit),
                native.find_lines(fd, needle, start, end, ignore_case, limit))
    finally:
        os.close(fd)


LINES = st.lists(st.text(alphabet=st.sampled_from(list('aAbB"\\é\u2028日 x')), max_size=30), max_size=12)


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(lines=LINES, needle=st.text(alphabet=st.sampled_from(list('aAbB"\\é日 ')), min_size=1, max_size=3),
       cut=st.tuples(st.integers(0, 400), st.integers(0, 400)), ignore_case=st.booleans(), limit=st.integers(1, 4),
       final_newline=st.booleans())
def test_hypothesis_native_pure_and_the_obvious_answer_agree(tmp_path_factory, lines, needle, cut, ignore_case, limit, final_newline):
    data = "\n".join(lines).encode() + (b"\n" if final_newline else b"")
    path = tmp_path_factory.mktemp("s") / "f"
    path.write_bytes(data)
    starts = [0] + [i + 1 for i, b in enumerate(data) if b == 0x0A]
    start = starts[cut[0] % len(starts)]
    end = cut[1]
    want = obvious(data, needle.encode(), start, end, ignore_case, limit)
    got_pure, got_native = both(path, needle.encode(), start, end, ignore_case, limit)
    assert got_pure == got_native == want


def test_lines_longer_than_a_read_block_and_hits_at_its_edges(tmp_path):
    block = pure.BLOCK
    long_line = b"x" * (block + 10) + b"NEEDLE" + b"y" * 5
    data = b"a NEEDLE\n" + long_line + b"\n" + b"z" * (block - 20) + b"NEEDLE\n" + b"needle tail"
    path = tmp_path / "big"
    path.write_bytes(data)
    for ignore_case in (False, True):
        for end in (5, len(data) // 2, len(data), len(data) + 99):
            want = obvious(data, b"NEEDLE", 0, end, ignore_case, sys.maxsize)
            assert both(path, b"NEEDLE", 0, end, ignore_case) == (want, want)


def test_an_empty_needle_or_one_with_a_newline_is_refused_alike(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"a\nb\n")
    fd = os.open(path, os.O_RDONLY)
    try:
        for needle in (b"", b"a\nb"):
            for find in (pure.find_lines, native.find_lines):
                with pytest.raises(ValueError, match="must not be empty or hold a newline"):
                    find(fd, needle, 0, 4)
    finally:
        os.close(fd)


def test_the_needle_is_the_text_as_the_file_writes_it_and_groups_say_where(tpath):
    with Session.create(tpath, {"title": 'a "quoted" Café'}) as s:
        s.append_message(user_message('say "hi"\tto Café \u2028 now'), extra={"note": "Café in an extra"})
        s.append_message(assistant_message("ok", [{"id": "c1", "type": "function",
                                                   "function": {"name": "grep", "arguments": '{"q": "Café"}'}}]))
        op = s.append_tool_dispatched("c1", "grep", {"q": "Café"})
        s.append_message(tool_message("c1", "found Café"))
        s.append_tool_settled(op, "failed", error="Café not found")
    events = list(Session.peek(tpath)["envelopes"])
    offsets = {}
    with open(tpath, "rb") as f:
        at = 0
        for line in f:
            offsets[at] = len(offsets)
            at += len(line)

    def where(text: str, ignore_case: bool = True):
        needle = search.needle(text, ignore_case)
        return [(events[offsets[o]].type, sorted(search.groups_of(events[offsets[o]], needle, ignore_case)))
                for o in search.scan(str(tpath), text, ignore_case)]

    assert where('say "hi"\tto') == [("message", ["content"])]
    assert where("\u2028 now") == [("message", ["content"])]
    assert where("CAFÉ") == [] and where("CAFé") == where("café", ignore_case=True)  # only ASCII letters fold
    assert where("café") == [
        ("session-meta", ["extras"]), ("message", ["content", "extras"]), ("message", ["arguments"]),
        ("tool-dispatched", ["arguments"]), ("message", ["results"]), ("tool-settled", ["results"])]
    assert where("Café", ignore_case=False) == where("café")
    assert where("role") == [(e.type, []) for e in events if e.type == "message"]  # a key: in no group
    with pytest.raises(ValueError):
        search.needle("")
