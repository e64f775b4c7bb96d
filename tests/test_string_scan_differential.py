"""The native string scan (issue #17: 16/32-byte blocks, escapes found from backslash
runs, UTF-8 validated once per line) against the pure-Python reference.

Every multi-byte character, whole or broken, at every offset against the 16- and
32-byte blocks; escapes and backslash runs across block edges; long hypothesis
strings; and characters and lines split across the replay's 1 MiB read windows and
its two-thread split, loaded by both backends.
"""

from __future__ import annotations

import json
from typing import Any, List

import pytest

native = pytest.importorskip("llm_agent_session._native")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from llm_agent_session import Session  # noqa: E402
from llm_agent_session._pure import lines  # noqa: E402

TS = "2026-01-01T00:00:00.000000Z"

# Whole characters of every length, and broken ones: cut short, bad continuation,
# surrogate code point, past U+10FFFF, overlong.
CHARS = [
    "é".encode(), "日".encode(), "😀".encode(), "\u2028".encode(),
    b"\xe6\x97", b"\xf0\x9f\x98", b"\xc3\x28", b"\xed\xa0\x80", b"\xf4\x90\x80\x80",
    b"\xc0\xaf", b"\x80", b"\xff",
]

# Escapes and runs of backslashes; some malformed.
ESCAPES = [
    b"\\n", b'\\"', b"\\\\", b"\\\\\\\\\\\\", b"\\/", b"\\t\\b\\f\\r", b"\\u00e9", b"\\u001b",
    b"\\ud83d\\ude00", b"\\ud800", b"\\udc00x", b"\\u12", b"\\q", b"\\", b"\x01", b"\t",
]


def pure_outcome(raw: bytes) -> Any:
    try:
        return "ok", lines.parse_envelope(raw, 7)[:3]
    except lines.LineProblem as p:
        return "problem", (p.kind, p.reason)


def native_outcome(raw: bytes) -> Any:
    try:
        return "ok", native.parse_envelope_check(raw, 7)
    except native.LineProblem as p:
        return "problem", p.args


def line_with(content: bytes) -> bytes:
    return (b'{"id":"e1","payload":{"content":"' + content + b'","role":"user"},"ts":"'
            + TS.encode() + b'","type":"message","v":1}')


def assert_same(raw: bytes) -> None:
    assert native.classify_line(raw) == lines.classify(raw), raw
    assert native_outcome(raw) == pure_outcome(raw), raw


@pytest.fixture(autouse=True)
def backend_name() -> str:
    """The line tests call both cores directly: one run, not one per backend."""
    return "both"


