"""The two cores' dataset passes agree, column for column and bit for bit: the pure one
(``_pure/columns.py``, History itself) is the reference of the Rust one
(``rust/columns/``). Held on transcripts with every kind of line, generated and hostile
ones, imported histories, files cut and damaged at every line, and (slow) on
hypothesis's transcripts, whose references often name nothing live."""

from __future__ import annotations

import json
import os
import struct
from typing import Any, Dict, List, Tuple

import pytest
from hypothesis import HealthCheck, given, settings

from tests.support import hostile
from tests.support import import_fixtures as fx
from benches.generate import generate
from llm_agent_session import Session, _backend, assistant_message, user_message
from llm_agent_session._core import Column, DatasetSummary
from llm_agent_session.importers import claude_code, codex
from tests.support.dataset import every_kind
from tests.test_native_replay_differential import transcripts

pytestmark = pytest.mark.skipif("native" not in _backend.available(), reason="the native core is not built")


@pytest.fixture(autouse=True)
def backend_name() -> str:
    """These tests call both cores directly: one run, not one per backend."""
    return "both"


def passes(path: str, stop: int, final_line: bool, extras: bool, chunk: int, start: int = 0) -> Tuple[Any, Any]:
    """Each core's (summary, every table's columns joined over the chunks, id digest); the
    two cores' counted responses (``DatasetPass.responses``) are checked equal here."""
    out = []
    counted = []
    for name in ("pure", "native"):
        core = _backend._select(name)
        fd = os.open(path, os.O_RDONLY)
        try:
            found = core.dataset_pass(fd, stop, final_line, extras, chunk, start)
            digest = found.id_digest()  # before the rows, and the same after them
            counted.append(found.responses())
            joined: Dict[str, Dict[str, List[Column]]] = {}
            for chunk_tables in found:
                for table, columns in chunk_tables.items():
                    for column, data in columns.items():
                        joined.setdefault(table, {}).setdefault(column, []).append(data)
            assert found.id_digest() == digest, name
        finally:
            os.close(fd)
        tables = {t: {c: _join(parts) for c, parts in cols.items()} for t, cols in joined.items()}
        out.append((found.summary, tables, digest))
    assert counted[0] == counted[1]
    return out[0], out[1]


def _join(parts: List[Column]) -> Any:
    import pyarrow as pa
    from llm_agent_session.dataset.batches import arrow_array

    return pa.chunked_array([arrow_array(p) for p in parts]).combine_chunks()


def agree(path: str, *, chunk: int = 1 << 12, extras: bool = True, stop: int = -1, final_line: bool = True,
          start: int = 0) -> DatasetSummary:
    size = os.path.getsize(path) if stop < 0 else stop
    (ps, pt, pd), (ns, nt, nd) = passes(path, size, final_line, extras, chunk, start)
    assert ps == ns
    assert pd == nd
    responses = {r for r in pt["messages"]["response_id"].to_pylist() if r is not None} if "messages" in pt else set()
    assert len(pd) == 8 * (ps.envelopes + len(responses))  # each envelope id, each response id
    assert pt.keys() == nt.keys()
    for table in pt:
        assert list(pt[table]) == list(nt[table]), table
        for column in pt[table]:
            a, b = pt[table][column], nt[table][column]
            assert a.equals(b), (table, column, a.to_pylist()[:5], b.to_pylist()[:5])
            assert a.null_count == b.null_count
    return ps


def test_the_cores_agree_on_every_kind_of_line(tmp_path: Any) -> None:
    path = every_kind(str(tmp_path / "every.jsonl"))
    summary = agree(path)
    assert summary.refused == 0 and summary.skipped == 0
    agree(path, extras=False, chunk=1)  # a run per line
    agree(path, chunk=1 << 30)  # one run


def test_the_cores_agree_on_generated_hostile_and_imported_files(tmp_path: Any) -> None:
    gen = str(tmp_path / "gen.jsonl")
    generate(gen, 400_000, seed=9, torn=True)
    corpus = hostile.build(str(tmp_path / "hostile"))
    for name, importer, text in (("claude", claude_code, fx.claude_code_session()), ("codex", codex, fx.codex_rollout())):
        source = fx.write(str(tmp_path / "raw" / f"{name}.jsonl"), text)
        importer.import_transcript(source, str(tmp_path / f"{name}.jsonl"))
        agree(str(tmp_path / f"{name}.jsonl"))
    agree(gen, chunk=1 << 16)
    agree(gen, stop=os.path.getsize(gen) - 1000, final_line=False)  # a range that ends mid-file
    assert agree(corpus.path).skipped == 1  # the torn tail
    broken = agree(corpus.broken)
    assert broken.skipped == 3 and broken.refused == 0


