"""Where a search's text is in each line it found (``find_hits``): the native core
(``rust/search/groups.rs``, which reads the line's bytes as the parser walks it) against
the pure one (``_pure/search.py``, which reads the value ``json.loads`` builds), on lines
that spell their strings every way JSON allows, repeat keys, hold floats and huge
integers, or are not JSON at all; and both against ``search.groups_of`` on real
transcripts."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import List

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llm_agent_session import Session, search, user_message
from llm_agent_session._pure import search as pure
from llm_agent_session.importers import claude_code, codex
from tests.support import hostile  # noqa: E402
from tests.support import import_fixtures as fx  # noqa: E402

native = pytest.importorskip("llm_agent_session._native")

def hits(path, needle: bytes, ignore_case: bool):
    fd = os.open(path, os.O_RDONLY)
    try:
        end = os.fstat(fd).st_size
        return (pure.find_hits(fd, needle, 0, end, ignore_case, sys.maxsize),
                native.find_hits(fd, needle, 0, end, ignore_case, sys.maxsize))
    finally:
        os.close(fd)


def groups(line: str, text: str, ignore_case: bool = False, tmp: Path = Path()) -> List[int]:
    """Both cores' bits for one line holding `text`; asserts they agree."""
    path = tmp / "line.jsonl"
    path.write_bytes(line.encode("utf-8", "surrogatepass") + b"\n")
    got_pure, got_native = hits(path, search.needle(text, ignore_case), ignore_case)
    assert got_pure == got_native
    return got_native[1]


C, A, R, E = pure.CONTENT, pure.ARGUMENTS, pure.RESULTS, pure.EXTRAS


@pytest.mark.parametrize(("line", "text", "want"), [
    # Inside an escape is not the text; the character the escape stands for is.
    ('{"type":"message","payload":{"role":"user","content":"a\\nb n"}}', "n", [C]),
    ('{"type":"message","payload":{"role":"user","content":"a\\nb"}}', "n", [0]),
    ('{"type":"message","payload":{"role":"user","content":"a\\u001fb"}}', "001f", [0]),
    ('{"type":"message","payload":{"role":"user","content":"a\\u001fb"}}', "\x1f", [C]),
    # Another spelling of the same characters (the scan finds the line by another string).
    ('{"type":"message","payload":{"role":"user","content":"a\\/b","x":"a/b"}}', "a/b", [C | E]),
    ('{"type":"message","payload":{"role":"user","content":"\\u0041BC","x":"abc"}}', "abc", [E]),
    ('{"type":"message","payload":{"role":"user","content":"\\u0061bc","x":"abc"}}', "abc", [C | E]),
    ('{"type":"message","payload":{"role":"user","content":"\\ud83d\\ude00","x":"😀"}}', "😀", [C | E]),
    ('{"type":"message","payload":{"role":"user","content":"x\u2028y","x":"\\u2028"}}', "\u2028", [C | E]),
    # A key is never the text; a later duplicate replaces the earlier value.
    ('{"type":"message","payload":{"role":"user","needle":1}}', "needle", [0]),
    ('{"type":"message","payload":{"role":"user","content":"needle","content":"x"}}', "needle", [0]),
    ('{"type":"message","payload":{"role":"user","cont\\u0065nt":"needle"}}', "needle", [C]),
    ('{"type":"message","payload":{"content":"needle","role":"user","role":"tool"}}', "needle", [R]),
    ('{"type":"message","payload":{"content":"needle","role":"tool","role":"user"}}', "needle", [C]),
    ('{"type":"x","payload":{"content":"needle"},"payload":{}}', "needle", [0]),
    ('{"type":"message","type":"tool-settled","payload":{"error":"needle"}}', "needle", [R]),
    ('{"payload":{"tool":"needle"},"type":"tool-dispatched"}', "needle", [A]),
    ('{"type":"message","payload":{"a":{"b":"needle","b":2}}}', "needle", [0]),
    ('{"type":"message","payload":{"a":{"b":"needle","b":2},"a":[{"c":"needle"}]}}', "needle", [E]),
    # The groups of each type.
    ('{"type":"message","payload":{"role":"assistant","tool_calls":[{"f":"needle"}],"name":"needle"}}', "needle", [A | C]),
    ('{"type":"message","payload":{"role":"user","tool_call_id":"needle","sticky":"needle"}}', "needle", [0]),
    ('{"type":"compaction","payload":{"summary":"needle","by":"needle"}}', "needle", [C | E]),
    ('{"type":"elision","payload":{"items":[{"stub":"needle"},{"id":"needle"}]}}', "needle", [C]),
    ('{"type":"elision","payload":{"items":[{"id":"needle"},"needle"]}}', "needle", [0]),
    ('{"type":"elision","payload":{"items":[{"stub":"needle","stub":null}]}}', "needle", [0]),
    ('{"type":"elision","payload":{"items":{"stub":"x","other":"needle"}}}', "needle", [C]),
    ('{"type":"run-context","payload":{"sections":[{"t":"needle"}],"facts":{}}}', "needle", [C]),
    ('{"type":"tool-settled","payload":{"reason":"needle","outcome":"needle"}}', "needle", [R | E]),
    ('{"type":"session-meta","payload":{"title":"needle"}}', "needle", [E]),
    ('{"type":"needle","id":"needle","payload":{}}', "needle", [0]),
    ('{"type":"message","payload":"needle"}', "needle", [0]),
    ('["needle"]', "needle", [0]),
    # Numbers as json.dumps writes them (the id, never searched, makes the scan find the line).
    ('{"id":"1e+16","type":"x","payload":{"n":1E16}}', "1e+16", [E]),
    ('{"type":"x","payload":{"n":1E16}}', "1E16", [0]),
    ('{"type":"x","payload":{"n":-0,"m":"-0"}}', "-0", [E]),
    ('{"type":"x","payload":{"n":-0}}', "-0", [0]),
    ('{"id":"2.5","type":"x","payload":{"n":25e-1}}', "2.5", [E]),
    ('{"id":"1e-05","type":"x","payload":{"n":1e-5}}', "1e-05", [E]),
    ('{"id":"1e-05","type":"x","payload":{"n":1e-50}}', "1e-05", [0]),
    ('{"type":"x","payload":{"n":true,"m":null}}', "true", [0]),
    ('{"type":"x","payload":{"n":' + "7" * 5000 + '}}', "7" * 4500, [E]),
    # Lines the strict reading refuses.
    ('{"type":"x","payload":{"n":"needle"}', "needle", [-1]),
    ('{"type":"x","payload":{"n":"needle","s":"\\ud800"}}', "needle", [-1]),
    ('{"type":"x","payload":{"n":"needle","s":"\\ud800","s":1}}', "needle", [E]),
    ('{"type":"x","payload":{"n":"needle","f":1e999}}', "needle", [-1]),
    ('{"type":"x","payload":{"n":"needle"}} x', "needle", [-1]),
    ('[' * 600 + '"needle"' + ']' * 600, "needle", [-1]),
])
def test_where_the_text_is(tmp_path, line, text, want):
    assert groups(line, text, tmp=tmp_path) == want


