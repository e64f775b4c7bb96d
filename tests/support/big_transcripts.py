"""A big transcript written by the library's own Session API, with every line type there
is (``build``): for the dataset's tests of big transcripts, and to make bigger ones by
hand."""

from __future__ import annotations

import json
import os
import random
from typing import Any, Dict, List

from llm_agent_session import Session, assistant_message, tool_message, user_message
from llm_agent_session.canonical import dumps, envelope_line, new_id, now_ts
from llm_agent_session.messages import Message

from tests.support import import_fixtures as fx
from tests.support.cli import call

# Text the tool results are cut from: code, logs, prose in other scripts, and what JSON
# escapes (quotes, backslashes, tabs, control characters, U+2028/U+2029).
_PIECES = (
    "def parse(line: str) -> dict:\n    return json.loads(line)\n",
    "ERROR test_dates.py::test_month - AssertionError: 13 != 1\n",
    '{"path": "src/tail.rs", "line": 42, "msg": "unexpected \\"}\\""}\n',
    "C:\\Users\\dev\\project\\src\\main.rs\t// a Windows path\n",
    "日本語のログ: テストが失敗しました。",
    "Ünïcödé prose — ça marche, naïve café. ",
    "Привет, мир! Γειά σου κόσμε. مرحبا بالعالم ",
    "emoji 🚀🔥✅ and a line separator \u2028 and a paragraph one \u2029 ",
    "bell \x07 and escape \x1b[31m red \x1b[0m and NUL-free \x01\x02 controls\n",
)


def _text(rng: random.Random, n: int) -> str:
    out: List[str] = []
    size = 0
    while size < n:
        piece = rng.choice(_PIECES)
        out.append(piece)
        size += len(piece)
    return "".join(out)[:n]


def raw_line(path: str, type_: str, payload: Dict[str, Any]) -> str:
    """An envelope of any type (one the API does not write: an unknown type, a second
    session-meta) appended as a writer serialises it; the file must not be open."""
    id_ = new_id()
    with open(path, "ab") as f:
        f.write(envelope_line(id_, type_, now_ts(), dumps(payload)))
    return id_


def build(path: str, size: int, seed: int = 1) -> None:
    """Write (or go on writing) `path` with the Session API until it holds `size` bytes.

    A new file starts as an import of a Claude Code session (its ``import-checkpoint``
    line, a rewind, a compaction, a call nothing answered). Then, in segments of about
    8 MiB (each a ``Session.load``, and between them lines of an unknown type and a
    second ``session-meta``, written by hand): turns of tool calls settled completed,
    failed or outcome-unknown, one answered and never settled, one settled and never
    answered, run-context whose sections repeat, grants, elisions, rewinds (one by
    ``sync_messages``), compactions, messages with content parts and extras, and the
    calls a crash interrupted answered. It ends with one call dispatched and one answered
    but not settled: two pending operations."""
    rng = random.Random(f"{seed}:{os.path.getsize(path) if os.path.exists(path) else 0}")
    if not os.path.exists(path):
        source = fx.write(path + ".claude-code", fx.claude_code_session())
        from llm_agent_session.importers import claude_code

        report = claude_code.import_transcript(source, path)
        assert report["status"] == "imported", report
        os.remove(source)
    turn = 0
    while os.path.getsize(path) < size:
        segment_end = min(size, os.path.getsize(path) + (8 << 20))
        with Session.load(path) as s:
            s.answer_interrupted_tool_calls()
            for op in s.pending_tool_operations():  # a result recorded, not settled: settle it now
                s.append_tool_settled(op.op_id, "completed", duration=0.1)
            while os.path.getsize(path) < segment_end:
                turn += 1
                _turn(s, rng, turn)
            _ending(s, rng, turn)
        raw_line(path, "x-telemetry", {"turn": turn, "tokens": rng.randint(1, 10**6), "note": _text(rng, 200)})
        raw_line(path, "session-meta", {"agent": "not-the-first-meta", "turn": turn})


