"""Reading benchmarks: load (clean), load of a torn tail (the repair), peek of the whole
file, peek with its survey, peek of only the last turn (from an offset), salvage; each for
every backend, beside the baselines (stdlib json per line, orjson per line keeping or
discarding the objects) and the limits (read + count newlines; copy + fsync). One
pytest-benchmark group per operation and size.

``load``, ``peek`` and ``peek-survey`` also run on the generator's other corpora
(``--bench-corpora``), as operations named ``load-nonascii``, ``peek-escapes``, ...;
those run the native backend only (the pure one is measured on the realistic corpus).
"""

from __future__ import annotations

import os
from typing import Any

import pytest

import baselines
from benchutil import fresh_copy, rounds_for, tag, use_backend, warmup_for

BASELINES = ["json", "orjson", "orjson-discard", "limit"]


def op_name(op: str, corpus: str) -> str:
    return op if corpus == "realistic" else f"{op}-{corpus}"


def _only_realistic_for_pure(corpus: str, backend: str) -> None:
    if corpus != "realistic" and backend == "pure":
        pytest.skip("the pure backend is measured on the realistic corpus only")


def _run(benchmark: Any, fn: Any, size: int, setup: Any = None, cheap: bool = False) -> Any:
    kw = {"rounds": rounds_for(size, cheap), "iterations": 1, "warmup_rounds": warmup_for(size)}
    if setup is not None:
        kw["setup"] = setup
    return benchmark.pedantic(fn, **kw)


def _baseline_fn(kind: str, path: str, offset: int = 0) -> Any:
    if kind == "json":
        return lambda: baselines.json_lines(path, offset)
    if kind in ("orjson", "orjson-discard"):
        if baselines.orjson is None:
            pytest.skip("orjson is not installed (pip install 'llm-agent-session[bench]')")
        if kind == "orjson-discard":
            return lambda: baselines.orjson_discard(path, offset)
        return lambda: baselines.orjson_lines(path, offset)
    return lambda: baselines.limit_read(path, offset)


# ----------------------------------------------------------------------------- load


def test_load(benchmark: Any, clean_copy: Any, size: int, corpus: str, backend: str) -> None:
    from llm_agent_session import Session

    _only_realistic_for_pure(corpus, backend)
    use_backend(backend)
    path, stats = clean_copy(size, corpus)
    tag(benchmark, op_name("load", corpus), size, backend, stats["size"])

    def run() -> None:
        s = Session.load(path)
        n = len(s.messages)
        s.close()
        assert n == stats["messages"]

    _run(benchmark, run, size)


@pytest.mark.parametrize("kind", BASELINES)
def test_load_baseline(benchmark: Any, clean_copy: Any, size: int, corpus: str, kind: str) -> None:
    if corpus != "realistic" and kind == "json":
        pytest.skip("stdlib json per line is measured on the realistic corpus only")
    path, stats = clean_copy(size, corpus)
    tag(benchmark, op_name("load", corpus), size, kind, stats["size"])
    _run(benchmark, _baseline_fn(kind, path), size)


# ----------------------------------------------------------------------------- load, torn


def test_load_torn(benchmark: Any, transcripts: Any, workdir: str, size: int, backend: str) -> None:
    from llm_agent_session import Session

    use_backend(backend)
    src, stats = transcripts(size, torn=True)
    path = os.path.join(workdir, "torn.jsonl")
    tag(benchmark, "load-torn", size, backend, stats["size"])

    def setup() -> Any:
        fresh_copy(src, path)
        return (), {}

    def run() -> None:
        s = Session.load(path)
        n, w = len(s.messages), len(s.warnings)
        s.close()
        assert n == stats["messages"] and w >= 1

    _run(benchmark, run, size, setup)
    assert os.path.getsize(path) == stats["clean-size"]


def test_load_torn_limit(benchmark: Any, transcripts: Any, workdir: str, size: int) -> None:
    src, stats = transcripts(size, torn=True)
    path = os.path.join(workdir, "torn.jsonl")
    tmp = path + ".repair"
    tag(benchmark, "load-torn", size, "limit", stats["size"])

    def setup() -> Any:
        fresh_copy(src, path)
        return (), {}

    _run(benchmark, lambda: baselines.limit_repair(path, stats["clean-size"], tmp), size, setup)


