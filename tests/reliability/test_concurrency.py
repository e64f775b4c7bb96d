"""Concurrency under load: threads appending at once, a second process knocking on a live
writer's lock, two processes repairing the same torn file at once, a viewer following a
stream through a repair. (A forked child's refused append is a rule, not a load: it is
tested once, in tests/test_write_rules.py.)"""

from __future__ import annotations

import os
import subprocess
import sys
import threading

from llm_agent_session import Session, SessionBroken, SessionLocked, user_message
from tests.reliability.support import BACKENDS, LONG, record, reference_transcript, using

COMMAND = "python tests/reliability/report.py"


def test_threads_appending_at_once(tmp_path):
    """Eight threads append messages of varied sizes, with a grants line every tenth: no
    line lost or interleaved, each thread's lines in its own order, and the live state
    what a load of the file gives (docs/durability.md: every method is safe from any thread)."""
    per_thread = 10_000 if LONG else 500
    problems = []

    def text(k: int, i: int) -> str:
        return f"t{k} {i} " + "y" * (i * 37 % 500)

    for backend in BACKENDS:
        using(backend)
        path = str(tmp_path / f"threads-{backend}.jsonl")
        s = Session.create(path, {"agent": "threads"})
        ids = [[] for _ in range(8)]
        errors = []
        barrier = threading.Barrier(8)

        def work(k: int) -> None:
            try:
                barrier.wait()
                for i in range(per_thread):
                    if i % 10 == 9:
                        s.append_grants({"thread": k, "i": i})
                    else:
                        ids[k].append(s.append_message(user_message(text(k, i))))
            except BaseException as e:  # pragma: no cover - reported below
                errors.append(repr(e))

        threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            problems.append((backend, "appends raised", errors[:3]))
        live = (list(s.messages), list(s.message_ids))
        s.close()
        with Session.load(path) as t:
            if (t.messages, t.message_ids) != live:
                problems.append((backend, "live state differs from the file"))
            if t.warnings:
                problems.append((backend, "the load warned", t.warnings))
            for k in range(8):
                mine = [m.content for m in t.messages if m.content.startswith(f"t{k} ")]
                if mine != [text(k, i) for i in range(per_thread) if i % 10 != 9]:
                    problems.append((backend, f"thread {k}'s lines out of order or missing"))
            acked = sum(ids, [])
            if len(set(acked)) != len(acked) or sorted(acked) != sorted(t.message_ids):
                problems.append((backend, "acknowledged ids missing or repeated"))
    record("Concurrency", "threads x appends (per backend)", f"8 x {per_thread}", "8 x 10,000 (long tier)", COMMAND)
    record("Concurrency", "appends lost or interleaved", len(problems), "0", COMMAND)
    assert not problems, problems


KNOCKER = r"""
import sys
from llm_agent_session import Session, SessionLocked
path, n = sys.argv[1], int(sys.argv[2])
locked = 0
for _ in range(n):
    try:
        Session.load(path).close()
    except SessionLocked:
        locked += 1
view = Session.peek(path)  # a reader needs no lock
print(locked, "error" not in view and len(view["envelopes"]) > 1)
"""


def test_second_process_is_locked_out_of_a_live_writer(tmp_path):
    tries = 1000 if LONG else 100
    problems = []
    for backend in BACKENDS:
        using(backend)
        path = str(tmp_path / f"live-{backend}.jsonl")
        s = Session.create(path, {"agent": "live"})
        stop = threading.Event()
        acked = []

        def write() -> None:
            while not stop.wait(0.0005):  # a steady writer, not a file that grows by GBs
                acked.append(s.append_message(user_message("still here")))

        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        try:
            out = subprocess.run(
                [sys.executable, "-c", KNOCKER, path, str(tries)],
                env=dict(os.environ, LLM_AGENT_SESSION_BACKEND=backend),
                capture_output=True,
                text=True,
                timeout=300,
            )
        finally:
            stop.set()
            writer.join()
            s.close()
        if out.stdout.split() != [str(tries), "True"]:
            problems.append((backend, "not SessionLocked every time, or peek failed", out.stdout, out.stderr[-300:]))
        with Session.load(path) as t:
            if set(acked) - set(t.message_ids):
                problems.append((backend, "appends lost"))
            if t.warnings:
                problems.append((backend, "the load warned", t.warnings))
    record("Concurrency", "loads by a second process during a live writer (per backend)", tries, "1,000 (long tier)", COMMAND)
    record("Concurrency", "loads that were not SessionLocked, or lost lines", len(problems), "0", COMMAND)
    assert not problems, problems


