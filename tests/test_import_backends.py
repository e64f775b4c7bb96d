"""The importers on the two backends (issue #16): the native core reads the source lines
(``_native.parse_json_lines``) and serialises the envelopes (``_native.encode_envelope``),
the pure one runs ``json`` and ``canonical``; both must write the same transcript, byte for
byte once ids and timestamps (fresh on every run) are numbered, and the same report, on
the fixtures, on sources with lines only the reference's decoder can read, and on damaged
and growing sources."""

from __future__ import annotations

import json
import os
import random
import re
from typing import Any, Dict, List, Tuple

import pytest
from tests.support.import_fixtures import (
    claude_code_session,
    claude_code_subagent,
    claude_code_with_sidechain,
    codex_legacy,
    codex_rollout,
    write,
)
from tests.test_import_fuzz import damage

from llm_agent_session import _backend
from llm_agent_session.importers import claude_code, codex

pytestmark = pytest.mark.skipif("native" not in _backend.available(), reason="the native core is not built")

_native = pytest.importorskip("llm_agent_session._native")


@pytest.fixture(autouse=True)
def backend_name() -> str:
    """Each test runs both backends itself: one run, not one per backend."""
    return "both"


_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
_TS = re.compile(r'"ts":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z"')


def normalised(text: str) -> str:
    """The transcript with each id numbered in order of first appearance, timestamps blanked."""
    numbers: Dict[str, str] = {}
    text = _ID.sub(lambda m: numbers.setdefault(m.group(0), f"id-{len(numbers)}"), text)
    return _TS.sub('"ts":"T"', text)


def run(backend: str, importer: Any, src: str, out: str) -> Any:
    previous = _backend.core.name
    _backend.use(backend)
    try:
        return importer.import_transcript(src, out)
    finally:
        _backend.use(previous)


def outputs(report: Dict[str, Any], root: str) -> List[Tuple[str, str]]:
    """(path under ``root``, normalised text) of every transcript an import wrote."""
    found = []
    if report["status"] != "failed" and os.path.exists(report["out"]):
        with open(report["out"], encoding="utf-8") as fh:
            found.append((os.path.relpath(report["out"], root), normalised(fh.read())))
    for child in report["transcripts"]:
        found.extend(outputs(child, root))
    return found


def comparable(report: Any, root: str) -> Any:
    """The report as JSON text with the output directory named the same on both sides."""
    return json.dumps(report, sort_keys=True, default=str).replace(root, "OUT")


def assert_same(tmp_path: Any, importer: Any, versions: List[bytes], name: str = "s.jsonl") -> None:
    """Import each version of the source in turn (a source that grows) on both backends."""
    src = os.path.join(str(tmp_path), "src", name)
    os.makedirs(os.path.dirname(src), exist_ok=True)
    roots = {b: os.path.join(str(tmp_path), b) for b in ("native", "pure")}
    for data in versions:
        with open(src, "wb") as fh:
            fh.write(data)
        got = {b: run(b, importer, src, os.path.join(roots[b], name)) for b in roots}
        assert comparable(got["native"], roots["native"]) == comparable(got["pure"], roots["pure"])
        assert outputs(got["native"], roots["native"]) == outputs(got["pure"], roots["pure"])


FIXTURES = {
    "claude-code": (claude_code, claude_code_session() + claude_code_with_sidechain()),
    "codex": (codex, codex_rollout() + codex_legacy()),
}

# Lines the native reader leaves to the reference's decoder (blank, malformed, not an
# object, NaN, a float past f64, a lone surrogate, nesting past the read limit, a BOM,
# invalid UTF-8), and values at the edges of what it builds itself.
ODD_LINES = [
    b"",
    b"   \t\r",
    b"[1, 2]",
    b'"text"',
    b"{",
    b'{"type": "user", "x": NaN}',
    b'{"type": "user", "x": 1e999}',
    b'{"type": "user", "x": "\\ud800 lone"}',
    b'{"type": "user", "x": "\\ud83d\\ude00 pair", "y": 123456789012345678901234567890}',
    b"[" * 600 + b"]" * 600,
    b'{"a":' * 120 + b"1" + b"}" * 120,
    b'\xef\xbb\xbf{"type": "user"}',
    b'{"type": "user", "bad": "\xff\xfe"}',
    b'{"type": "user", "dup": 1, "dup": 2, "f": -0.0, "g": 1.5e-7, "h": 1E+2}',
    b'  {"type": "summary", "summary": "padded"}  ',
    b'{"type": "user", "ctl": "a\x01b"}',
]


