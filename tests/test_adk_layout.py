"""Issue #36: the ADK service's file names and tail reading, which need no ADK: every name
maps to one safe file name and back, and reading a transcript from its end gives exactly
the lines a reading from its start gives, in reverse."""

from __future__ import annotations

import json
import os
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_agent_session.integrations._adk_files import SIDECAR_BYTES, Sidecar, line_at, lines_backward, lines_forward
from llm_agent_session.integrations._adk_layout import MAX_NAME, escape_name, unescape_name


@pytest.fixture(autouse=True)
def _once(backend_name):
    if backend_name != "pure":
        pytest.skip("backend-independent: checked once, in the pure run")


@pytest.mark.parametrize("name, escaped", [
    ("session-1_a.b", "session-1_a.b"),
    ("Ada", "!ada"),
    ("a/b\\c", "a%2Fb%5Cc"),
    ("..", "%2E%2E"),
    (".env", "%2Eenv"),
    ("trailing.", "trailing%2E"),
    ("con", "%63on"),
    ("nul.txt", "%6Eul.txt"),
    ("CON", "!c!o!n"),
    ("Con", "!con"),
    ("", "%"),
    ("été 100%!", "%C3%A9t%C3%A9%20100%25%21"),
    ("~", "%7E"),
])
def test_escaping_examples(name, escaped):
    assert escape_name(name) == escaped
    assert unescape_name(escaped) == name


@settings(max_examples=400, deadline=None)
@given(st.text())
def test_every_name_is_one_safe_component_that_maps_back(name):
    escaped = escape_name(name)
    assert escaped not in (".", "..") and not escaped.startswith(".")
    assert "/" not in escaped and "\\" not in escaped and "\x00" not in escaped
    # no upper case but hex digits: names differing in case stay apart where the file system folds case
    assert not any(c.isupper() for c in re.sub("%[0-9A-F]{2}", "", escaped))
    assert len(escaped.encode()) <= MAX_NAME
    if "~" in escaped:
        assert unescape_name(escaped) is None  # cut: the session's file says its name
    else:
        assert unescape_name(escaped) == name


@settings(max_examples=200, deadline=None)
@given(st.text(), st.text())
def test_distinct_names_never_share_a_file(a, b):
    if a != b:
        assert escape_name(a) != escape_name(b)


def test_long_names_are_cut_the_same_way_each_time_and_stay_distinct():
    one, two = "x" * 300, "x" * 299 + "y"
    assert escape_name(one) == escape_name(one) != escape_name(two)
    assert len(escape_name(one)) == MAX_NAME and "~" in escape_name(one)


@pytest.mark.parametrize("not_escaped", ["A", "a/b", "%2e", "%zz", "!", "!A", "a~b", ".x", "%"[:0] + "%4"])
def test_what_escaping_never_gives_does_not_unescape(not_escaped):
    assert unescape_name(not_escaped) is None


def write(tmp_path, data):
    path = tmp_path / "t.jsonl"
    path.write_bytes(data)
    return os.open(path, os.O_RDONLY), len(data)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=30),
       st.binary(max_size=10).map(lambda b: b.replace(b"\n", b"")), st.integers(1, 16))
def test_backward_gives_the_forward_lines_in_reverse(tmp_path_factory, lines, unfinished, block):
    data = b"".join(line + b"\n" for line in lines) + unfinished
    fd, size = write(tmp_path_factory.mktemp("t"), data)
    try:
        forward = list(lines_forward(fd, size, block=block))
        assert [line for _, line in forward] == lines  # the unfinished last line is not a line yet
        assert list(lines_backward(fd, size, block=block)) == forward[::-1]
        for offset, line in forward:
            assert line_at(fd, offset, size) == line
    finally:
        os.close(fd)


def test_backward_stops_reading_where_the_caller_stops(tmp_path):
    fd, size = write(tmp_path, b"not read\n" + b"x" * 100 + b"\nlast\n")
    try:
        reader = lines_backward(fd, size, block=8)
        assert next(reader) == (110, b"last")
        assert next(reader) == (9, b"x" * 100)
    finally:
        os.close(fd)


def test_a_sidecar_read_half_rewritten_is_not_trusted(tmp_path):
    path = str(tmp_path / ".s.adk.json")
    fd = Sidecar.open(path)
    try:
        Sidecar(1000, 1, 2, 500, 1.5, "id-a", 0).write(fd)
        Sidecar(20, 1, 2, 0, 2.5, "id-b", 1).write(fd)  # shorter: the record keeps its size
        assert Sidecar.read(path) == Sidecar(20, 1, 2, 0, 2.5, "id-b", 1)
        data = open(path, "rb").read()
        assert len(data) == SIDECAR_BYTES
        # what a reader meeting a rewrite half way sees: valid JSON, some fields of each record
        mixed = data.replace(b'"size":20', b'"size":10', 1)
        with open(path, "wb") as f:
            f.write(mixed)
        assert json.loads(mixed)["size"] == 10 and Sidecar.read(path) is None
    finally:
        os.close(fd)
