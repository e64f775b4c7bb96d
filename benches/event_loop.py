"""AsyncSession and the event loop (issue #14): the longest stall of a 1 ms
ticker task while a big transcript loads and while 100 ``fsync=True`` appends run,
beside the same work done with the blocking ``Session`` inside the coroutine.

    python benches/event_loop.py [--size 256MB]   # prints the table; run.py includes it

A stall is how much later than asked the ticker's ``asyncio.sleep(0.001)`` woke up.
Target: no stall above 10 ms with ``AsyncSession``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
import time
from typing import Any, Awaitable, Callable, Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import generate  # noqa: E402

from llm_agent_session import Session, user_message  # noqa: E402
from llm_agent_session.aio import AsyncSession  # noqa: E402

TARGET_MS = 10.0
APPENDS = 100


async def _with_ticker(work: Callable[[], Awaitable[Any]]) -> Dict[str, float]:
    """Run `work` beside a 1 ms ticker; the ticker's longest and 99th-percentile stall."""
    stalls: List[float] = []
    done = False

    async def ticker() -> None:
        while not done:
            t0 = time.perf_counter()
            await asyncio.sleep(0.001)
            stalls.append(time.perf_counter() - t0 - 0.001)

    tick = asyncio.ensure_future(ticker())
    await asyncio.sleep(0.01)  # the ticker is running before the work starts
    stalls.clear()
    t0 = time.perf_counter()
    await work()
    elapsed = time.perf_counter() - t0
    done = True
    await tick
    stalls.sort()
    return {
        "work_s": elapsed,
        "max_ms": stalls[-1] * 1000 if stalls else 0.0,
        "p99_ms": stalls[int(len(stalls) * 0.99) - 1] * 1000 if len(stalls) > 1 else 0.0,
        "ticks": float(len(stalls)),
    }


def measure(path: str) -> Dict[str, Dict[str, float]]:
    work_dir = tempfile.mkdtemp(prefix="las-loop-")
    try:
        copy = os.path.join(work_dir, "t.jsonl")
        shutil.copyfile(path, copy)
        out: Dict[str, Dict[str, float]] = {}

        async def async_load() -> None:
            s = await AsyncSession.load(copy)
            await s.close()

        async def blocking_load() -> None:
            Session.load(copy).close()

        async def async_appends() -> None:
            async with await AsyncSession.create(os.path.join(work_dir, "a.jsonl"), {}, fsync=True) as s:
                for i in range(APPENDS):
                    await s.append_message(user_message(f"message {i} " + "x" * 150))

        async def blocking_appends() -> None:
            with Session.create(os.path.join(work_dir, "b.jsonl"), {}, fsync=True) as s:
                for i in range(APPENDS):
                    s.append_message(user_message(f"message {i} " + "x" * 150))

        for name, work in [
            ("AsyncSession.load", async_load),
            ("Session.load in the coroutine", blocking_load),
            (f"AsyncSession: {APPENDS} fsync=True appends", async_appends),
            (f"Session: {APPENDS} fsync=True appends in the coroutine", blocking_appends),
        ]:
            out[name] = asyncio.run(_with_ticker(work))
        return out
    finally:
        shutil.rmtree(work_dir, ignore_errors=True)


def table(results: Dict[str, Dict[str, float]], size_label: str) -> str:
    rows = [
        "| work | its time | ticks | longest stall | 99th percentile | target (AsyncSession) |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for name, r in results.items():
        target = ""
        if name.startswith("AsyncSession"):
            target = ("met" if r["max_ms"] <= TARGET_MS else "MISSED") + f" (<= {TARGET_MS:.0f} ms)"
        rows.append(
            f"| {name} | {r['work_s'] * 1000:,.0f} ms | {r['ticks']:,.0f} | {r['max_ms']:.2f} ms | "
            f"{r['p99_ms']:.2f} ms | {target} |"
        )
    return f"Transcript for the loads: {size_label}; a 1 ms ticker task beside the work.\n\n" + "\n".join(rows)


SECTION_START = "<!-- event-loop:start -->"
SECTION_END = "<!-- event-loop:end -->"


def section(table_text: str) -> str:
    return f"""{SECTION_START}
## AsyncSession and the event loop

`llm_agent_session.aio.AsyncSession` (issue #14) beside a task that sleeps
1 ms in a loop (`benches/event_loop.py`): a stall is how much later than asked that task
woke up. With the blocking `Session` called inside a coroutine, the loop stands still for
the whole call; with `AsyncSession` the work runs on the session's own thread. Target:
no stall above {TARGET_MS:.0f} ms. The native core releases the GIL for its byte work; on the
pure core the worker thread holds the GIL while it parses, and the interpreter's switch
interval (5 ms) bounds how long the loop waits for it.

{table_text}
{SECTION_END}"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="256MB")
    ap.add_argument("--write", action="store_true", help="replace this section of benches/RESULTS.md")
    args = ap.parse_args()
    size = generate.parse_size(args.size)
    path, _ = generate.cached(size)
    text = table(measure(path), generate.size_label(size))
    print(text)
    if args.write:
        from benchutil import replace_section

        replace_section(os.path.join(HERE, "RESULTS.md"), SECTION_START, SECTION_END, section(text))
    return 0


if __name__ == "__main__":
    sys.exit(main())