@pytest.mark.parametrize("fmt", sorted(FIXTURES))
def test_fixtures_same_bytes(tmp_path: Any, fmt: str) -> None:
    importer, text = FIXTURES[fmt]
    assert_same(tmp_path, importer, [text.encode()])


def test_subagent_tree_same_bytes(tmp_path: Any) -> None:
    main = claude_code_session()
    write(str(tmp_path / "src" / "sess.jsonl"), main)
    write(str(tmp_path / "src" / "sess" / "subagents" / "agent-a1b2.jsonl"), claude_code_subagent())
    assert_same(tmp_path, claude_code, [main.encode()], "sess.jsonl")


@pytest.mark.parametrize("fmt", sorted(FIXTURES))
def test_lines_only_the_reference_reads_same_bytes(tmp_path: Any, fmt: str) -> None:
    importer, text = FIXTURES[fmt]
    lines = text.encode().split(b"\n")
    mixed: List[bytes] = []
    for i, line in enumerate(lines):
        mixed.append(line)
        mixed.append(ODD_LINES[i % len(ODD_LINES)])
    data = b"\n".join(mixed)
    # Whole, then growing through an unfinished last line (left for the next import).
    assert_same(tmp_path, importer, [data[: len(data) // 2] + b'{"type": "us', data + b"\n"])


@pytest.mark.parametrize("fmt", sorted(FIXTURES))
@pytest.mark.parametrize("seed", range(12))
def test_damaged_sources_same_bytes(tmp_path: Any, fmt: str, seed: int) -> None:
    importer, text = FIXTURES[fmt]
    rng = random.Random(seed)
    data = text.encode()
    damaged = damage(data, rng.randrange(len(data) + 1), [(rng.randrange(1 << 20), rng.randrange(256))
                                                          for _ in range(rng.randrange(12))])
    versions = [damaged[: len(damaged) // 2], damaged] if seed % 2 else [damaged]
    assert_same(tmp_path, importer, versions)


def lines_of(data: bytes, offset: int) -> Any:
    return _native.SourceReader(data, offset).lines


def test_reader_splits_lines_as_the_reference() -> None:
    """One entry per line from the offset (the last one without a newline too), a dict
    only for a plain JSON object."""
    data = b'{"a": 1}\n\n[1]\n{"b": "\\u00e9"}\nxx{"c": 2}'
    assert lines_of(data, 0) == [{"a": 1}, None, None, {"b": "é"}, None]
    assert lines_of(data, 9) == [None, None, {"b": "é"}, None]
    assert lines_of(data, len(data)) == []
    assert lines_of(b'{"a": 1}\n', 0) == [{"a": 1}]


VALUES = [
    '"plain"', '"caf\u00e9 \\u00e9 \\u00E9 \\/ \\n\\t\\b\\f\\r \\u001b \\u001B \\u0008 \\u2028 \u2028 \\ud83d\\ude00"',
    '"\\"quoted\\" \\\\ back"', "0", "-12", "123456789012345678", "1234567890123456789012", "1.5", "-0.0",
    "1e5", "1E-7", "2.5e+300", "true", "false", "null", "[]", "{}", '[1, "a", {"k": [null]}]',
    '{"b": 1, "a": 2, "\\u00e9": 3, "z\\n": 4, "a": 5}',
]


@pytest.mark.parametrize("text", VALUES)
def test_reader_builds_what_json_loads_builds_and_writes_what_canonical_writes(text: str) -> None:
    """Each value read as ``json.loads`` reads it; written back (copied from the source or
    escaped anew, in a payload beside strings the reader never saw) as ``canonical`` writes it."""
    from llm_agent_session.canonical import dumps, envelope_line

    line = ('{"v": %s, "w": [%s, %s]}' % (text, text, text)).encode()
    reader = _native.SourceReader(b"\n" + line + b"\n", 0)
    assert reader.lines[0] is None
    got = reader.lines[1]
    assert got == json.loads(line)
    assert repr(got) == repr(json.loads(line))  # key order, -0.0, int vs float
    payload = {"from-source": got["v"], "all": got, "new": "n\u2028\x01é", "k": [1, 2.0]}
    encoded = reader.encode("message", payload, "the-id")
    if text == "1234567890123456789012":
        assert encoded is None  # past 64 bits: the reference writes Python's own digits
        return
    assert encoded is not None
    id_, out = encoded
    assert id_ == "the-id"
    ts = json.loads(out)["ts"]
    assert out == envelope_line(id_, "message", ts, dumps(payload))


def test_writer_declines_what_the_reference_refuses_or_spells_itself() -> None:
    reader = _native.SourceReader(b'{"a": "x"}', 0)
    for payload in ({"x": float("nan")}, {"x": "\ud800"}, {"x": 10**30}, {"x": object()}, {1: "int key"}):
        assert reader.encode("message", payload) is None
    deep: Any = "leaf"
    for _ in range(100):
        deep = [deep]
    assert reader.encode("message", {"d": deep}) is None
    assert reader.encode("message", {"d": deep[0]}) is not None


def _tree(root: Any) -> None:
    write(str(root / "p" / "sess-1.jsonl"), claude_code_session() + claude_code_with_sidechain())
    write(str(root / "p" / "sess-1" / "subagents" / "agent-a1b2.jsonl"), claude_code_subagent())
    write(str(root / "p" / "lone" / "subagents" / "agent-z.jsonl"), claude_code_subagent())
    write(str(root / "q" / "sess-2.jsonl"), claude_code_session()[:-300])
    write(str(root / "q" / "broken.jsonl"), "\x00\xff garbage\n{\"type\":\n")


@pytest.mark.parametrize("backend", ["native", "pure"])
def test_tree_with_two_workers_writes_what_one_writes(tmp_path: Any, backend: str) -> None:
    """A directory imported by two worker processes: the same transcripts and reports as
    one process gives, in the same order, on the backend this process runs."""
    _tree(tmp_path / "src")
    cx = tmp_path / "cx"
    write(str(cx / "2025" / "09" / "10" / "rollout-a.jsonl"), codex_rollout())
    write(str(cx / "rollout-legacy.jsonl"), codex_legacy())
    previous = _backend.core.name
    _backend.use(backend)
    try:
        for importer, src in ((claude_code, tmp_path / "src"), (codex, cx)):
            got = {}
            for workers in (1, 2):
                root = str(tmp_path / f"out-{importer.FORMAT}-{workers}")
                seen: List[Tuple[int, int]] = []
                reports = importer.import_tree(str(src), root, lambda r, n, total: seen.append((n, total)), workers)
                assert seen == [(n, len(reports)) for n in range(1, len(reports) + 1)]
                got[workers] = ([comparable(r, root) for r in reports],
                                [o for r in reports for o in outputs(r, root)])
            assert got[2] == got[1]
            assert len(got[1][1]) >= 2
    finally:
        _backend.use(previous)


def _backend_of_worker(src: str, out: str) -> Any:
    from llm_agent_session.importers import ImportReport

    report = ImportReport(src, out, "test")
    report["backend"] = _backend.core.name
    report["pid"] = os.getpid()
    return report


@pytest.mark.parametrize("backend", ["native", "pure"])
def test_workers_run_the_backend_of_this_process(backend: str) -> None:
    from llm_agent_session.importers._driver import run_files

    previous = _backend.core.name
    _backend.use(backend)
    try:
        reports = run_files([(_backend_of_worker, (str(n), "out")) for n in range(4)], workers=2)
    finally:
        _backend.use(previous)
    assert [r["source"] for r in reports] == ["0", "1", "2", "3"]
    assert {r["backend"] for r in reports} == {backend}
    assert os.getpid() not in {r["pid"] for r in reports}


def test_writer_writes_the_time_given_and_refuses_one_not_in_the_line_format() -> None:
    from llm_agent_session.canonical import dumps, envelope_line

    reader = _native.SourceReader(b'{"a": "x"}', 0)
    ts = "2025-08-20T09:00:01.250000Z"
    assert reader.encode("message", {"role": "user"}, "the-id", ts) == (
        "the-id", envelope_line("the-id", "message", ts, dumps({"role": "user"})))
    for bad in ("2025-08-20T09:00:01.25Z", "2025-08-20T09:00:01.250000Z\"", "2025-08-20 09:00:01.250000Z", ""):
        with pytest.raises(ValueError, match="not a timestamp of the line format"):
            reader.encode("message", {"role": "user"}, None, bad)