def test_ignoring_case_folds_ascii_letters_only(tmp_path):
    line = '{"type":"message","payload":{"role":"user","content":"CAFÉ Straße"}}'
    assert groups(line, "café", True, tmp_path) == []  # the scan finds no line: É is not é
    assert groups(line, "cafÉ", True, tmp_path) == [C]
    assert groups(line, "STRASSE", True, tmp_path) == []
    assert groups(line, "CAFÉ", False, tmp_path) == [C]


def test_a_needle_that_is_not_a_strings_content_is_refused_alike(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b'{"a":"b"}\n')
    fd = os.open(path, os.O_RDONLY)
    try:
        for needle in (b'"', b"a\\", b"\\x", b"\xff", b"\t"):
            for core in (pure, native):
                with pytest.raises(ValueError, match="not a JSON string's content"):
                    core.find_hits(fd, needle, 0, 10)
        for needle in (b"", b"a\nb"):
            for core in (pure, native):
                with pytest.raises(ValueError, match="must not be empty or hold a newline"):
                    core.find_hits(fd, needle, 0, 10)
    finally:
        os.close(fd)


# Strings spelled every way JSON allows: each character as itself where it may be, or
# escaped (short escapes, \u in either case, surrogate pairs, \/).
def spell(text: str, how: List[int]) -> str:
    out = []
    for i, ch in enumerate(text):
        pick = how[i % len(how)] if how else 0
        code = ord(ch)
        if ch in '"\\' or code < 0x20:
            short = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\b": "\\b", "\f": "\\f", "\r": "\\r"}
            out.append(short.get(ch, "\\u%04x" % code) if pick % 2 == 0 or ch not in short else "\\u%04X" % code)
        elif pick == 1 and code < 0x10000:
            out.append("\\u%04x" % code)
        elif pick == 2 and code < 0x10000:
            out.append("\\u%04X" % code)
        elif pick in (1, 2):
            hi, lo = 0xD800 + ((code - 0x10000) >> 10), 0xDC00 + ((code - 0x10000) & 0x3FF)
            out.append("\\u%04x\\u%04x" % (hi, lo))
        elif pick == 3 and ch == "/":
            out.append("\\/")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


ALPHABET = list('aAnNu0f1"\\/ é日😀\n\t\x1f\u2028.e-+')
TEXTS = st.text(alphabet=st.sampled_from(ALPHABET), max_size=8)
NUMBERS = st.sampled_from(["0", "-0", "1", "-12", "1.5", "1e5", "1E16", "-2.50e-3", "123456789012345678901234567890",
                           "0.1e1", "100", "1e-7", "5e-324"])
KEYS = st.sampled_from(["role", "content", "name", "tool_calls", "tool_call_id", "summary", "items", "stub",
                        "sections", "facts", "tool", "arguments", "error", "reason", "x", "cont\\u0065nt"])
TYPES = st.sampled_from(["message", "compaction", "elision", "run-context", "tool-dispatched", "tool-settled",
                         "session-meta", "other", "mess\\u0061ge"])