@pytest.mark.parametrize("char", CHARS, ids=lambda c: c.hex())
def test_every_character_at_every_block_offset(char: bytes) -> None:
    for before in range(70):
        for after in (0, 1, 3, 17, 33):
            for pad in (b"a", "日".encode(), b"\\n"):
                content = pad * (before // len(pad)) + b"a" * (before % len(pad)) + char + b"z" * after
                assert_same(line_with(content))
                assert_same(line_with(content + b"\\"))


@pytest.mark.parametrize("escape", ESCAPES, ids=lambda e: e.hex())
def test_every_escape_at_every_block_offset(escape: bytes) -> None:
    for before in range(70):
        for after in (b"", b"a", "é".encode(), b"\\\\", b'"', b"x" * 40):
            assert_same(line_with(b"b" * before + escape + after))


def test_backslash_runs_across_block_edges() -> None:
    for run in range(1, 70):
        for before in range(34):
            assert_same(line_with(b"a" * before + b"\\" * run + b'"n' + b"b" * 40))
            assert_same(line_with("é".encode() * (before // 2) + b"\\" * run + b"n" * 40))


long_strings = st.lists(st.sampled_from(CHARS[:4] + ESCAPES + [b"a", b"abcdefghijklmnop", b" " * 16]),
                        max_size=120).map(b"".join)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(long_strings, st.integers(min_value=0, max_value=40))
def test_hypothesis_long_strings(content: bytes, shift: int) -> None:
    assert_same(line_with(b"s" * shift + content))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(min_size=30, max_size=400))
def test_hypothesis_any_text(text: str) -> None:
    for ascii_ in (False, True):
        body = json.dumps(text, ensure_ascii=ascii_)[1:-1].encode("utf-8", "surrogatepass")
        assert_same(line_with(body))


# --- files: characters and lines across the replay's read windows and thread split ---

WINDOW = 1 << 20  # rust/replay/stream.rs CHUNK


def _envelope(id_: str, type_: str, payload: Any) -> bytes:
    return json.dumps({"id": id_, "payload": payload, "ts": TS, "type": type_, "v": 1},
                      ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode()


def _file_with_char_at(char: bytes, at: int, lines_before: int = 1) -> bytes:
    """A transcript whose byte `at` starts `char`, inside a message's content."""
    out: List[bytes] = [_envelope("m0", "session-meta", {})]
    size = len(out[0]) + 1
    for n in range(lines_before):
        msg = _envelope(f"f{n}", "message", {"content": "x" * 500, "role": "user"})
        out.append(msg)
        size += len(msg) + 1
    head = b'{"id":"big","payload":{"content":"'
    fill = at - size - len(head)
    assert fill >= 0
    tail = b'","role":"tool"},"ts":"' + TS.encode() + b'","type":"message","v":1}'
    out.append(head + b"a" * fill + char + "日本語".encode() * 10 + tail)
    return b"\n".join(out) + b"\n"


@pytest.mark.parametrize("char", [c for c in CHARS if c in ("é".encode(), "😀".encode(), b"\xe6\x97", b"\xff")],
                         ids=lambda c: c.hex())
def test_characters_across_the_read_window(tmp_path: Any, char: bytes) -> None:
    files = []
    for at in range(WINDOW - len(char), WINDOW + 1):
        p = tmp_path / f"{at}.jsonl"
        p.write_bytes(_file_with_char_at(char, at))
        files.append(str(p))
    assert load_everywhere(files)["native"] == load_everywhere(files)["pure"]


def load_everywhere(paths: List[str]) -> Any:
    """What each backend's load makes of each file: the messages' last characters
    and ids, or the error's class and text."""
    from llm_agent_session import _backend

    previous = _backend.backend()
    results = {}
    try:
        for backend in ("pure", "native"):
            _backend.use(backend)
            got = []
            for path in paths:
                try:
                    with Session.load(path) as s:
                        got.append(("ok", [str(m.content)[-40:] for m in s.messages], list(s.message_ids)))
                except Exception as e:  # noqa: BLE001 - the class and text are compared
                    got.append((type(e).__name__, str(e)))
            results[backend] = got
    finally:
        _backend.use(previous)
    return results


def test_two_threads_on_non_ascii_and_escapes(tmp_path: Any) -> None:
    """A file past the two-thread split size (8 MiB), dense in multi-byte text and
    escapes, and the same with one invalid byte near its middle."""
    text = "日本語のログ 😀 naïve \"q\" \\ \t\u001b[0m\n" * 40
    out = [_envelope("m0", "session-meta", {})]
    n = 0
    while sum(len(x) for x in out) < 9 << 20:
        out.append(_envelope(f"e{n}", "message", {"content": text[n % 50:], "role": "tool"}))
        n += 1
    good = b"\n".join(out) + b"\n"
    bad = bytearray(good)
    middle = bad.index("語".encode(), len(bad) // 2)
    bad[middle + 1] = 0x28  # a broken continuation byte
    paths = []
    for name, data in (("good", good), ("bad", bytes(bad))):
        p = tmp_path / f"{name}.jsonl"
        p.write_bytes(data)
        paths.append(str(p))
    results = load_everywhere(paths)
    assert results["native"] == results["pure"]
    assert results["native"][0][0] == "ok" and results["native"][1][0] == "CorruptTranscript"
