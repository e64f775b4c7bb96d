"""The native core against the pure-Python reference, input by input (docs/ARCHITECTURE.md's two cores).

`llm_agent_session._native` must give the same verdicts, the same exceptions and
the same reason strings, byte for byte, as `_pure/lines.py` and `_pure/tail_check.py`.
Hand-picked tricky inputs first, then hypothesis.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Callable, Iterator, List, Tuple

import pytest

native = pytest.importorskip("llm_agent_session._native")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from llm_agent_session._pure import lines, tail_check  # noqa: E402

@pytest.fixture(autouse=True)
def backend_name() -> str:
    """These tests call both cores directly: one run, not one per backend."""
    return "both"


SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# --- helpers ---------------------------------------------------------------------


def outcome(fn: Callable[..., Any], *args: Any) -> Tuple[str, Any]:
    """What a call did, comparable across backends: its value, or its exception."""
    try:
        return "ok", fn(*args)
    except Exception as e:  # noqa: BLE001 - the class and args are what we compare
        return type(e).__name__, e.args


def pure_envelope(raw: bytes, offset: int) -> Tuple[str, Any]:
    try:
        id_, type_, ts, _ = lines.parse_envelope(raw, offset)
    except lines.LineProblem as p:
        return "problem", (p.kind, p.reason)
    return "ok", (id_, type_, ts)


def native_envelope(raw: bytes, offset: int) -> Tuple[str, Any]:
    try:
        return "ok", native.parse_envelope_check(raw, offset)
    except native.LineProblem as p:
        return "problem", p.args


def assert_same_line(raw: bytes, offset: int = 0) -> None:
    assert native.classify_line(raw) == lines.classify(raw), raw[:200]
    assert native_envelope(raw, offset) == pure_envelope(raw, offset), raw[:200]


def tail_outcomes(path: Any, data: bytes, size: int = -1) -> Tuple[Any, Any]:
    path.write_bytes(data)
    size = len(data) if size < 0 else size
    fd = os.open(path, os.O_RDONLY)
    try:
        return outcome(native.tail_check, fd, size), outcome(tail_check.tail_check, fd, size)
    finally:
        os.close(fd)


def assert_same_tail(path: Any, data: bytes, size: int = -1) -> None:
    got, want = tail_outcomes(path, data, size)
    assert got == want, data[-200:]


def env(type_: str = "message", payload: Any = None, id_: str = "e1", **extra: Any) -> bytes:
    value = {"id": id_, "payload": {} if payload is None else payload, "ts": "2026-01-01T00:00:00.000000Z"}
    value.update(type=type_, v=1)
    value.update(extra)
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


META = env("session-meta", {"cwd": "/tmp", "who": "caf\u00e9 \U0001f600"}, "m0")
MSG = env("message", {"role": "user", "content": "h\u00e9llo \u2028 \U0001f600 [{\"x\"}]"}, "a1")
MSG2 = env("message", {"role": "assistant", "content": None, "n": [1, -2.5e-3, True, None]}, "a2")


# --- classify_line and parse_envelope_check: hand-picked --------------------------


def deep(n: int, inner: bytes = b"") -> bytes:
    return b"[" * n + inner + b"]" * n


TRICKY_LINES: List[bytes] = [
    b"",
    b" \t\r",
    b"{}",
    b"[]",
    b" {} \r",
    b"{}\n",
    b"{} {}",
    b"\xef\xbb\xbf{}",
    b" \xef\xbb\xbf{}",
    b'"\xef\xbb\xbf"',
    b"\x00",
    b"{}\x00",
    b"\x00\x00\x00\x00",
    b'{"a":1,}',
    b"[1,]",
    b"[1 2]",
    b"[01]",
    b"[1.]",
    b"[.5]",
    b"[1e]",
    b"[1e+]",
    b"[-]",
    b"[+1]",
    b"[-0, 0e0, 0.0E-0, 1E+2]",
    b"NaN",
    b"[NaN]",
    b"Infinity",
    b"[-Infinity]",
    b"[-Inf]",
    b"[nul]",
    b"[nulll]",
    b"[tru]",
    b"[True]",
    b"{'a':1}",
    b'"a\tb"',
    b'"a\x7fb"',
    b'"\\x"',
    b'"\\u12G4"',
    b'"\\u12"',
    b'"\\U00e9"',
    b'"\\/\\b\\f\\n\\r\\t\\"\\\\"',
    b'"abc',
    b'"abc\\',
    b'{"a":"abc\\',
    b'{"a":"abc\\"',
    b'"\\ud800"',
    b'"\\uDFFF"',
    b'"\\ud83d\\ude00"',
    b'"\\ud83d\\u0041"',
    b'"\\ud800\\ud800\\udc00"',
    b'"\\udc00\\ud800"',
    b'"\\ud800\\u"',
    b'"\\ud800\\uzzzz"',
    b'{"\\ud800":1}',
    b'{"a":"\\ud800","a":1}',
    b'{"a":"\\ud800","\\u0061":1}',
    b'{"a":[{"b":"\\udfff"}],"a":{"c":1}}',
    b'{"a":{"b":"\\udfff","b":2},"c":"\\ud800"}',
    b'"\\\\ud800"',
    b"1e400",
    b"-1e400",
    b"[1e400, x]",
    b"[x, 1e400]",
    b"1e-400",
    b"1.7976931348623157e308",
    b"1.7976931348623158e308",
    b"1.7976931348623159e308",
    b"17976931348623158" + b"0" * 292,
    b"17976931348623159" + b"0" * 292,
    b"[" + b"9" * 4300 + b"]",
    b"[" + b"9" * 4301 + b"]",
    b"[-" + b"9" * 4301 + b"]",
    b"[" + b"9" * 4301 + b"e]",
    b"[" + b"9" * 4301 + b".5]",
    b"[" + b"9" * 4301 + b"e-4000]",
    b'{"id":"\xc3',
    b'{"id":"\xc3\xa9"}',
    b'{"id":"\xe2\x82"}',
    b'{"id":"\xe2\x82',
    b'{"id":"\xf0\x9f\x98',
    b"\xc0\x80",
    b"\xed\xa0\x80",
    b"\xf4\x90\x80\x80",
    b"\xf5",
    b"\xff",
    deep(511),
    deep(512),
    deep(513),
    deep(512)[:-1],
    deep(513)[:-5],
    b"[" * 513,
    b"[" * 512 + b'"[' + b"]" * 512,
    b"[" * 512 + b'"' + b"]" * 512,
    b'["' + b"[" * 600 + b'"]',
    b'["\\"' + b"[" * 600 + b'"]',
    b'["\\\\"' + b"[" * 600,
    b"[" * 300 + b'"\\',
    b"]" + b"[" * 513,
    b"]]" + b"[" * 513,
    b"[" * 513 + b"\xff",
    b'{"a":' * 512 + b"1" + b"}" * 512,
    b'{"a":' * 513 + b"1" + b"}" * 513,
    b'{"a":' * 512 + b"1" + b"}" * 511,
    deep(512, b'"[[[["'),
    deep(512, b'"\xff"'),
    deep(400, b"1e400"),
    META,
    MSG,
    MSG + b"\r",
    MSG[:-1],
    MSG[:40],
]


@pytest.mark.parametrize("raw", TRICKY_LINES, ids=range(len(TRICKY_LINES)))
def test_tricky_lines(raw: bytes) -> None:
    assert_same_line(raw, 17)


ENVELOPE_CASES: List[bytes] = [
    b'{"id":"a","payload":{},"ts":"t","type":"m","v":1}',
    b'{"id":"a","payload":{},"ts":"t","type":"m","v":1.0}',
    b'{"id":"a","payload":{},"ts":"t","type":"m","v":1e0}',
    b'{"id":"a","payload":{},"ts":"t","type":"m","v":true}',
    b'{"id":"a","payload":{},"ts":"t","type":"m","v":"1"}',
    b'{"id":"a","payload":{},"ts":"t","type":"m","v":2}',
    b'{"id":"a","payload":{},"ts":"t","type":"m","v":-1}',
    b'{"id":"a","payload":{},"ts":"t","type":"m","v":null}',
    b'{"id":"a","payload":{},"ts":"t","type":"m","v":[1]}',
    b'{"id":"a","payload":{},"ts":"t","type":"m","v":{}}',
    b'{"id":"a","payload":{},"ts":"t","type":"m","v":2,"v":1}',
    b'{"id":"a","payload":{},"ts":"t","type":"m","v":1,"v":2}',
    b'{"v":1}',
    b'{"v":2}',
    b"{}",
    b"[]",
    b"null",
    b"true",
    b"1",
    b'"s"',
    b'{"id":"a","payload":{},"ts":"t","type":"m"}',
    b'{"id":"a","payload":{},"ts":"t","type":"m","v":1,"x":1}',
    b'{"id":"a","payload":{},"ts":"t","type":"m","v":1,"b":1,"a":2,"\\u00e9":3,"Z":4,"\xef\xbf\xbf":5,"\xf0\x9f\x98\x80":6}',
    b'{"' + "\u00e9".encode() * 45 + b'":1,"v":1}',
    b'{"' + "\U0001f600".encode() * 45 + b'":1,"v":1}',
    b'{"id":"","payload":{},"ts":"t","type":"m","v":1}',
    b'{"id":"\\u0000","payload":{},"ts":"t","type":"m","v":1}',
    b'{"id":1,"payload":{},"ts":"t","type":"m","v":1}',
    b'{"id":"a","payload":[],"ts":"t","type":"m","v":1}',
    b'{"id":"a","payload":{},"ts":1,"type":"m","v":1}',
    b'{"id":"a","payload":{},"ts":"t","type":null,"v":1}',
    b'{"id":1,"payload":[],"ts":1,"type":1,"v":1}',
    b'{"id":"\\ud800","id":"ok","payload":{},"ts":"t","type":"m","v":1}',
    b'{"id":"ok","payload":{"\\udc00":1},"ts":"t","type":"m","v":1}',
    b'{"id":"ok","payload":{"a":1e999},"ts":"t","type":"m","v":1}',
    b'{"id":"ok","payload":{"a":NaN},"ts":"t","type":"m","v":1}',
    b'{"id":"ok","payload":{"a":1e999},"ts":"t","type":"m","v":1',
    b'{"id":"ok","payload":{"a":1},"ts":"t","type":"m","v":1',
    b'{"id":"\\u00e9\\ud83d\\ude00","payload":{},"ts":"\\n","type":"\\"","v":1}',
    b'{"id":"a","payload":{},"ts":"t","type":"' + b"x" * 100 + b'","v":1}',
    b'{"v":1,"id":"a","id":"b","payload":{"p":1},"payload":{},"ts":"t","type":"m"}',
    b'{"id":"a","payload":{},"ts":"t","type":"m","v":1}\r',
    b'\t{"id":"a","payload":{},"ts":"t","type":"m","v":1}  ',
    META,
    MSG,
    MSG2,
]


@pytest.mark.parametrize("raw", ENVELOPE_CASES, ids=range(len(ENVELOPE_CASES)))
def test_envelope_cases(raw: bytes) -> None:
    assert_same_line(raw, 1000)


def test_invalid_utf8_offset_counts_from_the_line() -> None:
    for offset in (0, 1, 12345, 2**40):
        assert_same_line(b'{"id":"a\xff"}', offset)
        assert_same_line(b'{"id":"' + "\u00e9".encode() * 10 + b"\xe2\x82", offset)


def test_integers_of_any_length_are_read() -> None:
    for n in (4300, 4301, 10_000):
        assert_same_line(b'{"id":"a","payload":{"n":-' + b"7" * n + b'},"ts":"t","type":"m","v":1}')


# --- tail_check: hand-picked ------------------------------------------------------


TRICKY_FILES: List[bytes] = [
    b"",
    b"\n",
    b" \n\r\n\t",
    META,
    META + b"\n",
    META + b"\r\n",
    b"\n\r\n \t\n" + META + b"\n",
    META + b"\n" + MSG + b"\n",
    META + b"\n" + MSG,
    META + b"\n" + MSG + b"\r\n",
    META + b"\n" + MSG + b"\n \t\r\n\n ",
    META + b"\n" + MSG + b"\n" + MSG2[:30],
    META + b"\n" + MSG + b"\n" + MSG2[:-1],
    META + b"\n" + MSG + b"\n" + MSG2[:-1] + b"\n",
    META + b"\n" + MSG[:25],
    META + b"\n" + MSG[:25] + b"\n" + MSG2[:10],
    META + b"\n" + MSG[:25] + b"\n\n \n" + MSG2[:10],
    META + b"\n" + MSG[:25] + b"\n" + MSG2,
    META + b"\n" + MSG + b"\n\x00\x00\x00\x00",
    META + b"\n" + MSG + b"\n\x00\x00\n\x00",
    META + b"\n" + MSG + b"\n" + "\u00e9".encode() * 50 + b"\xc3",
    META + b"\n" + MSG + b"\n" + b'{"a":"' + "\U0001f600".encode() * 30 + b"\xf0\x9f",
    META + b"\n" + deep(513) + b"\n",
    META + b"\n" + deep(512) + b"\n",
    META + b"\n" + b"[" * 513,
    META + b"\n" + deep(513) + b"\n" + MSG[:20],
    META + b"\n" + b"[" * 513 + b"\n" + MSG[:20],
    META + b"\n" + MSG + b"\n" + b"[" * 300 + b'"\\',
    META + b"\n" + b'{"v":2}\n',
    META + b"\n" + b"garbage\n" + MSG + b"\n",
    META[:-1] + b"\n" + MSG,
    META[:10],
    b'{"v":2}\n' + MSG,
    b'{"v":true}\n',
    b"\xef\xbb\xbf" + META + b"\n",
    b"\n\n\xff\n" + META,
    MSG + b"\n",
    env("session-meta", id_="") + b"\n",
    env("x" * 100) + b"\n",
    env("\u00e9" * 50) + b"\n",
    META.replace(b"}", b',"x":1e999}', 1) + b"\n",
    b'{"id":"m","payload":{},"ts":"t","type":"session-meta","v":1,"v":1}\n' + MSG[:5],
]


@pytest.mark.parametrize("data", TRICKY_FILES, ids=range(len(TRICKY_FILES)))
def test_tricky_files(tmp_path: Any, data: bytes) -> None:
    assert_same_tail(tmp_path / "t.jsonl", data)


def test_size_smaller_than_the_file(tmp_path: Any) -> None:
    data = META + b"\n" + MSG + b"\n" + MSG2 + b"\n"
    for size in range(0, len(data) + 1, 7):
        got, want = tail_outcomes(tmp_path / "t.jsonl", data, size)
        assert got == want


def test_size_past_the_end_of_the_file(tmp_path: Any) -> None:
    """A file that shrank under the caller is read as far as it goes (never mapped)."""
    got, want = tail_outcomes(tmp_path / "t.jsonl", META + b"\n", len(META) + 5)
    assert got == want
    assert got[0] == "ok"


def test_bad_descriptor() -> None:
    fd = os.open(os.devnull, os.O_RDONLY)
    os.close(fd)
    assert outcome(native.tail_check, fd, 0) == outcome(tail_check.tail_check, fd, 0)
    kind, args = outcome(native.tail_check, fd, 10)
    assert kind == "OSError" and args[0] == 9
    assert outcome(native.tail_check, -1, 10)[0] == "OSError"


def test_every_truncation_of_a_transcript(tmp_path: Any) -> None:
    body = (
        b"\n \r\n"
        + META
        + b"\r\n"
        + MSG
        + b"\n\n"
        + MSG2
        + b"\n \t\n"
        + env("grants", {"grants": {"fs": ["/tmp", "caf\u00e9"]}}, "g1")
        + b"\n"
        + env("tool-dispatched", {"arguments": {"q": "[\\\"]"}, "call-id": "c"}, "op1")
        + b"\n"
    )
    path = tmp_path / "t.jsonl"
    for cut in range(len(body) + 1):
        got, want = tail_outcomes(path, body[:cut])
        assert got == want, cut
    # Garbage after a whole file, a byte at a time.
    for junk in (b"\x00" * 8, "\u00e9\u00e9".encode(), b'{"a":"\\u12'):
        for cut in range(len(junk) + 1):
            got, want = tail_outcomes(path, body + junk[:cut])
            assert got == want, (junk, cut)


# --- copy_prefix -------------------------------------------------------------------


def _copy_with(fn: Callable[..., Any], tmp_path: Any, data: bytes, length: int, name: str) -> Tuple[Any, bytes]:
    src = tmp_path / f"{name}.src"
    dst = tmp_path / f"{name}.dst"
    src.write_bytes(data)
    sfd = os.open(src, os.O_RDONLY)
    dfd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(dfd, b"pre:")
        os.lseek(sfd, 3, os.SEEK_SET)
        result = outcome(fn, sfd, dfd, length)
        # The source's own position is left alone.
        assert os.lseek(sfd, 0, os.SEEK_CUR) == 3
    finally:
        os.close(sfd)
        os.close(dfd)
    return result, dst.read_bytes()


@pytest.mark.parametrize("length", [0, 1, 1000, (1 << 20) - 1, 1 << 20, (1 << 20) + 1, 3_000_000, 3_000_001, 3_500_000])
def test_copy_prefix(tmp_path: Any, length: int) -> None:
    data = bytes(range(256)) * (3_000_000 // 256) + b"tail"
    data = data[:3_000_000]
    got = _copy_with(native.copy_prefix, tmp_path, data, length, "n")
    want = _copy_with(tail_check.copy_prefix, tmp_path, data, length, "p")
    assert got == want


def test_copy_prefix_errors(tmp_path: Any) -> None:
    src = tmp_path / "s"
    src.write_bytes(b"abc")
    sfd = os.open(src, os.O_RDONLY)
    try:
        # Writing to a read-only descriptor: EBADF, as os.write says it.
        assert outcome(native.copy_prefix, sfd, sfd, 3) == outcome(tail_check.copy_prefix, sfd, sfd, 3)
        closed = os.open(os.devnull, os.O_RDONLY)
        os.close(closed)
        assert outcome(native.copy_prefix, closed, sfd, 3) == outcome(tail_check.copy_prefix, closed, sfd, 3)
        got = outcome(native.copy_prefix, -1, sfd, 3)
        assert got[0] == "OSError" and got[1][0] == 9
    finally:
        os.close(sfd)


# --- hypothesis ----------------------------------------------------------------------

FRAGMENTS = [
    b"{", b"}", b"[", b"]", b",", b":", b'"', b"\\", b"\\u", b"\\n", b'\\"', b"d800", b"DC00",
    b"\\ud83d", b"\\ude00", b"\\ud800", b"0", b"1", b"9", b"-", b".", b"e", b"E", b"+",
    b"true", b"false", b"null", b"NaN", b"Infinity", b"1e400", b"1e308", b" ", b"\t", b"\r",
    b"\n", b"\x00", b"\x1f", b"\x7f", "\u00e9".encode(), b"\xc3", b"\xff", b"\xef\xbb\xbf",
    "\U0001f600".encode(), b'"v"', b'"id"', b'"payload"', b'"ts"', b'"type"', b"a", b"/",
]

json_ish = st.lists(st.sampled_from(FRAGMENTS), max_size=40).map(b"".join)

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=4), children, max_size=4),
    max_leaves=20,
)


def dumps(value: Any, ascii_: bool) -> bytes:
    return json.dumps(value, ensure_ascii=ascii_).encode("utf-8", "surrogatepass")


@SETTINGS
@given(json_ish)
def test_hypothesis_json_ish(raw: bytes) -> None:
    assert_same_line(raw, 3)


@SETTINGS
@given(json_values, st.booleans(), st.data())
def test_hypothesis_values_cut_and_spliced(value: Any, ascii_: bool, data: Any) -> None:
    raw = dumps(value, ascii_)
    assert_same_line(raw)
    cut = data.draw(st.integers(min_value=0, max_value=len(raw)))
    assert_same_line(raw[:cut])
    junk = data.draw(st.sampled_from(FRAGMENTS))
    assert_same_line(raw[:cut] + junk + raw[cut:])


envelope_dicts = st.fixed_dictionaries(
    {},
    optional={
        "id": st.one_of(st.text(max_size=5), st.integers()),
        "payload": st.one_of(st.dictionaries(st.text(max_size=3), json_values, max_size=3), json_values),
        "ts": st.one_of(st.text(max_size=5), st.none()),
        "type": st.one_of(st.sampled_from(["message", "session-meta"]), st.text(max_size=50), st.booleans()),
        "v": st.one_of(st.just(1), st.just(1.0), st.just(True), st.just("1"), st.integers(-2, 3)),
    },
).flatmap(
    lambda d: st.dictionaries(st.text(max_size=45), json_values, max_size=7).map(lambda extra: {**extra, **d})
)


@SETTINGS
@given(envelope_dicts, st.booleans())
def test_hypothesis_envelope_shapes(value: Any, ascii_: bool) -> None:
    assert_same_line(dumps(value, ascii_), 99)


@st.composite
def transcript_lines(draw: Any) -> bytes:
    pool = st.one_of(
        st.builds(lambda v, a: dumps(v, a), envelope_dicts, st.booleans()),
        st.sampled_from([MSG, MSG2, META, b"", b" ", b"\r", b"\t \r", b"\x00\x00", deep(513), b"[" * 513]),
        json_ish,
    )
    first = draw(st.one_of(st.just(META), pool))
    rest = draw(st.lists(pool, max_size=5))
    body = b"\n".join([first] + rest) + draw(st.sampled_from([b"", b"\n", b"\r\n", b"\n\n "]))
    cut = draw(st.integers(min_value=0, max_value=len(body)))
    return body if draw(st.booleans()) else body[:cut]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(transcript_lines())
def test_hypothesis_tail(tmp_path: Any, data: bytes) -> None:
    assert_same_tail(tmp_path / "h.jsonl", data)


def _every_prefix(body: bytes) -> Iterator[bytes]:
    for cut in range(len(body) + 1):
        yield body[:cut]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(st.builds(lambda v, a: dumps(v, a), envelope_dicts, st.booleans()), min_size=1, max_size=3))
def test_hypothesis_every_truncation(tmp_path: Any, envelopes: List[bytes]) -> None:
    body = META + b"\n" + b"\n".join(envelopes) + b"\n"
    path = tmp_path / "e.jsonl"
    for prefix in _every_prefix(body):
        got, want = tail_outcomes(path, prefix)
        assert got == want, prefix[-80:]