@st.composite
def values(draw, depth: int = 0) -> str:
    kind = draw(st.integers(0, 5 if depth < 3 else 2))
    if kind == 0:
        return spell(draw(TEXTS), draw(st.lists(st.integers(0, 3), max_size=4)))
    if kind == 1:
        return draw(NUMBERS)
    if kind == 2:
        return draw(st.sampled_from(["true", "false", "null", '"tool"', '"t\\u006fol"']))
    if kind == 3:
        return "[" + ",".join(draw(st.lists(values(depth + 1), max_size=3))) + "]"
    members = draw(st.lists(st.tuples(KEYS, values(depth + 1)), max_size=4))
    return "{" + ",".join(f'"{k}":{v}' for k, v in members) + "}"


@st.composite
def lines(draw) -> str:
    payload = draw(values(1).filter(lambda v: True) if draw(st.booleans()) else st.just("{}"))
    if draw(st.integers(0, 3)) > 0:
        members = draw(st.lists(st.tuples(KEYS, values(2)), max_size=5))
        payload = "{" + ",".join(f'"{k}":{v}' for k, v in members) + "}"
    top = [f'"type":"{draw(TYPES)}"', f'"payload":{payload}']
    if draw(st.booleans()):
        top.reverse()
    if draw(st.booleans()):
        top.append(f'"payload":{draw(values(1))}')
    line = "{" + ",".join(top) + "}"
    if draw(st.integers(0, 9)) == 0:
        line = line[: draw(st.integers(0, len(line)))]  # cut short: not JSON
    return line


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(found=st.lists(lines(), min_size=1, max_size=6), text=TEXTS.filter(bool), ignore_case=st.booleans())
def test_hypothesis_both_cores_place_the_text_alike(tmp_path_factory, found, text, ignore_case):
    path = tmp_path_factory.mktemp("g") / "f.jsonl"
    path.write_bytes("\n".join(found).encode("utf-8", "surrogatepass") + b"\n")
    got_pure, got_native = hits(path, search.needle(text, ignore_case), ignore_case)
    assert got_pure == got_native


# Floats whose exact value is halfway between two shortest spellings (k/4 near 2**50):
# Python writes the even one.
TIES = st.integers(2**48, 2**53).map(lambda k: k / 4 + 2**50)


@settings(max_examples=500, deadline=None, suppress_health_check=list(HealthCheck))
@given(value=st.floats(allow_nan=False, allow_infinity=False) | TIES,
       form=st.sampled_from(["%r", "%.17g", "%.20e", "%.3E"]))
def test_hypothesis_a_float_reads_as_python_writes_it(tmp_path_factory, value, form):
    literal = form % value if form != "%r" else repr(value)
    if "e" not in literal.lower() and "." not in literal:
        literal += ".0"
    line = '{"type":"x","payload":{"n":%s}}' % literal
    path = tmp_path_factory.mktemp("f") / "f.jsonl"
    path.write_text(line + "\n")
    text = json.dumps(float(literal))
    got_pure, got_native = hits(path, search.needle(text, False), False)
    assert got_pure == got_native
    if text in line:  # the scan found the line: the number as Python writes it holds the text
        assert got_native[1] == [E]


def sources(tmp_path: Path) -> List[Path]:
    """A transcript of this library's, the hostile corpus (with a torn and a malformed
    line), and imported Claude Code and Codex sessions."""
    path = tmp_path / "t.jsonl"
    with Session.create(path, {"title": "needle / é \u2028"}) as s:
        s.append_message(user_message('a "call" with \\ and \n and é 1.5'), extra={"n": 1e-7, "z": -0.0})
    corpus = hostile.build(str(tmp_path / "hostile"))
    imported = []
    for importer, text, name in ((claude_code, fx.claude_code_session(), "cc.jsonl"),
                                 (codex, fx.codex_rollout(), "codex.jsonl")):
        imported.append(Path(fx.import_into(importer, tmp_path, text, name)[1]))
    return [path, Path(corpus.path), Path(corpus.broken)] + imported


@pytest.mark.parametrize("text", ["e", "a", "tool", "\\", '"', "é", "1", "0", ".", "-", "call", "\u2028", "<", "n",
                                  hostile.H[:12]])
def test_on_transcripts_both_cores_agree_with_groups_of(tmp_path, text):
    for source in sources(tmp_path):
        by_id = {}
        for event in Session.peek(source)["envelopes"]:
            by_id[event.id] = None if event.id in by_id else event  # a repeated id: which one is ambiguous
        for ignore_case in (False, True):
            needle = search.needle(text, ignore_case)
            got_pure, got_native = hits(source, needle, ignore_case)
            assert got_pure == got_native, source.name
            data = source.read_bytes()
            for offset, bits in zip(got_native[0], got_native[1]):
                if bits < 0:
                    continue
                event = by_id.get(json.loads(data[offset:].split(b"\n", 1)[0]).get("id"))
                if event is not None:
                    assert search.groups_named(bits) == search.groups_of(event, needle, ignore_case)
