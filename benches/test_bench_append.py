"""Append benchmarks on a session loaded from a generated transcript: a 200-byte and a
20 KB message, a tool-dispatched + tool-settled pair, ``sync_messages`` of the
session's messages plus one, and the same on a conversation of 10,000 messages (issue #17:
the cost of a sync should follow what is new, not the conversation's length). Each beside the limit: ``os.write`` of the same, already
serialised line(s) to an ``O_APPEND`` descriptor.
"""

from __future__ import annotations

import os
from typing import Any, Dict, List

import pytest

import generate
from benchutil import tag

ROUNDS = {"append-message-200B": 3000, "append-message-20KB": 1000, "tool-pair": 1500,
          "sync-messages": 1000, "sync-messages-10k": 300}
TEN_K = 10_000
WARMUP = 20

_corpus = generate._build_corpus(__import__("random").Random("append"), 40_000)
TEXT_200 = ("Please run the tests again; the last failure (ünïcode path \"名前.rs\") "
            "looked flaky.\tIf it fails, show me the full trace and stop.")
TEXT_200 = (TEXT_200 * 3)[: 200 - len('{"content":"","role":"user"}') - 8]
TEXT_20K = _corpus[:20_000]
ARGS = {"path": "src/replay.rs", "start": 1, "limit": 200}


def _line(type_: str, payload: Dict[str, Any]) -> bytes:
    w = generate._Writer(None, __import__("random").Random(0))
    return w.render(type_, payload)


def _payloads(op: str) -> List[bytes]:
    """The line(s) the library writes for one round of ``op``, serialised in advance."""
    if op in ("append-message-200B", "sync-messages", "sync-messages-10k"):
        return [_line("message", {"content": TEXT_200, "role": "user"})]
    if op == "append-message-20KB":
        return [_line("message", {"content": TEXT_20K, "role": "tool", "tool_call_id": "call_1"})]
    digest = generate.digest(generate.dumps(ARGS).encode("utf-8"))
    op_id = "0194f1c2-0000-7000-8000-000000000000"
    return [
        _line("tool-dispatched", {"arguments": ARGS, "arguments-digest": digest,
                                  "call-id": "call_00000001", "idempotency": None,
                                  "round": None, "run-id": None, "tool": "read_file"}),
        _line("tool-settled", {"duration": 0.125, "op-id": op_id, "outcome": "completed"}),
    ]


OPS = list(ROUNDS)


def _ten_k_session(backend: str, workdir: str) -> Any:
    """A new transcript holding 10,000 messages (written untimed), loaded."""
    from llm_agent_session import Session, assistant_message, user_message
    from benchutil import use_backend

    use_backend(backend)
    path = os.path.join(workdir, f"ten-k-{backend}.jsonl")
    if os.path.exists(path):
        os.unlink(path)
    with Session.create(path, {"bench": "sync-messages-10k"}) as s:
        for i in range(TEN_K // 2):
            s.append_message(user_message(f"question {i}: {TEXT_200[:80]}"))
            s.append_message(assistant_message(f"answer {i}: {TEXT_200[:120]}"))
    return Session.load(path)


@pytest.mark.parametrize("op", OPS)
def test_append(benchmark: Any, loaded_session: Any, workdir: str, size: int, backend: str,
                op: str) -> None:
    from llm_agent_session import tool_message, user_message

    if op == "sync-messages-10k":
        s = _ten_k_session(backend, workdir)
    else:
        s = loaded_session(backend, size)
    nbytes = sum(len(x) for x in _payloads(op))
    tag(benchmark, op, size, backend, nbytes, messages=len(s.messages),
        messages_after=len(s.messages) + (ROUNDS[op] + WARMUP if op != "tool-pair" else 0))

    if op == "append-message-200B":
        m = user_message(TEXT_200)
        fn = lambda: s.append_message(m)  # noqa: E731
    elif op == "append-message-20KB":
        m = tool_message("call_1", TEXT_20K)
        fn = lambda: s.append_message(m)  # noqa: E731
    elif op == "tool-pair":
        counter = [0]

        def fn() -> None:
            counter[0] += 1
            op_id = s.append_tool_dispatched(f"call_{counter[0]:08d}", "read_file", ARGS)
            s.append_tool_settled(op_id, "completed", duration=0.125)
    else:
        msgs = list(s.messages)
        m = user_message(TEXT_200)

        def fn() -> None:
            msgs.append(m)
            s.sync_messages(msgs)

    before = len(s.messages)
    benchmark.pedantic(fn, rounds=ROUNDS[op], iterations=1, warmup_rounds=WARMUP)
    if op != "tool-pair":
        assert len(s.messages) == before + ROUNDS[op] + WARMUP
    if op == "sync-messages-10k":
        s.close()


@pytest.mark.parametrize("op", OPS)
def test_append_limit(benchmark: Any, workdir: str, size: int, op: str) -> None:
    lines = _payloads(op)
    tag(benchmark, op, size, "limit", sum(len(x) for x in lines))
    path = os.path.join(workdir, f"raw-{op}.jsonl")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    write = os.write
    try:
        if len(lines) == 1:
            line = lines[0]
            fn = lambda: write(fd, line)  # noqa: E731
        else:
            a, b = lines

            def fn() -> None:
                write(fd, a)
                write(fd, b)

        benchmark.pedantic(fn, rounds=ROUNDS[op], iterations=1, warmup_rounds=WARMUP)
    finally:
        os.close(fd)
        os.unlink(path)
