"""Shared fixtures and options for the benchmark suites (pytest-benchmark).

These files live outside ``tests/`` so that the project's test command never collects
them. Run them with ``python benches/run.py`` (the ratio table) or directly:

    pytest benches --bench-sizes 1MB,16MB [--bench-gb] [--bench-backends native,pure]

Options (each also readable from the environment):

- ``--bench-sizes`` / ``LLM_AGENT_SESSION_BENCH_SIZES``: transcript sizes, default ``1MB``.
- ``--bench-gb`` / ``LLM_AGENT_SESSION_BENCH_GB=1``: add a 1 GB transcript.
- ``--bench-backends`` / ``LLM_AGENT_SESSION_BENCH_BACKENDS``: default every available one.
- ``--bench-append-sizes``: sizes of the loaded session the appends go to (default: the
  smallest and the largest of ``--bench-sizes``).
- ``--bench-corpora`` / ``LLM_AGENT_SESSION_BENCH_CORPORA``: the generator's corpora that
  ``load``, ``peek`` and ``peek-survey`` run on (default ``realistic``; also ``nonascii``,
  ``escapes``). The other operations use the realistic corpus.

Generated transcripts are cached in ``benches/.cache`` (or
``LLM_AGENT_SESSION_BENCH_CACHE``); the suites work on copies in ``<cache>/work``.
"""

from __future__ import annotations

import os
import shutil
import sys
from typing import Any, Dict, List

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import generate  # noqa: E402
from benchutil import available_backends, fresh_copy, use_backend  # noqa: E402



def pytest_addoption(parser: Any) -> None:
    g = parser.getgroup("llm-agent-session benchmarks")
    g.addoption("--bench-sizes", default=os.environ.get("LLM_AGENT_SESSION_BENCH_SIZES", "1MB"),
                help="comma-separated transcript sizes, e.g. 1MB,16MB,256MB (default 1MB)")
    g.addoption("--bench-gb", action="store_true",
                default=os.environ.get("LLM_AGENT_SESSION_BENCH_GB", "") not in ("", "0"),
                help="also benchmark a 1 GB transcript")
    g.addoption("--bench-backends", default=os.environ.get("LLM_AGENT_SESSION_BENCH_BACKENDS", ""),
                help="comma-separated backends (default: every available one)")
    g.addoption("--bench-append-sizes",
                default=os.environ.get("LLM_AGENT_SESSION_BENCH_APPEND_SIZES", ""),
                help="sizes of the session that appends go to (default: smallest and largest)")
    g.addoption("--bench-corpora", default=os.environ.get("LLM_AGENT_SESSION_BENCH_CORPORA", "realistic"),
                help="comma-separated corpora for load/peek (realistic, nonascii, escapes)")


def _sizes(config: Any) -> List[int]:
    sizes = [generate.parse_size(s) for s in config.getoption("--bench-sizes").split(",") if s.strip()]
    if config.getoption("--bench-gb"):
        sizes.append(1 << 30)
    return sorted(set(sizes))


def _append_sizes(config: Any) -> List[int]:
    opt = config.getoption("--bench-append-sizes")
    if opt:
        return sorted({generate.parse_size(s) for s in opt.split(",") if s.strip()})
    sizes = _sizes(config)
    return sorted({sizes[0], sizes[-1]})


def _backends(config: Any) -> List[str]:
    avail = available_backends()
    want = [b.strip() for b in config.getoption("--bench-backends").split(",") if b.strip()]
    return [b for b in want if b in avail] if want else avail


def pytest_generate_tests(metafunc: Any) -> None:
    cfg = metafunc.config
    if "size" in metafunc.fixturenames:
        sizes = _append_sizes(cfg) if metafunc.module.__name__.endswith("append") else _sizes(cfg)
        metafunc.parametrize("size", sizes, ids=[generate.size_label(s) for s in sizes])
    if "corpus" in metafunc.fixturenames:
        corpora = [c.strip() for c in cfg.getoption("--bench-corpora").split(",") if c.strip()]
        metafunc.parametrize("corpus", corpora)
    if "backend" in metafunc.fixturenames:
        b = _backends(cfg)
        metafunc.parametrize("backend", b or [pytest.param("none", marks=pytest.mark.skip(
            reason="llm_agent_session is not importable"))])


def pytest_collection_modifyitems(session: Any, config: Any, items: List[Any]) -> None:
    # Run everything for one (size, backend) together so a loaded session can be reused,
    # smaller sizes first; keep the file order otherwise.
    def key(item: Any) -> Any:
        cs = getattr(item, "callspec", None)
        params = cs.params if cs else {}
        corpus = str(params.get("corpus", "realistic"))
        return (params.get("size", 0), corpus != "realistic", corpus, str(params.get("backend", "")))

    items.sort(key=key)


@pytest.fixture(scope="session")
def workdir() -> Any:
    d = os.path.join(generate.cache_dir(), "work")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="session")
def transcripts() -> Any:
    """``transcripts(size, torn=False, corpus="realistic") -> (path, stats)`` from the cache."""
    memo: Dict[Any, Any] = {}

    def get(size: int, torn: bool = False, corpus: str = "realistic") -> Any:
        k = (size, torn, corpus)
        if k not in memo:
            memo[k] = generate.cached(size, seed=1, torn=torn, corpus=corpus)
        return memo[k]

    return get


@pytest.fixture(scope="session")
def clean_copy(transcripts: Any, workdir: str) -> Any:
    """A work copy of the clean transcript of each size and corpus (the suites never touch
    the cache); one corpus's copies at a time, to bound the disk they take."""
    memo: Dict[Any, Any] = {}

    def get(size: int, corpus: str = "realistic") -> Any:
        if (size, corpus) not in memo:
            for (old_size, old_corpus), (old_path, _) in list(memo.items()):
                if old_corpus != corpus and old_corpus != "realistic":
                    os.unlink(old_path)
                    del memo[(old_size, old_corpus)]
            src, stats = transcripts(size, corpus=corpus)
            dst = os.path.join(workdir, f"clean-{corpus}-{size}.jsonl")
            fresh_copy(src, dst)
            memo[(size, corpus)] = (dst, stats)
        return memo[(size, corpus)]

    return get


@pytest.fixture(scope="session")
def loaded_session(transcripts: Any, workdir: str) -> Any:
    """``loaded_session(backend, size)``: a session freshly loaded (untimed) from a new work
    copy of the transcript of that size, so each append benchmark starts from the same
    state; the previous one is closed and its file removed."""
    slot: Dict[str, Any] = {}

    def release() -> None:
        if slot:
            try:
                slot["session"].close()
            finally:
                os.unlink(slot["path"])
                slot.clear()

    def get(backend: str, size: int) -> Any:
        release()
        from llm_agent_session import Session

        use_backend(backend)
        src, stats = transcripts(size)
        path = os.path.join(workdir, f"append-{backend}-{size}.jsonl")
        fresh_copy(src, path)
        slot.update(path=path, session=Session.load(path), stats=stats)
        return slot["session"]

    yield get
    release()
