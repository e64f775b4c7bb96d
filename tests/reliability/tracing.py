"""Real children under strace: the syscalls an operation makes, and faults injected into them.

The child sets itself up (imports, opening a session), then blocks in one read; strace
attaches during it, so the counting of `when=` starts with the operation itself.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from typing import Dict, List, Optional

STRACE = shutil.which("strace")

CHILD = r"""
import os, sys
from llm_agent_session import Session, user_message
path, op = sys.argv[1], sys.argv[2]
session = Session.load(path, fsync=True) if op in ("close", "append") else None
print("ready", flush=True)
os.read(0, 1)  # strace attaches while this read blocks; counting starts after it
try:
    if op == "create":
        Session.create(path, {"agent": "traced"})
    elif op == "load":
        Session.load(path)
    elif op == "append":
        session.append_message(user_message("traced append " + "z" * 5000))
    else:
        session.close()
except Exception as e:
    os.write(1, f"raised {type(e).__name__} {getattr(e, 'errno', None)}\n".encode())
else:
    os.write(1, b"done\n")
"""


def run_traced(op: str, path: str, backend: str, inject: Optional[str], log: str) -> str:
    """Run `op` in a child under strace (attached once the child is set up).

    Returns what the child said: "done", "raised <class> <errno>", or "" if it was killed."""
    env = dict(os.environ, LLM_AGENT_SESSION_BACKEND=backend)
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, path, op],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
    )
    assert child.stdout.readline() == b"ready\n"
    argv = [STRACE, "-o", log, "-p", str(child.pid)]
    if inject:
        argv[1:1] = ["-e", f"inject={inject}"]
    tracer = subprocess.Popen(argv, stderr=subprocess.PIPE)
    assert b"attached" in tracer.stderr.readline()
    child.stdin.write(b"g")
    child.stdin.close()
    out = child.stdout.read()
    child.wait()
    tracer.wait()
    return out.decode().strip()


_CALL = re.compile(r"^(?:\d+ +)?([a-z0-9_]+)\(")


def syscalls_of(op: str, path: str, backend: str, log: str) -> List[str]:
    """The syscalls the operation makes, in order (the read it was waiting in excluded)."""
    assert run_traced(op, path, backend, None, log) == "done"
    names = []
    with open(log) as f:
        for row in f:
            m = _CALL.match(row)
            if m:
                names.append(m.group(1))
    # The first is the os.read the child blocked in; the last write is the child's own report.
    names = names[1:]
    last_write = len(names) - 1 - names[::-1].index("write")
    # Waits on a lock or the GIL come and go with the machine's load: a kill point
    # counted on one of them may never come again in the next run.
    return [n for n in names[:last_write] if n not in _NOT_DETERMINISTIC]


_NOT_DETERMINISTIC = frozenset({"futex", "sched_yield", "nanosleep", "clock_nanosleep"})


def kill_points(calls: List[str]) -> List[str]:
    """strace counts `when=` per syscall name: the k-th call of a name is the i-th overall."""
    seen: Dict[str, int] = {}
    points = []
    for name in calls:
        seen[name] = seen.get(name, 0) + 1
        points.append(f"{name}:signal=SIGKILL:when={seen[name]}")
    return points
