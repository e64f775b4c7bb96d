"""The generator writes valid transcripts: checked without the library (every line
canonical, every reference live, digests right) and with ``Session.load`` on every
backend (same messages and ids as the generator's model). Fast; runs with the suite."""

from __future__ import annotations

import os
from typing import Any

import pytest

import generate
from benchutil import available_backends, use_backend


@pytest.mark.parametrize("torn", [False, True], ids=["clean", "torn"])
def test_generated_transcript_is_valid(tmp_path: Any, torn: bool) -> None:
    path = str(tmp_path / "t.jsonl")
    stats = generate.generate(path, 12 << 20, seed=3, torn=torn)  # big enough to compact
    assert stats["compactions"] > 0 and stats["elisions"] > 0
    assert os.path.getsize(path) == stats["size"] >= 12 << 20
    got = generate.check_structure(path)
    assert got["messages"] == stats["messages"]
    assert got["message-ids"] == stats["message-ids"]
    assert got["torn-bytes"] == stats["torn-bytes"] and (got["torn-bytes"] > 0) == torn
    backends = available_backends()
    if not backends:
        pytest.skip("llm_agent_session is not importable")
    for b in backends:
        use_backend(b)
        generate.verify_with_library(path, stats, torn, got["live"])


def test_generator_is_deterministic(tmp_path: Any) -> None:
    a, b, c = (str(tmp_path / n) for n in "abc")
    generate.generate(a, 1 << 20, seed=7)
    generate.generate(b, 1 << 20, seed=7)
    generate.generate(c, 1 << 20, seed=8)
    with open(a, "rb") as fa, open(b, "rb") as fb, open(c, "rb") as fc:
        da, db, dc = fa.read(), fb.read(), fc.read()
    assert da == db and da != dc


def test_torn_tail_is_a_prefix_of_a_line(tmp_path: Any) -> None:
    clean, torn = str(tmp_path / "c"), str(tmp_path / "t")
    s1 = generate.generate(clean, 1 << 20, seed=5)
    s2 = generate.generate(torn, 1 << 20, seed=5, torn=True)
    with open(clean, "rb") as f1, open(torn, "rb") as f2:
        d1, d2 = f1.read(), f2.read()
    assert d2[: len(d1)] == d1 and s2["clean-size"] == s1["size"]
    tail = d2[len(d1):]
    assert b"\n" not in tail and tail.startswith(b'{"id":')
    with pytest.raises(UnicodeDecodeError):
        tail.decode("utf-8")  # cut inside a multi-byte character
