"""Random SIGKILL: a real writer process appends lines of random size (up to several MB,
so many kills land mid-line), printing each id as its append returns; it is killed at
a random moment; the file is loaded and appended to. Nothing acknowledged may be lost."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time

from llm_agent_session import Session, user_message
from tests.reliability.support import BACKENDS, LONG, record, using

COMMAND = "python tests/reliability/report.py"
CYCLES = 1000 if LONG else 50

WRITER = r"""
import os, random, sys
from llm_agent_session import Session, user_message
path, seed = sys.argv[1], int(sys.argv[2])
rng = random.Random(seed)
s = Session.load(path) if os.path.exists(path) else Session.create(path, {"writer": "random-kill"})
print("ready", flush=True)
while True:
    n = rng.choice([10, 200, 2000, 20000, 300000, 3000000])
    i = s.append_message(user_message("x" * rng.randrange(1, n)))
    print(i, flush=True)
"""


def test_random_sigkill(tmp_path):
    rng = random.Random(20261129)
    lost = load_failures = mid_line = kills = 0
    problems = []
    path = None
    for cycle in range(CYCLES):
        if cycle % 5 == 0:  # a fresh file now and then keeps every load small
            path = str(tmp_path / f"run-{cycle}.jsonl")
        backend = BACKENDS[cycle % len(BACKENDS)]
        env = dict(os.environ, LLM_AGENT_SESSION_BACKEND=backend)
        child = subprocess.Popen(
            [sys.executable, "-c", WRITER, path, str(cycle)], stdout=subprocess.PIPE, text=True, env=env
        )
        acked = []
        assert child.stdout.readline().strip() == "ready"
        reader = threading.Thread(target=lambda: acked.extend(l.strip() for l in child.stdout))
        reader.start()
        time.sleep(rng.uniform(0.0, 0.06))
        child.send_signal(signal.SIGKILL)
        child.wait()
        reader.join()
        kills += 1
        using(backend)
        if Session.peek(path)["pending"] > 0:
            mid_line += 1
        try:
            with Session.load(path) as s:
                ids = {e.id for e in s.events}
                missing = [a for a in acked if a not in ids]
                lost += len(missing)
                if missing:
                    problems.append((cycle, "lost", missing[:3]))
                s.append_message(user_message(f"resumed after kill {cycle}"))
        except Exception as e:
            load_failures += 1
            problems.append((cycle, "load", repr(e)))
    area = "Random SIGKILL"
    record(area, "kills", kills, f"{CYCLES} ({'long' if LONG else 'fast'} tier)", COMMAND)
    record(area, "acknowledged lines lost", lost, "0", COMMAND)
    record(area, "load failures", load_failures, "0", COMMAND)
    record(area, "kills that landed mid-line", mid_line, "reported (more is a harder test)", COMMAND)
    assert not problems, problems[:5]
