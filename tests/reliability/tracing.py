"""Real children under strace: the syscalls an operation makes, and faults injected into them.

The child sets itself up (imports, opening a session), then waits for strace to attach.
What strace logs around the operation is found by what it is, never by position: the
child's wait (a `readv` on stdin) is logged only when strace attached before the child
got into it, which a busy machine makes common. So the child marks where the operation
starts and ends with a syscall no operation makes (`readlink` of a marker name), and the
operation is what lies between the two marks. `when=` counts per name from the attach:
no name before the start mark may be one the operation uses, or the counts would shift.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from typing import Dict, List, Optional

STRACE = shutil.which("strace")

# Where the operation starts and ends, as strace logs them: a readlink of a name that does
# not exist (ENOENT), a syscall no operation of the library makes.
START_MARK = "llm-agent-session-trace-starts-here"
END_MARK = "llm-agent-session-trace-ends-here"

CHILD = r"""
import os, sys
from llm_agent_session import Session, user_message
path, op = sys.argv[1], sys.argv[2]


def mark(name):
    try:
        os.readlink(name)
    except FileNotFoundError:
        pass


session = Session.load(path, fsync=True) if op in ("close", "append") else None
print("ready", flush=True)
os.readv(0, [bytearray(1)])  # strace attaches around this wait (no operation calls readv)
mark("%(start)s")
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
    said = f"raised {type(e).__name__} {getattr(e, 'errno', None)}\n"
else:
    said = "done\n"
mark("%(end)s")
os.write(1, said.encode())
""" % {"start": START_MARK, "end": END_MARK}


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
    """The syscalls the operation makes, in order: those strace logged between the child's
    start and end marks."""
    assert run_traced(op, path, backend, None, log) == "done"
    before: List[str] = []
    names: List[str] = []
    place = before
    with open(log) as f:
        for row in f:
            if f'"{START_MARK}"' in row:
                place = names
            elif f'"{END_MARK}"' in row:
                break
            else:
                m = _CALL.match(row)
                if m:
                    place.append(m.group(1))
        else:
            raise AssertionError(f"{log}: strace logged no end mark; the operation's syscalls are unknown")
    assert place is names, f"{log}: strace logged no start mark; the operation's syscalls are unknown"
    # strace's `when=` counts from the attach: a name before the start mark that the
    # operation also makes would shift its counts, and by a different amount in each run.
    assert not set(before) & set(names), (before, names)
    # Waits on a lock or the GIL come and go with the machine's load: a kill point
    # counted on one of them may never come again in the next run.
    return [n for n in names if n not in _NOT_DETERMINISTIC]


_NOT_DETERMINISTIC = frozenset({"futex", "sched_yield", "nanosleep", "clock_nanosleep"})


def kill_points(calls: List[str]) -> List[str]:
    """strace counts `when=` per syscall name: the k-th call of a name is the i-th overall."""
    seen: Dict[str, int] = {}
    points = []
    for name in calls:
        seen[name] = seen.get(name, 0) + 1
        points.append(f"{name}:signal=SIGKILL:when={seen[name]}")
    return points