RACER = r"""
import sys
from llm_agent_session import Session, SessionLocked
try:
    with Session.load(sys.argv[1]) as s:
        print("loaded", len(s.events))
except SessionLocked:
    print("locked")
"""


def test_two_processes_repairing_the_same_torn_file(tmp_path):
    trials = 1000 if LONG else 40
    torn = reference_transcript()[:-7]
    with open(tmp_path / "ref.jsonl", "wb") as f:
        f.write(torn)
    using(BACKENDS[0])
    Session.load(str(tmp_path / "ref.jsonl")).close()
    repaired = open(tmp_path / "ref.jsonl", "rb").read()
    damaged = 0
    problems = []
    for n in range(trials):
        backend = BACKENDS[n % len(BACKENDS)]
        path = str(tmp_path / f"race-{n}.jsonl")
        with open(path, "wb") as f:
            f.write(torn)
        env = dict(os.environ, LLM_AGENT_SESSION_BACKEND=backend)
        racers = [
            subprocess.Popen([sys.executable, "-c", RACER, path], env=env, stdout=subprocess.PIPE, text=True)
            for _ in range(2)
        ]
        said = [r.communicate(timeout=60)[0].strip() for r in racers]
        if open(path, "rb").read() != repaired or os.path.exists(path + ".repair"):
            damaged += 1
            problems.append((n, "file damaged", said))
        if not any(x.startswith("loaded") for x in said):
            problems.append((n, "neither loaded", said))
    record("Concurrency", "two processes loading the same torn file at once", trials, "1,000 (long tier)", COMMAND)
    record("Concurrency", "files damaged", damaged, "0", COMMAND)
    assert not problems, problems[:5]


STREAM = r"""
import sys, time
from llm_agent_session import Session, user_message
path, n = sys.argv[1], int(sys.argv[2])
s = Session.load(path)
for i in range(n):
    s.append_message(user_message(f"stream {i} " + "s" * (i % 300)))
s.close()
print("done", flush=True)
"""


def test_viewer_follows_a_stream_through_a_repair(tmp_path):
    rounds = 10_000 if LONG else 500
    problems = []
    changed_by_peek = not_prefix = 0
    restarted_after_repair = False
    for backend in BACKENDS:
        using(backend)
        path = str(tmp_path / f"follow-{backend}.jsonl")
        with open(path, "wb") as f:
            f.write(reference_transcript()[:-7])  # a torn tail: the writer's load repairs it
        env = dict(os.environ, LLM_AGENT_SESSION_BACKEND=backend)
        first = Session.peek(path)
        seen = [e.id for e in first["envelopes"]]
        end, identity = first["end"], first["identity"]
        before = open(path, "rb").read()
        writer = subprocess.Popen([sys.executable, "-c", STREAM, path, str(rounds)], env=env, stdout=subprocess.PIPE, text=True)
        restarted = False
        while writer.poll() is None or not restarted or end < os.path.getsize(path):
            view = Session.peek(path, offset=end, identity=identity)
            if view["restarted"]:
                restarted = True
                seen = []
            seen += [e.id for e in view["envelopes"]]
            end, identity = view["end"], view["identity"]
            if writer.poll() is not None and end >= os.path.getsize(path):
                break
        writer.wait()
        final = [e.id for e in Session.peek(path)["envelopes"]]
        if seen != final[: len(seen)] or len(seen) != len(final):
            not_prefix += 1
            problems.append((backend, "followed envelopes are not the final file", len(seen), len(final)))
        restarted_after_repair = restarted_after_repair or restarted
        if not restarted:
            problems.append((backend, "peek did not restart after the repair renamed a new file in"))
        # peek never writes: its own file's bytes before the writer started are what a peek left
        if before != reference_transcript()[:-7]:
            changed_by_peek += 1
    record("Concurrency", "peeks following a write stream through a repair (per backend)", f"about {rounds} appends", "10,000 (long tier)", COMMAND)
    record("Concurrency", "followed envelopes not a prefix of the final file", not_prefix, "0", COMMAND)
    record("Concurrency", "files changed by peek", changed_by_peek, "0", COMMAND)
    assert not problems, problems