def test_the_cores_agree_on_every_cut_and_every_damaged_line(tmp_path: Any) -> None:
    data = open(every_kind(str(tmp_path / "every.jsonl")), "rb").read()
    lines = data.split(b"\n")
    path = str(tmp_path / "cut.jsonl")
    for i in range(1, len(lines)):
        for variant in (
            b"\n".join(lines[:i]),  # cut after a line, without its newline
            b"\n".join(lines[:i])[:-9],  # torn inside it
            b"\n".join(lines[: i - 1] + [b'{"id": "bad', lines[i - 1]] + lines[i:]),  # a malformed line
            b"\n".join(lines[: i - 1] + lines[i:]),  # a line gone: references to it dangle
            b"\n".join(lines[:i] + [lines[i - 1]] + lines[i:]),  # a line twice: a duplicate id
        ):
            with open(path, "wb") as f:
                f.write(variant)
            agree(path)


def usage_lines(path: str) -> str:
    """Responses streamed over several lines (one id), responses without an id, assistant
    messages without usage, and lines spelled every odd way (``test_usage.ODD``, ``RAW``)."""
    from llm_agent_session import Usage
    from llm_agent_session.canonical import dumps, envelope_line
    from tests.test_usage import ODD, RAW

    with Session.create(path, {"agent": "tokens"}) as s:
        for n in range(3):
            s.append_message(user_message(f"turn {n}"))
            for part in range(n + 1):
                s.append_message(assistant_message(f"block {part}"), usage=Usage(10 * n, part + 1, 500, 20, f"resp_{n}"))
            s.append_message(assistant_message("no usage"))
            s.append_message(assistant_message("own"), usage=Usage(output=n))
    with open(path, "ab") as f:
        for n, payload in enumerate(ODD):
            f.write(envelope_line(f"odd-{n}", "message", "2026-01-01T00:00:00.000000Z", dumps(payload)))
        for n, raw in enumerate(RAW):
            f.write(b'{"v":1,"id":"raw-%d","type":"message","ts":"2026-01-01T00:00:01.000000Z","payload":%s}\n' % (n, raw))
    return path


def test_the_cores_agree_on_token_usage_from_every_line_and_to_every_cut(tmp_path: Any) -> None:
    """The usage columns, which line each response is counted at, the totals and the
    counted responses: from every line start (a response's lines split between two
    ranges) and to every cut."""
    path = usage_lines(str(tmp_path / "tokens.jsonl"))
    data = open(path, "rb").read()
    whole = agree(path)
    assert whole.usage.responses == 3 + 3 + 8 and whole.usage.input == 30 + 13 and whole.usage.output == (1 << 63) - 1
    for at in line_starts(data):
        agree(path, start=at)
        agree(path, stop=at)
    agree(path, chunk=1)  # a run per line


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=transcripts())
def test_the_cores_agree_on_hypothesis_transcripts(tmp_path_factory: Any, data: bytes) -> None:
    path = tmp_path_factory.mktemp("d") / "t.jsonl"
    path.write_bytes(data)
    agree(str(path), chunk=64)


# -- a range from a line start (`start`), the lines read (`lines`), the ids' digest ----------


def line_starts(data: bytes) -> List[int]:
    """Where each line starts, and the size when the file ends with a newline."""
    return [0] + [i + 1 for i, b in enumerate(data) if b == 0x0A]


def physical_lines(data: bytes, final_line: bool = True) -> int:
    return data.count(b"\n") + (1 if final_line and not data.endswith(b"\n") and data else 0)


def fnv1a(data: bytes) -> int:
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def reference_digest(ids: List[str], responses: List[str] = ()) -> bytes:  # type: ignore[assignment]
    """Envelope ids, and response ids after the bytes ``response-id\\0``: each hash once, sorted."""
    hashes = {fnv1a(i.encode("utf-8", "surrogatepass")) for i in ids}
    hashes |= {fnv1a(b"response-id\0" + r.encode("utf-8")) for r in responses}
    return b"".join(struct.pack("<Q", h) for h in sorted(hashes))


def response_ids(data: bytes) -> List[str]:
    """The response ids a clean file's message lines name in their token usage."""
    out = set()
    for raw in data.split(b"\n"):
        if raw.strip():
            line = json.loads(raw)
            rid = (line["payload"].get("token-usage") or {}).get("response-id") if line["type"] == "message" else None
            if isinstance(rid, str) and rid:
                out.add(rid)
    return sorted(out)


def first_ids(data: bytes) -> List[str]:
    """The ids of a clean file's lines, each once (the first line with an id is kept)."""
    seen: Dict[str, None] = {}
    for raw in data.split(b"\n"):
        if raw.strip():
            seen.setdefault(json.loads(raw)["id"])
    return list(seen)


