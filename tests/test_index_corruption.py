"""Damaged, foreign and forged side indexes never change what a load returns.

A transcript's index is flipped, cut short, spliced, swapped with another's, sealed with
another cache's key, forged by someone holding this cache's key (another transcript's
index of the same size, named as this one), or left in place while the transcript is
rewritten with its size and modification time restored. Every time, on both cores,
``Session.load`` returns exactly what ``Session.load(index=False)`` returns (in every
observable ``test_index_differential.observe`` compares), and nothing crashes.
"""

from __future__ import annotations

import os
import random
import struct
from typing import Any, Callable, List, Optional, Tuple

import pytest

pytest.importorskip("llm_agent_session._native")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from llm_agent_session import _index  # noqa: E402
from llm_agent_session._pure.index_format import seal  # noqa: E402
from tests.test_index_differential import BACKENDS, core_replay, line, observe, on_backend, representative  # noqa: E402

# Where an index's header holds the transcript's identity (dev, ino, size, mtime, ctime).
IDENTITY_AT, IDENTITY_END = 32, 72


@pytest.fixture(autouse=True)
def backend_name() -> str:
    """These tests switch between both backends themselves: one run, not one per backend."""
    return "both"


@pytest.fixture(autouse=True)
def small_files_get_indexes(monkeypatch: Any) -> None:
    monkeypatch.setattr(_index, "AUTO_MIN_BYTES", 0)


def transcript(n: int, tag: str) -> bytes:
    """Every line type, `n` turns: `tag` changes every id and text, not one length."""
    out = [representative()]
    for i in range(n):
        out.append(line(f"u{tag}{i:04d}", "message", {"role": "user", "content": f"question {tag} {i:04d}"}))
        out.append(line(f"d{tag}{i:04d}", "tool-dispatched", {"call-id": f"c{i:04d}", "tool": "t"}))
        out.append(line(f"t{tag}{i:04d}", "message", {"role": "tool", "tool_call_id": f"c{i:04d}", "content": tag}))
        if i % 3:
            out.append(line(f"s{tag}{i:04d}", "tool-settled", {"op-id": f"d{tag}{i:04d}", "outcome": "completed"}))
        if i % 7 == 6:
            out.append(line(f"r{tag}{i:04d}", "run-context", {"sections": [{"name": "n", "digest": f"sha256:{tag}{i:04d}", "text": tag}]}))
    return b"".join(out)


def reseal(data: bytes, key: Optional[Tuple[int, int]] = None) -> bytes:
    """`data` with its seal made good again, under `key` (default: this cache's)."""
    body = data[:-8]
    return body + struct.pack("<Q", seal(key or _index.secret(), body))


def indexed(path: Any, data: bytes) -> bytes:
    """A new file at `path` holding `data`, and its index (written by the native core)."""
    _index.remove(path)
    if path.exists():
        path.unlink()
    path.write_bytes(data)
    made = on_backend("native", lambda: core_replay(path, key=None).index_bytes)
    assert made is not None
    return made


def assert_load_ignores_or_serves(path: Any, data: bytes, index: bytes, appended: bytes = b"") -> List[str]:
    """With `index` in the cache for a new file holding `data` (then `appended`), every
    load equals a whole read, on both cores. Returns what became of the index each time."""
    used = []
    for name in BACKENDS:
        def staged(with_index: bool) -> Any:
            if path.exists():
                path.unlink()
            path.write_bytes(data)
            with open(path, "ab") as f:
                f.write(appended)
            _index.remove(path)
            if with_index:
                # The index names the file it was made for: the new one's identity.
                st = os.stat(path)
                ident = struct.pack("<QQQqq", st.st_dev, st.st_ino, len(data), st.st_mtime_ns, st.st_ctime_ns)
                _index.write(str(path), index if index[:8] != b"LASINDEX" or len(index) < IDENTITY_END
                             else reseal_if_sealed(index[:IDENTITY_AT] + ident + index[IDENTITY_END:], index))
            return on_backend(name, lambda: observe(path, index=with_index))
        want, _ = staged(False)
        got, how = staged(True)
        assert got == want, (name, how)
        used.append(how)
    return used


def reseal_if_sealed(renamed: bytes, original: bytes) -> bytes:
    """Keep a mutated index's seal as broken as it was: reseal only if it was sound."""
    return reseal(renamed) if original[-8:] == reseal(original)[-8:] else renamed


# What a reader can be handed without this cache's key. (Bytes changed and sealed again
# with the key are its owner's own doing, like an edit of the transcript: such an index
# is held to never crashing, below.)
MUTATIONS = ("flip", "cut", "swap", "splice", "zero", "foreign-key")


def mutate(index: bytes, other: bytes, how: str, rng: random.Random) -> bytes:
    """`index` damaged the way `how` says (`other`: an index of another transcript)."""
    n = len(index)
    if how == "flip":
        out = bytearray(index)
        for _ in range(rng.randint(1, 3)):
            out[rng.randrange(n)] ^= 1 << rng.randrange(8)
        return bytes(out)
    if how == "cut":
        return index[: rng.randrange(n)]
    if how == "swap":
        k = rng.randint(1, 16)
        i, j = rng.randrange(n - k), rng.randrange(n - k)
        out = bytearray(index)
        out[i : i + k], out[j : j + k] = index[j : j + k], index[i : i + k]
        return bytes(out)
    if how == "splice":  # a stretch of another index's bytes
        k = rng.randint(1, 64)
        i, j = rng.randrange(max(n - k, 1)), rng.randrange(max(len(other) - k, 1))
        return index[:i] + other[j : j + k] + index[i + k :]
    if how == "zero":  # a power loss: a page of zeros
        i = rng.randrange(n)
        return index[:i] + bytes(min(4096, n - i)) + index[i + 4096 :]
    if how == "foreign-key":  # made by another cache (another machine, another user)
        out = bytearray(index)
        out[rng.randrange(IDENTITY_END, n - 8)] ^= 1
        return reseal(bytes(out), (rng.getrandbits(64), rng.getrandbits(64)))
    # Forged with this cache's key: bytes changed, then sealed as its owner would.
    out = bytearray(index)
    for _ in range(rng.randint(1, 4)):
        out[rng.randrange(IDENTITY_END, n - 8)] = rng.randrange(256)
    return reseal(bytes(out))


