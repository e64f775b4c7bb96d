"""The two cores' dataset passes agree, column for column and bit for bit: the pure one
(``_pure/columns.py``, History itself) is the reference of the Rust one
(``rust/columns/``). Held on transcripts with every kind of line, generated and hostile
ones, imported histories, files cut and damaged at every line, and (slow) on
hypothesis's transcripts, whose references often name nothing live."""

from __future__ import annotations

import os
from typing import Any, Dict, List, Tuple

import pytest
from hypothesis import HealthCheck, given, settings

import hostile
import import_fixtures as fx
from generate import generate
from llm_agent_session import _backend
from llm_agent_session._core import Column, DatasetSummary
from llm_agent_session.importers import claude_code, codex
from dataset_support import every_kind
from test_native_replay_differential import transcripts

pytestmark = pytest.mark.skipif("native" not in _backend.available(), reason="the native core is not built")


@pytest.fixture(autouse=True)
def backend_name() -> str:
    """These tests call both cores directly: one run, not one per backend."""
    return "both"


def passes(path: str, stop: int, final_line: bool, extras: bool, chunk: int) -> Tuple[Any, Any]:
    """Each core's (summary, every table's columns joined over the chunks)."""
    out = []
    for name in ("pure", "native"):
        core = _backend._select(name)
        fd = os.open(path, os.O_RDONLY)
        try:
            found = core.dataset_pass(fd, stop, final_line, extras, chunk)
            joined: Dict[str, Dict[str, List[Column]]] = {}
            for chunk_tables in found:
                for table, columns in chunk_tables.items():
                    for column, data in columns.items():
                        joined.setdefault(table, {}).setdefault(column, []).append(data)
        finally:
            os.close(fd)
        out.append((found.summary, {t: {c: _join(parts) for c, parts in cols.items()} for t, cols in joined.items()}))
    return out[0], out[1]


def _join(parts: List[Column]) -> Any:
    import pyarrow as pa
    from llm_agent_session.dataset.batches import arrow_array

    return pa.chunked_array([arrow_array(p) for p in parts]).combine_chunks()


def agree(path: str, *, chunk: int = 1 << 12, extras: bool = True, stop: int = -1, final_line: bool = True) -> DatasetSummary:
    size = os.path.getsize(path) if stop < 0 else stop
    (ps, pt), (ns, nt) = passes(path, size, final_line, extras, chunk)
    assert ps == ns
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


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=transcripts())
def test_the_cores_agree_on_hypothesis_transcripts(tmp_path_factory: Any, data: bytes) -> None:
    path = tmp_path_factory.mktemp("d") / "t.jsonl"
    path.write_bytes(data)
    agree(str(path), chunk=64)