def _turn(s: Session, rng: random.Random, turn: int) -> None:
    if turn % 25 == 1:
        s.append_run_context({"tool-guide": "Use the tools with care.", "repo-map": f"map v{turn // 100}\n" +
                              _text(random.Random(turn // 100), 3000), "open-files": _text(rng, 500)},
                             facts=[("cwd", "/home/dev/project"), ("turn", turn), ("budget", {"usd": 4.5})])
    if turn % 40 == 7:
        s.append_grants({"fs.read": ["/home/dev/**"], "shell": {"allow": ["pytest", "git"][: 1 + turn % 2]},
                         "revision": turn})
    if turn % 9 == 0:
        s.append_message(user_message([{"type": "text", "text": "Look at this: " + _text(rng, 300)},
                                       {"type": "image_url", "image_url": {"url": "data:image/png;base64," + fx.PNG}}]))
    else:
        s.append_message(user_message("Next: " + _text(rng, rng.randint(40, 600))), extra={"client": "tui"})
    calls = [(f"call_{turn}_{k}", rng.choice(("bash", "grep", "edit", "read_file"))) for k in range(rng.randint(1, 3))]
    s.append_message(assistant_message(None if rng.random() < 0.6 else "Let me look. " + _text(rng, 200),
                                       [call(cid, tool, json.dumps({"q": cid})) for cid, tool in calls]),
                     extra={"model": "m-built", "finish-reason": "tool_calls"})
    for cid, tool in calls:
        op = s.append_tool_dispatched(cid, tool, {"q": cid}, run_id=f"run-{turn}", round=turn % 4)
        r = rng.random()
        if r < 0.03:  # settled, never answered: an open operation whose row a later answer changes
            s.append_tool_settled(op, "completed", duration=0.2)
            continue
        s.append_message(tool_message(cid, _text(rng, min(int(rng.lognormvariate(8, 1)), 60_000))))
        if r < 0.12:
            s.append_tool_settled(op, "failed", duration=1.5, error="exit status 1")
        elif r < 0.17:
            s.resolve_tool_operation(op, reason="the tool timed out")
        else:
            s.append_tool_settled(op, "completed", duration=round(rng.uniform(0.01, 30), 3),
                                  result_digest="sha256:" + "ab" * 32)
    s.append_message(Message("assistant", "Done. " + _text(rng, rng.randint(100, 1500)), depth=turn % 3)
                     if turn % 50 == 0 else assistant_message("Done. " + _text(rng, rng.randint(100, 1500))),
                     extra={"finish-reason": "stop", "usage": {"input": turn, "output": 7}})
    if turn % 5:
        return
    ids, messages = s.message_ids, s.messages  # built for the call: now and then
    if turn % 30 == 0:
        old = [i for i, m in zip(ids[:-20], messages[:-20]) if m.role == "tool" and isinstance(m.content, str)
               and not m.content.startswith("[elided")][:3]
        if old:
            s.append_elision([(i, f"[elided {n}]") for n, i in enumerate(old)])
    if turn % 35 == 0:
        users = [k for k, m in enumerate(messages) if m.role == "user"]
        if len(users) > 2:
            s.append_rewind(ids[users[-1] - 1])  # the last turn undone
    if turn % 70 == 5:  # a run that went back on its last answer: sync_messages writes the rewind
        s.sync_messages(list(messages[:-1]) + [assistant_message("Another answer.")], allow_rewind=True)
    if turn % 150 == 0 and len(ids) > 10:
        s.append_compaction("Summary so far: " + _text(rng, 1500), ids[int(len(ids) * 0.7)],
                            rng.randint(50_000, 90_000), rng.randint(1000, 5000), fallback=turn % 300 == 0)


def _ending(s: Session, rng: random.Random, turn: int) -> None:
    s.append_message(user_message("One more."))
    s.append_message(assistant_message(None, [call(f"end_{turn}_a", "bash", "{}"), call(f"end_{turn}_b", "bash", "{}")]))
    s.append_tool_dispatched(f"end_{turn}_a", "bash", {})
    s.append_message(tool_message(f"end_{turn}_a", _text(rng, 500)))  # result-recorded
    s.append_tool_dispatched(f"end_{turn}_b", "bash", {})  # dispatched