# ----------------------------------------------------------------------------- peek


def test_peek(benchmark: Any, clean_copy: Any, size: int, corpus: str, backend: str) -> None:
    from llm_agent_session import Session

    _only_realistic_for_pure(corpus, backend)
    use_backend(backend)
    path, stats = clean_copy(size, corpus)
    tag(benchmark, op_name("peek", corpus), size, backend, stats["size"])

    def run() -> None:
        r = Session.peek(path)
        n = 0
        for _ in r["envelopes"]:  # a viewer touches every envelope
            n += 1
        assert n >= stats["lines"] - 1 and r["end"] == stats["size"]

    _run(benchmark, run, size)


@pytest.mark.parametrize("kind", ["limit"])
def test_peek_baseline(benchmark: Any, clean_copy: Any, size: int, corpus: str, kind: str) -> None:
    """The same reading as load's baselines: only the limit is run again here (the
    ratio table takes the per-line parsers' times from load's group)."""
    path, stats = clean_copy(size, corpus)
    tag(benchmark, op_name("peek", corpus), size, kind, stats["size"])
    _run(benchmark, _baseline_fn(kind, path), size)


def test_peek_survey(benchmark: Any, clean_copy: Any, size: int, corpus: str, backend: str) -> None:
    """``Session.peek(path, survey=True)``: counts, live messages and open operations from
    the scan's own pass (what ``llm-agent-session peek`` shows)."""
    from llm_agent_session import Session

    _only_realistic_for_pure(corpus, backend)
    use_backend(backend)
    path, stats = clean_copy(size, corpus)
    tag(benchmark, op_name("peek-survey", corpus), size, backend, stats["size"])

    def run() -> None:
        r = Session.peek(path, survey=True)
        assert r["end"] == stats["size"]

    _run(benchmark, run, size)


# ----------------------------------------------------------------------------- peek since


def test_peek_since(benchmark: Any, clean_copy: Any, size: int, backend: str) -> None:
    """What a viewer following a live transcript does per refresh: peek only what was
    appended since its last call (the last turn, the same bytes count at every size)."""
    from llm_agent_session import Session

    use_backend(backend)
    path, stats = clean_copy(size)
    off = stats["tail-offset"]
    st = os.stat(path)
    identity = (st.st_dev, st.st_ino)
    tag(benchmark, "peek-since", size, backend, stats["size"] - off, offset=off)

    def run() -> None:
        r = Session.peek(path, offset=off, identity=identity)
        for _ in r["envelopes"]:
            pass
        assert r["end"] == stats["size"] and not r.get("restarted")

    _run(benchmark, run, size, cheap=True)


@pytest.mark.parametrize("kind", BASELINES)
def test_peek_since_baseline(benchmark: Any, clean_copy: Any, size: int, kind: str) -> None:
    path, stats = clean_copy(size)
    off = stats["tail-offset"]
    tag(benchmark, "peek-since", size, kind, stats["size"] - off, offset=off)
    _run(benchmark, _baseline_fn(kind, path, off), size, cheap=True)


# ----------------------------------------------------------------------------- salvage


def test_salvage(benchmark: Any, transcripts: Any, workdir: str, size: int, backend: str) -> None:
    from llm_agent_session import Session

    use_backend(backend)
    src, stats = transcripts(size, torn=True)
    out = os.path.join(workdir, "salvaged.jsonl")
    tag(benchmark, "salvage", size, backend, stats["size"])

    def setup() -> Any:
        if os.path.exists(out):
            os.unlink(out)
        return (), {}

    _run(benchmark, lambda: Session.salvage(src, out), size, setup)
    assert os.path.getsize(out) == stats["clean-size"]


def test_salvage_limit(benchmark: Any, transcripts: Any, workdir: str, size: int) -> None:
    src, stats = transcripts(size, torn=True)
    out = os.path.join(workdir, "salvaged.jsonl")
    tag(benchmark, "salvage", size, "limit", stats["size"])

    def setup() -> Any:
        if os.path.exists(out):
            os.unlink(out)
        return (), {}

    _run(benchmark, lambda: baselines.limit_copy(src, out, stats["clean-size"]), size, setup)
