"""``dataset --jobs N`` killed with SIGKILL takes its worker processes with it: none stays
behind holding memory and the staging directory's lock, and the next export removes
that staging directory and writes what a fresh export writes. Real processes, a real
``kill -9``; on Linux through the kernel (PR_SET_PDEATHSIG), and with the portable
fallbacks forced (LLM_AGENT_SESSION_PORTABLE=1), through the workers' watch on their parent."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from typing import Any, List

import pytest

import llm_agent_session
from benches.generate import generate
from llm_agent_session.dataset import export
from tests.support.dataset import all_tables

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="finds the workers through /proc")]


@pytest.fixture(autouse=True)
def backend_name() -> str:
    """What is under test is the process pool, the same on both cores: one run."""
    return llm_agent_session.backend()


def children(pid: int) -> List[int]:
    """The live (not zombie) processes whose parent is `pid`."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        state, ppid = stat.rsplit(")", 1)[1].split()[:2]
        if int(ppid) == pid and state != "Z":
            found.append(int(name))
    return found


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_for(what: Any, seconds: float = 120) -> Any:
    """`what()` once it is true; fails the test if it stays false for `seconds` (a bound
    against hanging forever, not a measure: nothing here is timed)."""
    deadline = time.monotonic() + seconds
    while True:
        got = what()
        if got:
            return got
        assert time.monotonic() < deadline, f"still not {what.__doc__}"
        time.sleep(0.02)


@pytest.mark.parametrize("portable", ["0", "1"])
def test_workers_die_with_a_killed_export_and_the_next_one_cleans_up(tmp_path: Any, portable: str,
                                                                    backend_name: str) -> None:
    src, out = tmp_path / "src", str(tmp_path / "out")
    os.makedirs(src)
    for i in range(8):  # several buckets, each a few seconds of work for a worker
        generate(str(src / f"t{i}.jsonl"), 6 << 20, seed=40 + i)
    env = dict(os.environ, LLM_AGENT_SESSION_BACKEND=backend_name, LLM_AGENT_SESSION_PORTABLE=portable,
               PYTHONDONTWRITEBYTECODE="1")
    run = subprocess.Popen([sys.executable, "-m", "llm_agent_session", "dataset", str(src), out, "--jobs", "2"],
                           env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    workers: List[int] = []
    try:
        def two_workers() -> List[int]:
            """two workers"""
            found = children(run.pid)
            return found if len(found) >= 2 else []

        workers = wait_for(two_workers)

        def writing() -> bool:
            """a worker writing Parquet in the staging directory"""
            staging = [n for n in os.listdir(out) if n.startswith(".staging-")] if os.path.isdir(out) else []
            return any(name.endswith(".parquet") for s in staging
                       for _, _, names in os.walk(os.path.join(out, s)) for name in names)

        wait_for(writing)
        assert run.poll() is None, "the export finished before it could be killed: give it more to do"
        os.kill(run.pid, signal.SIGKILL)
        run.wait(60)

        def all_gone() -> bool:
            """every worker gone"""
            return not any(alive(w) for w in workers)

        wait_for(all_gone, 60)
    finally:
        if run.poll() is None:
            run.kill()
        for w in workers:  # what the test started, should it fail: not left running
            if alive(w):
                os.kill(w, signal.SIGKILL)
    assert [n for n in os.listdir(out) if n.startswith(".staging-")]  # what the killed run left
    export(str(src), out, jobs=2)
    assert not [n for n in os.listdir(out) if n.startswith(".staging-")]
    fresh = str(tmp_path / "fresh")
    export(str(src), fresh)
    assert all_tables(out) == all_tables(fresh)
