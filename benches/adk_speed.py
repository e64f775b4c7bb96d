"""Google ADK's session services side by side (issue #36): TranscriptSessionService
against ADK's own SqliteSessionService, on the same events.

    python benches/adk_speed.py [--events 100000] [--sessions 10000] [--write]

* ``get_session(num_recent_events=k)`` on one session of `--events` small events (k = 10
  and 100), and the whole session without a config: the median of several calls.
  Goal: the transcript service takes at most half of SQLite's time.
* ``append_event`` on a fresh session: median and 99th percentile of 1,000 appends
  (SQLite at its defaults, whose commits are flushed to the disk; the transcript
  service both without and with ``fsync=True``). Goal: no slower than SQLite.
* ``list_sessions`` over `--sessions` sessions of 4 events each: what it reads per
  session is the sidecar and the one line holding the session's state.

The big SQLite session and SQLite's fleet are filled by inserting the very rows its
``append_event`` writes (``event.model_dump_json(exclude_none=True)``), in one
transaction; the transcript service's by its own ``append_event`` (its rate is
reported). Nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from typing import Any, Awaitable, Callable, Dict, List, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from google.adk.events.event import Event  # noqa: E402
from google.adk.events.event_actions import EventActions  # noqa: E402
from google.adk.sessions.base_session_service import GetSessionConfig  # noqa: E402
from google.adk.sessions.sqlite_session_service import SqliteSessionService  # noqa: E402
from google.genai import types  # noqa: E402

import llm_agent_session  # noqa: E402
from llm_agent_session.integrations.adk import TranscriptSessionService  # noqa: E402

SECTION_START = "<!-- adk:start -->"
SECTION_END = "<!-- adk:end -->"
APP, USER = "bench", "user"


def small_event(i: int) -> Event:
    """A small event, as a chat of short turns makes them: alternating user and model text."""
    role = "user" if i % 2 == 0 else "model"
    return Event(
        invocation_id=f"inv-{i // 2}",
        author="user" if role == "user" else "agent",
        content=types.Content(role=role, parts=[types.Part(text=f"message {i}: " + "lorem ipsum " * 4)]),
        actions=EventActions(state_delta={"turn": i} if i % 100 == 0 else {}),
        timestamp=1_700_000_000.0 + i,
    )


def median_time(call: Callable[[], Awaitable[Any]], repeats: int) -> float:
    async def go() -> List[float]:
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            await call()
            times.append(time.perf_counter() - t0)
        return times

    return statistics.median(asyncio.run(go()))


def fill_sqlite(db: str, sessions: Dict[str, List[Event]]) -> None:
    """Insert the rows SqliteSessionService's create_session and append_event write, in
    one transaction (its schema made by the service itself)."""
    service = SqliteSessionService(db)
    asyncio.run(service.get_session(app_name=APP, user_id=USER, session_id="-"))  # creates the tables
    con = sqlite3.connect(db)
    with con:
        for sid, events in sessions.items():
            state = {k: v for e in events for k, v in e.actions.state_delta.items()}
            con.execute("INSERT INTO sessions (app_name, user_id, id, state, create_time, update_time) VALUES (?, ?, ?, ?, ?, ?)",
                        (APP, USER, sid, json.dumps(state), events[0].timestamp, events[-1].timestamp))
            con.executemany(
                "INSERT INTO events (id, app_name, user_id, session_id, invocation_id, timestamp, event_data) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [(e.id, APP, USER, sid, e.invocation_id, e.timestamp, e.model_dump_json(exclude_none=True)) for e in events],
            )
    con.close()


def fill_transcripts(root: str, sessions: Dict[str, List[Event]]) -> float:
    """Append through the service; returns the appends per second."""

    async def go() -> int:
        n = 0
        async with TranscriptSessionService(root, max_open=8) as service:
            for sid, events in sessions.items():
                made = await service.create_session(app_name=APP, user_id=USER, session_id=sid)
                for e in events:
                    await service.append_event(made, e)
                    n += 1
                await service.release(app_name=APP, user_id=USER, session_id=sid)
        return n

    t0 = time.perf_counter()
    n = asyncio.run(go())
    return n / (time.perf_counter() - t0)


def append_latencies(make: Callable[[], Any], n: int) -> Tuple[float, float]:
    """Median and 99th percentile of `n` appends of small events to a fresh session."""

    async def go() -> List[float]:
        service = make()
        made = await service.create_session(app_name=APP, user_id=USER, session_id="appends")
        times = []
        for i in range(n):
            e = small_event(i)
            e.timestamp = time.time()
            t0 = time.perf_counter()
            await service.append_event(made, e)
            times.append(time.perf_counter() - t0)
        if hasattr(service, "close"):
            await service.close()
        return times

    times = sorted(asyncio.run(go()))
    return statistics.median(times), times[int(len(times) * 0.99) - 1]


def ms(x: float) -> str:
    return f"{x * 1000:.2f} ms" if x < 1 else f"{x:.2f} s"


def measure(events: int, fleet: int, work: str) -> List[Tuple[str, str, str, str]]:
    rows: List[Tuple[str, str, str, str]] = []
    one = {"big": [small_event(i) for i in range(events)]}
    sqlite_db = os.path.join(work, "adk.db")
    root = os.path.join(work, "transcripts")
    fill_sqlite(sqlite_db, one)
    rate = fill_transcripts(root, one)
    sqlite = SqliteSessionService(sqlite_db)
    transcripts = TranscriptSessionService(root)
    for k in (10, 100):
        config = GetSessionConfig(num_recent_events=k)
        theirs = median_time(lambda: sqlite.get_session(app_name=APP, user_id=USER, session_id="big", config=config), 7)
        ours = median_time(lambda: transcripts.get_session(app_name=APP, user_id=USER, session_id="big", config=config), 7)
        rows.append((f"get_session(num_recent_events={k}), {events:,} events", ms(ours), ms(theirs), f"{ours / theirs:.3f}x (goal <= 0.5x)"))
    theirs = median_time(lambda: sqlite.get_session(app_name=APP, user_id=USER, session_id="big"), 3)
    ours = median_time(lambda: transcripts.get_session(app_name=APP, user_id=USER, session_id="big"), 3)
    rows.append((f"get_session(), all {events:,} events", ms(ours), ms(theirs), f"{ours / theirs:.2f}x"))
    asyncio.run(transcripts.close())

    for label, make in (("append_event, fsync=False", lambda: TranscriptSessionService(os.path.join(work, "a1"))),
                        ("append_event, fsync=True", lambda: TranscriptSessionService(os.path.join(work, "a2"), fsync=True))):
        mine = append_latencies(make, 1000)
        theirs_ = append_latencies(lambda: SqliteSessionService(os.path.join(work, f"a-{label[-4:]}.db")), 1000)
        rows.append((f"{label}: median, p99 of 1,000", f"{ms(mine[0])}, {ms(mine[1])}", f"{ms(theirs_[0])}, {ms(theirs_[1])}",
                     f"{mine[0] / theirs_[0]:.2f}x (goal <= 1x)"))

    many = {f"s{i:05d}": [small_event(j) for j in range(4)] for i in range(fleet)}
    fleet_db = os.path.join(work, "fleet.db")
    fleet_root = os.path.join(work, "fleet")
    fill_sqlite(fleet_db, many)
    fleet_rate = fill_transcripts(fleet_root, many)
    sqlite = SqliteSessionService(fleet_db)
    transcripts = TranscriptSessionService(fleet_root)
    theirs = median_time(lambda: sqlite.list_sessions(app_name=APP), 3)
    ours = median_time(lambda: transcripts.list_sessions(app_name=APP), 3)
    rows.append((f"list_sessions, {fleet:,} sessions (per session: its sidecar and one line)", ms(ours), ms(theirs), f"{ours / theirs:.2f}x"))
    asyncio.run(transcripts.close())
    rows.append(("appends to fill the big session / the fleet (through append_event)", f"{rate:,.0f}/s, {fleet_rate:,.0f}/s", "-", "-"))
    return rows


def main(argv: Any = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--write", action="store_true", help="replace this section of benches/RESULTS.md")
    args = parser.parse_args(argv)
    work = tempfile.mkdtemp(prefix="adk-speed-")
    try:
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
        rows = measure(args.events, args.sessions, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    from benchutil import machine_info, md_table, shown_command

    table = md_table(["figure", "TranscriptSessionService", "SqliteSessionService", "ratio"], [list(r) for r in rows])
    print(f"backend {llm_agent_session.backend()}, load average at start {load}")
    print(table)
    if args.write:
        from benchutil import replace_section

        info = machine_info()
        text = (
            f"{SECTION_START}\n## Google ADK's session services (issue #36)\n\n"
            f"`{shown_command('adk_speed.py', argv if argv is not None else sys.argv[1:])}`: {info.get('CPU')}, "
            f"{info.get('Cores')}, {info.get('Date')}, commit {info.get('Commit')}, backend "
            f"{llm_agent_session.backend()}, load average {load} at start. TranscriptSessionService against "
            "ADK's SqliteSessionService on the same small events (a chat of short turns); SQLite at its "
            "defaults (each commit flushed to the disk).\n\n" + table + f"\n{SECTION_END}"
        )
        replace_section(os.path.join(HERE, "RESULTS.md"), SECTION_START, SECTION_END, text)


if __name__ == "__main__":
    main()