def run_mutations(tmp_path: Any, seed: int, rounds: int) -> List[str]:
    rng = random.Random(seed)
    path = tmp_path / "t.jsonl"
    data = transcript(rng.randint(3, 30), "a")
    index = indexed(path, data)
    other = indexed(tmp_path / "o.jsonl", transcript(rng.randint(3, 30), "b"))
    used: List[str] = []
    for _ in range(rounds):
        how = rng.choice(MUTATIONS)
        appended = rng.choice([b"", line(f"late{rng.randrange(99)}", "message", {"role": "user"}), b'{"torn'])
        used += assert_load_ignores_or_serves(path, data, mutate(index, other, how, rng), appended)
    return used


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**32 - 1))
def test_damaged_and_forged_indexes_never_change_a_load(tmp_path_factory: Any, seed: int) -> None:
    run_mutations(tmp_path_factory.mktemp("c"), seed, rounds=4)


@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
@given(seed=st.integers(0, 2**32 - 1))
def test_hypothesis_index_corruption_never_changes_a_load(tmp_path_factory: Any, seed: int) -> None:
    run_mutations(tmp_path_factory.mktemp("c"), seed, rounds=12)


def test_hypothesis_an_index_forged_with_the_key_never_crashes(tmp_path_factory: Any) -> None:
    """Sealed again with this cache's key after random changes, an index may lie about the
    file it names; reading it must still end, without a panic, an unbounded allocation
    or a hang: a load returns or raises as for any transcript."""
    tmp_path = tmp_path_factory.mktemp("f")
    rng = random.Random(7)
    path = tmp_path / "t.jsonl"
    data = transcript(20, "a")
    index = indexed(path, data)
    other = indexed(tmp_path / "o.jsonl", transcript(9, "b"))
    for _ in range(300):
        forged = mutate(index, other, "forged-key", rng)
        for name in BACKENDS:
            path.write_bytes(data)
            _index.write(str(path), forged)
            try:
                on_backend(name, lambda: observe(path, index=True))
            except (ValueError, OSError) as e:  # a lazy read of a line that is not where it says
                assert "Panic" not in type(e).__name__


def test_an_index_of_another_transcript_of_the_same_size_is_ignored(tmp_path: Any) -> None:
    """Forged by someone with this cache's key: the index of another transcript, byte for
    byte as long, its identity set to this one's and sealed again."""
    mine, theirs = transcript(12, "a"), transcript(12, "b")
    assert len(mine) == len(theirs) and mine != theirs
    path = tmp_path / "t.jsonl"
    index = indexed(tmp_path / "other.jsonl", theirs)
    used = assert_load_ignores_or_serves(path, mine, reseal(index))
    assert used == ["ignored: the head of the file changed since it was indexed"] * 2, used
    # A valid index of the very file is used.
    assert assert_load_ignores_or_serves(path, mine, indexed(tmp_path / "same.jsonl", mine)) == ["used", "used"]


def test_a_transcript_rewritten_in_place_with_its_size_and_time_restored_is_read_whole(tmp_path: Any) -> None:
    path = tmp_path / "t.jsonl"
    data = transcript(20, "a")
    for name in BACKENDS:
        for where in (b"question a 0003", b"question a 0019", b'"content":"be'):
            index = indexed(path, data)
            _index.write(str(path), index)
            st = os.stat(path)
            changed = data.replace(where, where.upper(), 1)
            assert changed != data and len(changed) == len(data)
            with open(path, "r+b") as f:  # in place: the same inode, the same size
                f.write(changed)
            os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
            assert (os.stat(path).st_size, os.stat(path).st_mtime_ns) == (st.st_size, st.st_mtime_ns)
            got, how = on_backend(name, lambda: observe(path, index=True))
            path.write_bytes(changed)
            _index.remove(path)
            want, _ = on_backend(name, lambda: observe(path, index=False))
            assert got == want
            assert how == "ignored: the file was changed in place since it was indexed", how


def test_an_index_that_is_not_a_regular_file_or_too_big_is_not_read(tmp_path: Any) -> None:
    path = tmp_path / "t.jsonl"
    data = transcript(5, "a")
    where = _index.index_file(path)
    os.makedirs(os.path.dirname(where), exist_ok=True)

    def load(name: str, with_index: bool, plant: Callable[[], None]) -> Any:
        path.write_bytes(data)
        _index.remove(path)
        plant()
        try:
            return on_backend(name, lambda: observe(path, index=with_index))
        finally:
            if os.path.exists(where) and not os.path.isfile(where):
                os.unlink(where)

    too_big = indexed(path, data) + bytes(len(data) + 8192)
    for name in BACKENDS:
        want, _ = load(name, False, lambda: None)
        # A FIFO (opening it must not block), then an index bigger than its transcript.
        for plant in (lambda: os.mkfifo(where), lambda: _index.write(str(path), too_big)):
            got, how = load(name, True, plant)
            assert got == want and how == "none", how
