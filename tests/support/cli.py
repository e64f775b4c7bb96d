"""Helpers for the command-line tests: a transcript with every kind of line, and the
environment that starts the real command on the backend under test."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from functools import lru_cache
from typing import Dict, List, Optional, Set

from llm_agent_session import Session, assistant_message, system_message, tool_message, user_message

LONG_RESULT = "".join(f"collected line {i:05d}: ok\n" for i in range(400))  # 10,400 chars


def call(call_id: str, name: str, arguments: str) -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


@dataclass
class Transcript:
    path: str
    ids: Dict[str, str]


def build_transcript(path: str) -> Transcript:
    """Every line type: messages with extras, tool operations in every state, a compaction,
    an elision, an artifact, grants and run-context."""
    ids: Dict[str, str] = {}
    with Session.create(path, {"agent": "cli-test", "model": "m-1"}) as s:
        s.append_run_context([("identity", "You are a careful coding agent.")], facts=[("branch", "main")])
        ids["system"] = s.append_message(system_message("You are a careful coding agent."))
        ids["user1"] = s.append_message(user_message("Please fix the date parser in dates.py."))
        ids["a1"] = s.append_message(
            assistant_message("Running the tests first.", [call("call_1", "bash", '{"cmd": "pytest -x"}')]),
            extra={"finish-reason": "tool_calls"},
        )
        op1 = s.append_tool_dispatched("call_1", "bash", '{"cmd": "pytest -x"}', idempotency="read-only")
        ids["t1"] = s.append_message(tool_message("call_1", LONG_RESULT))
        s.append_tool_settled(
            op1, "completed", duration=1.5,
            artifact={"file": "op1.txt", "digest": "sha256:" + "ab" * 32, "bytes": 20000, "chars": 19000, "elided-chars": 9000},
        )
        ids["a2"] = s.append_message(
            assistant_message(None, [call("call_2", "grep", '{"pattern": "month"}')]), extra={"finish-reason": "tool_calls"}
        )
        op2 = s.append_tool_dispatched("call_2", "grep", {"pattern": "month"})
        ids["t2"] = s.append_message(tool_message("call_2", "dates.py:12: month = int(parts[0])"))
        s.append_tool_settled(op2, "failed", duration=0.5, error="exit 1")
        ids["compaction"] = s.append_compaction(
            "SUMMARY-OF-EARLIER-TURNS: the user asked for a date parser fix; pytest failed on month 13.",
            ids["t2"], 5200, 310, fallback=True,
        )
        ids["a3"] = s.append_message(assistant_message("The parser reads day-first dates as month-first."))
        ids["t3_call"] = s.append_message(
            assistant_message(None, [call("call_3", "bash", '{"cmd": "cat build.log"}')]), extra={"finish-reason": "tool_calls"}
        )
        op3 = s.append_tool_dispatched("call_3", "bash", '{"cmd": "cat build.log"}')
        ids["t3"] = s.append_message(tool_message("call_3", "SECRET-BUILD-LOG " * 200))
        s.append_tool_settled(op3, "completed", duration=2.5)
        ids["elision"] = s.append_elision([(ids["t3"], "[elided: 3,400 chars of build log]")])
        s.append_grants({"bash": {"allow": ["pytest"]}})
        ids["a4"] = s.append_message(
            assistant_message("Applying the fix and re-running.", [call("call_4", "edit", '{"file": "dates.py"}'),
                                                                  call("call_5", "bash", '{"cmd": "pytest"}')])
        )
        ids["op4"] = s.append_tool_dispatched("call_4", "edit", '{"file": "dates.py"}')
        ids["t4"] = s.append_message(tool_message("call_4", "edited dates.py"))
        ids["op5"] = s.append_tool_dispatched("call_5", "bash", '{"cmd": "pytest"}', round=3)
        ids["user_last"] = s.append_message(user_message("Thanks — ship it when green."), extra={"client": "tui"})
    return Transcript(path, ids)


@lru_cache(maxsize=None)
def declared_exit_codes() -> Dict[str, Set[int]]:
    """Each command's exit codes, as its --help lists them."""
    from llm_agent_session.cli import build_parser

    return {name: set(parser.exit_codes or ()) for name, parser in build_parser().subcommands().items()}


def child_env(backend: str, extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    env = dict(os.environ)
    env.pop("NO_COLOR", None)
    env["LLM_AGENT_SESSION_BACKEND"] = backend
    env.update(extra or {})
    return env


def cli_argv(*args: str) -> List[str]:
    return [sys.executable, "-m", "llm_agent_session", *args]


def read_pty(master: int) -> bytes:
    """Everything written to a pseudo-terminal until its last writer closes it; closes `master`."""
    chunks = []
    while True:
        try:
            data = os.read(master, 1 << 16)
        except OSError:  # EIO: every writer closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    return b"".join(chunks)
