"""The demo: a scripted agent run killed with SIGKILL mid-write, then picked up again.

The "model" is a deterministic script (no network). The run happens in a child
process; the parent kills it with SIGKILL while it is writing a large tool result,
then does what an agent runtime does on resume: load (which repairs the torn tail),
look at the pending tool operation, resolve it, and carry the conversation on.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional

from . import Session, assistant_message, backend, system_message, tool_message, user_message

TOOL_OUTPUT_BYTES = 64 << 20  # big enough that the kill lands inside the write


def _tool_call(call_id: str, name: str, arguments: str) -> Dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def run_child(path: str) -> None:
    """The agent run that gets killed: prints each id as soon as its append returned."""

    def said(kind: str, value: str) -> None:
        print(kind, value, flush=True)

    with Session.create(path, {"agent": "demo-agent", "model": "scripted-stand-in", "cwd": "/src/app"}) as s:
        s.append_run_context(
            [{"name": "identity", "text": "You are a careful coding agent."}, {"name": "date", "text": "2026-11-29"}],
            facts=[("branch", "main")],
        )
        said("id", s.append_message(system_message("You are a careful coding agent. Run tests before you say done.")))
        said("id", s.append_message(user_message("The test suite fails on test_parse_dates. Please fix it.")))
        call = _tool_call("call_1", "bash", '{"cmd": "pytest -x tests/test_dates.py"}')
        said("id", s.append_message(assistant_message("Let me run the failing test first.", [call]), extra={"finish-reason": "tool_calls"}))
        op = s.append_tool_dispatched("call_1", "bash", call["function"]["arguments"], idempotency="read-only")
        said("id", op)
        said("id", s.append_message(tool_message("call_1", "FAILED tests/test_dates.py::test_parse_dates - ValueError: month 13")))
        said("id", s.append_tool_settled(op, "completed", duration=1.25))
        s.append_grants({"bash": {"allow": ["pytest", "git diff"]}, "fs": {"write": ["/src/app"]}})
        call = _tool_call("call_2", "bash", '{"cmd": "python tools/regenerate_fixtures.py --all"}')
        said("id", s.append_message(assistant_message("The fixtures use day-first dates; regenerating them.", [call]), extra={"finish-reason": "tool_calls"}))
        op = s.append_tool_dispatched("call_2", "bash", call["function"]["arguments"], idempotency=None, round=2)
        said("dispatched", op)
        # The tool prints a huge log; the process is killed while that result is being written.
        log = "".join(f"regenerated fixture {i:08d}: ok ✓\n" for i in range(TOOL_OUTPUT_BYTES // 36))
        said("writing", str(len(log)))
        s.append_message(tool_message("call_2", log))
        said("id", "(the tool result was written before the kill landed)")
        time.sleep(30)


def _kill_mid_write(child: "subprocess.Popen[str]", path: str, acknowledged: List[str]) -> str:
    """Read the child's acknowledgements; SIGKILL it as soon as the big line starts to land."""
    assert child.stdout is not None
    size_at_start: Optional[int] = None
    for line in child.stdout:
        kind, _, value = line.strip().partition(" ")
        if kind in ("id", "dispatched"):
            acknowledged.append(value)
        if kind == "writing":
            size_at_start = os.stat(path).st_size
            break
    deadline = time.monotonic() + 20
    while size_at_start is not None and time.monotonic() < deadline:
        if os.stat(path).st_size > size_at_start:
            break
    child.send_signal(signal.SIGKILL)
    child.wait()
    return "killed with SIGKILL while writing a line" if size_at_start is not None else "killed"


def _show(text: str, width: int = 96) -> str:
    text = text.replace("\n", " ")
    return text if len(text) <= width else text[: width - 20] + f"... [{len(text):,} chars]"


def main(directory: Optional[str] = None) -> int:
    own = directory is None
    directory = directory or tempfile.mkdtemp(prefix="llm-agent-session-demo-")
    path = os.path.join(directory, "run.jsonl")
    print(f"llm-agent-session demo (backend: {backend()})")
    print(f"transcript: {path}\n")
    print("1. A scripted agent run starts in a child process and writes its transcript ...")
    child = subprocess.Popen(
        [sys.executable, "-m", "llm_agent_session", "_demo-child", path],
        stdout=subprocess.PIPE,
        text=True,
    )
    acknowledged: List[str] = []
    how = _kill_mid_write(child, path, acknowledged)
    size = os.stat(path).st_size
    print(f"   ... and is {how} (exit {child.returncode}); the file is {size:,} bytes.")
    print(f"   The run had been told {len(acknowledged)} appends returned.\n")

    print("2. A new process loads it (Session.load):")
    with Session.load(path) as s:
        for w in s.warnings or ["(no repair was needed: the kill landed between lines)"]:
            print("   warning:", _show(w, 150))
        ids = set(e.id for e in s.events)
        kept = [a for a in acknowledged if a in ids or a.startswith("(")]
        print(f"   acknowledged appends found in the file: {len(kept)} of {len(acknowledged)}")
        print(f"   grants carried over: {s.grants}\n")

        print("3. Tool operations that may have run (pending_tool_operations):")
        pending = s.pending_tool_operations()
        for op in pending:
            print(f"   {op.tool} {op.arguments} -> state {op.state!r}, idempotency {op.idempotency!r}")
            print("     (dispatched only: it may or may not have run; the app decides whether to retry)")
        for op in pending:
            s.resolve_tool_operation(op.op_id, "outcome-unknown", reason="agent process was killed mid-call")
            s.append_message(tool_message(op.call_id, "[interrupted: the process was killed; outcome unknown]"))
        print(f"   resolved as outcome-unknown: {len(pending)}\n")

        print("4. The run resumes and the conversation goes on:")
        s.append_message(assistant_message("The fixture run was interrupted; I will re-run it for the failing module only."))
        s.append_message(user_message("Good. Then run the test again."))
        for msg in s.messages:
            extra = f" tool_calls={[c['function']['name'] for c in msg.tool_calls]}" if msg.tool_calls else ""
            print(f"   {msg.role:>9}: {_show(str(msg.content))}{extra}")
        print(f"\n   {len(s.messages)} messages, {len(s.events)} envelopes, nothing pending: {not s.pending_tool_operations()}")
    if own:
        print(f"\n(the transcript stays at {path} for you to look at)")
    return 0


def child_main(argv: List[str]) -> int:
    run_child(argv[0])
    return 0