def table_rows(columns: Dict[str, Any]) -> List[Dict[str, Any]]:
    values = {name: array.to_pylist() for name, array in columns.items()}
    return [dict(zip(values, row)) for row in zip(*values.values())]


def hashes(digest: bytes) -> List[int]:
    return list(struct.unpack(f"<{len(digest) // 8}Q", digest))


def plain(path: str, turns: int = 12) -> str:
    """Only user and assistant messages: no line refers to another."""
    with Session.create(path, {"agent": "plain"}) as s:
        for i in range(turns):
            s.append_message(user_message(f"question {i}"))
            s.append_message(assistant_message(f"answer {i}"))
    return path


def test_the_cores_agree_from_every_line_start(tmp_path: Any) -> None:
    path = every_kind(str(tmp_path / "every.jsonl"))
    data = open(path, "rb").read()
    size = len(data)
    starts = line_starts(data)
    assert starts[-1] == size
    for start in starts:
        summary = agree(path, start=start)
        assert summary.lines == physical_lines(data[start:])
        if start < size:
            assert summary.first_type == json.loads(data[start:].split(b"\n")[0])["type"]
    assert agree(path, start=size) == agree(path, start=size + 100, stop=size)  # empty ranges
    assert agree(path, start=size).lines == 0
    for start in starts[1:-1:3]:
        agree(path, start=start, chunk=1, extras=False)  # a run per line
        agree(path, start=start, stop=size - 9)  # a torn final line, read
        agree(path, start=start, stop=size - 9, final_line=False)  # ... and not
        agree(path, start=start, stop=starts[-2])  # a range that ends at a line start


