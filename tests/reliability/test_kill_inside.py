"""Kill inside the library: SIGKILL delivered at the N-th system call of `create`, of a
repairing `load` and of `close` (strace's syscall fault injection on a real child), for
every N until the operation completes (long tier; a sample of N in the fast tier)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

from typing import Dict, List, Optional

import pytest

from llm_agent_session import Session
from tests.reliability.support import BACKENDS, LONG, record, reference_transcript, using
from tests.reliability.tracing import STRACE, kill_points, run_traced, syscalls_of

COMMAND = "python tests/reliability/report.py"

TORN = reference_transcript()[:-7]  # the last line cut short: load must repair it


def prepare(op: str, path: str) -> None:
    if op in ("load", "close"):
        with open(path, "wb") as f:
            f.write(TORN)
    if op == "close":  # close acts on a clean file, so load it once (repairing) beforehand
        using(BACKENDS[-1])
        Session.load(path).close()


def files_beside(path: str) -> list:
    return sorted(os.listdir(os.path.dirname(path)))


@pytest.mark.skipif(STRACE is None, reason="strace not installed (Debian package strace)")
@pytest.mark.parametrize("op", ["create", "load", "close"])
def test_kill_at_every_syscall(tmp_path, op):
    lost = not_identical = stuck = 0
    kills = 0
    problems = []
    # What each backend's operation was seen to call, and each kill point with what the
    # child said: shown if no point killed it (the test then has no teeth).
    probed: Dict[str, List[str]] = {}
    tried = []
    for backend in BACKENDS:
        # The file a completed repair leaves: the reference for every interrupted one.
        ref = str(tmp_path / f"ref-{backend}.jsonl")
        with open(ref, "wb") as f:
            f.write(TORN)
        using(backend)
        Session.load(ref).close()
        repaired = open(ref, "rb").read()
        probe = tmp_path / f"{op}-{backend}-probe"
        probe.mkdir()
        prepare(op, str(probe / "run.jsonl"))
        probed[backend] = syscalls_of(op, str(probe / "run.jsonl"), backend, str(tmp_path / "log"))
        points = kill_points(probed[backend])
        # Every 3rd point in the fast tier, but every one where there are few (`close`
        # makes one system call; the fast tier must still kill it somewhere).
        step = 1 if LONG or len(points) < 12 else 3
        for n in range(0, len(points), step):
            case = tmp_path / f"{op}-{backend}-{n}"
            case.mkdir()
            path = str(case / "run.jsonl")
            prepare(op, path)
            before = open(path, "rb").read() if os.path.exists(path) else None
            said = run_traced(op, path, backend, points[n], os.devnull)
            tried.append((backend, points[n], said))
            if said == "done":
                continue  # this run took another path past that point (it finished)
            kills += 1
            using(backend)
            after = open(path, "rb").read() if os.path.exists(path) else None
            if op == "create":
                if after is not None and not after.endswith(b"\n"):
                    lost += 1
                    problems.append((backend, n, "half-made file at path", after[:80]))
            elif after not in (before, repaired):
                lost += 1
                problems.append((backend, n, "file is neither the original nor the repair"))
            try:
                if op == "create" and after is None:
                    Session.create(path, {"agent": "again"}).close()
                else:
                    Session.load(path).close()
                first = open(path, "rb").read()
                Session.load(path).close()
                if open(path, "rb").read() != first:
                    not_identical += 1
                    problems.append((backend, n, "second load changed the file"))
                if op != "create" and first != repaired:
                    lost += 1
                    problems.append((backend, n, "load after the kill gave other bytes than a clean repair"))
            except Exception as e:
                stuck += 1
                problems.append((backend, n, "cannot proceed", repr(e), files_beside(path)))
    area = f"Kill inside `{op}`"
    record(area, "SIGKILLs at distinct syscalls (all backends)", kills, "every syscall of the operation (long tier; every 3rd in fast)", COMMAND)
    record(area, "original bytes lost", lost, "0", COMMAND)
    record(area, "second load not byte-identical to the first", not_identical, "0", COMMAND)
    record(area, "states where neither create nor load can proceed", stuck, "0", COMMAND)
    assert kills > 0, f"no kill point was hit: the syscalls seen {probed}; the points tried {tried}"
    assert not problems, problems[:5]