def test_the_cores_agree_from_line_starts_of_generated_and_hostile_files(tmp_path: Any) -> None:
    gen = str(tmp_path / "gen.jsonl")
    generate(gen, 400_000, seed=9, torn=True)
    corpus = hostile.build(str(tmp_path / "hostile"))
    for path in (gen, corpus.path, corpus.broken):
        data = open(path, "rb").read()
        starts = line_starts(data)
        for start in sorted({starts[1], starts[len(starts) // 3], starts[len(starts) // 2], starts[-1], len(data)}):
            summary = agree(path, start=start, chunk=1 << 14)
            assert summary.lines == physical_lines(data[start:])
            agree(path, start=start, stop=len(data) - 1000, final_line=False)


def test_lines_and_rows_of_two_ranges_are_those_of_the_whole_file(tmp_path: Any) -> None:
    clean = open(plain(str(tmp_path / "plain.jsonl")), "rb").read()
    # Blank lines number like any other and make no row.
    lines = clean.split(b"\n")
    blanky = b"\n".join(lines[:3] + [b"", b"  "] + lines[3:9] + [b"\t"] + lines[9:])
    for name, data in (("clean", clean), ("blanky", blanky)):
        path = str(tmp_path / f"{name}.jsonl")
        with open(path, "wb") as f:
            f.write(data)
        size = len(data)
        whole, tables, digest = passes(path, size, True, True, 1 << 12)[1]
        assert whole.lines == physical_lines(data)
        assert digest == reference_digest(first_ids(data))
        messages = table_rows(tables["messages"])
        for s in line_starts(data):
            head = agree(path, stop=s)
            tail = agree(path, start=s)
            assert head.lines + tail.lines == whole.lines, (name, s)
            assert head.envelopes + tail.envelopes == whole.envelopes
            head_digest = passes(path, s, True, True, 1 << 12)[1][2]
            _, part, part_digest = passes(path, size, True, True, 1 << 12, s)[1]
            assert part_digest == reference_digest(first_ids(data[s:]))
            assert sorted(hashes(head_digest + part_digest)) == hashes(digest)
            got = table_rows(part["messages"])
            past = [r for r in messages if r["line"] > head.lines]
            assert len(got) == len(past), (name, s)
            ordinal_shift = len(messages) - len(past)
            for mine, theirs in zip(got, past):
                assert mine["line"] + head.lines == theirs["line"]
                assert mine["ordinal"] + ordinal_shift == theirs["ordinal"]
                assert {**mine, "line": 0, "ordinal": 0} == {**theirs, "line": 0, "ordinal": 0}


def test_the_id_digest_is_fnv1a_of_each_kept_id(tmp_path: Any) -> None:
    path = every_kind(str(tmp_path / "every.jsonl"))
    data = open(path, "rb").read()
    summary = agree(path)
    (_, _, digest), _ = passes(path, len(data), True, True, 1 << 12)
    assert response_ids(data) == ["resp_every_1"]  # a response streamed over two lines: its id once
    assert digest == reference_digest(first_ids(data), response_ids(data))
    assert len(digest) == 8 * (summary.envelopes + len(response_ids(data)))
    lines = data.rstrip(b"\n").split(b"\n")
    message = json.loads(lines[3])
    assert message["type"] == "message"
    # Ids beyond ASCII, written raw and escaped; a lone surrogate's line is no envelope.
    extra = []
    for id_, ascii_only in (("é-ü-😀-\u2028", False), ("ß-ümlaut-𝄞", True), ("lone-\ud800", True)):
        extra.append(json.dumps({**message, "id": id_}, ensure_ascii=ascii_only).encode("utf-8"))
    odd = str(tmp_path / "odd.jsonl")
    # Repeated ids: a line twice (its second copy not kept), and the first line again at the end.
    with open(odd, "wb") as f:
        f.write(b"\n".join(lines[:5] + [lines[4]] + lines[5:] + extra + [lines[0]]) + b"\n")
    summary = agree(odd)
    assert summary.skipped == 3  # two duplicates and the lone surrogate
    (_, _, digest), _ = passes(odd, os.path.getsize(odd), True, True, 1 << 12)
    ids = first_ids(data) + ["é-ü-😀-\u2028", "ß-ümlaut-𝄞"]
    assert len(set(ids)) == len(ids) == summary.envelopes
    assert digest == reference_digest(ids, response_ids(data))
    assert len(digest) == 8 * (summary.envelopes + len(response_ids(data)))
    empty = str(tmp_path / "empty.jsonl")
    open(empty, "wb").close()
    assert passes(empty, 0, True, True, 1 << 12)[1][2] == b""
    assert agree(path, start=len(data)).envelopes == 0


def test_lines_agree_with_blank_lines_a_final_line_and_two_threads(tmp_path: Any) -> None:
    data = open(every_kind(str(tmp_path / "every.jsonl")), "rb").read()
    path = str(tmp_path / "lines.jsonl")
    lines = data.split(b"\n")
    for variant in (
        b"",
        b"\n",
        b"\n\n  \n",
        b"   ",  # a blank final line without its newline
        data.rstrip(b"\n"),  # a final line without its newline
        b"\n\n" + b"\n \n".join(lines) + b"\n\n",  # blank lines everywhere
        data + b'{"id": "torn',
    ):
        with open(path, "wb") as f:
            f.write(variant)
        for final_line in (True, False):
            assert agree(path, final_line=final_line).lines == physical_lines(variant, final_line)
    # Bigger than SPLIT_MIN (8 MiB, rust/replay/stream.rs): the first pass runs on two
    # threads, meeting at a line start past the middle; blank lines around it.
    big = str(tmp_path / "big.jsonl")
    generate(big, 9 << 20, seed=3, torn=True)
    raw = open(big, "rb").read()
    middle = raw.index(b"\n", len(raw) // 2)
    raw = raw[:middle] + b"\n\n \n" * 3 + raw[middle:]
    with open(big, "wb") as f:
        f.write(raw)
    assert len(raw) >= 8 << 20
    assert agree(big, chunk=1 << 20).lines == physical_lines(raw)
    starts = line_starts(raw)
    start = starts[5]
    assert len(raw) - start >= 8 << 20  # two threads still, reading from `start`
    assert agree(big, chunk=1 << 20, start=start).lines == physical_lines(raw[start:])


def test_the_summary_and_the_ids_answer_while_another_thread_takes_the_rows(tmp_path: Any) -> None:
    """An export makes the next run of rows on a thread of its own (``rows.read_ahead``)
    while it reads the pass's summary on this one: each core's pass answers both at any
    time, and the rows are those of a pass read on one thread."""
    from concurrent.futures import ThreadPoolExecutor

    from llm_agent_session.dataset.batches import arrow_array

    def values(found: Any) -> List[Any]:
        return [{(t, c): arrow_array(data).to_pylist() for t, columns in chunk.items() for c, data in columns.items()}
                for chunk in found]

    path = str(tmp_path / "gen.jsonl")
    generate(path, 2 << 20, seed=4)
    size = os.path.getsize(path)
    for name in ("pure", "native"):
        core = _backend._select(name)
        fd = os.open(path, os.O_RDONLY)
        try:
            alone = core.dataset_pass(fd, size, True, True, 1 << 12)
            want = (alone.summary, alone.id_digest(), values(alone))
            shared = core.dataset_pass(fd, size, True, True, 1 << 12)
            with ThreadPoolExecutor(1) as other:
                taking = other.submit(values, shared)
                answers = 0
                while not taking.done() or not answers:
                    assert shared.summary == want[0] and shared.id_digest() == want[1], name
                    answers += 1
                assert taking.result() == want[2], name
        finally:
            os.close(fd)
