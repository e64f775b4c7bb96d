"""Claude Code and Codex sessions in a real browser (Chromium, through Playwright, as
test_view_browser.py drives it), served as ``view ~/.claude/projects ~/.codex/sessions``
serves them: imported in worker processes, on the core under test. A writer in another
process appends Claude Code lines to a session open in the page, and each new message must
appear there; how long each took is printed (run with ``-s`` to see it: the goal is 2 s;
the test fails only past 10 s, a bound no healthy run comes near)."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import threading
import time

import pytest

pytestmark = pytest.mark.slow

from tests.view.test_view_browser import browser, wait_until  # noqa: E402,F401 - one Chromium, its skips

import uvicorn  # noqa: E402
from tests.support.view import build_sources  # noqa: E402

from tests.support import import_fixtures as fx  # noqa: E402
from tests.support.helpers import child_env  # noqa: E402
from llm_agent_session.view.app import app  # noqa: E402
from llm_agent_session.view.model import Viewer  # noqa: E402
from llm_agent_session.view.security import resolve_policy  # noqa: E402
from llm_agent_session.view.server import bind  # noqa: E402
from llm_agent_session.view.shelf import Roots  # noqa: E402

SESSION = "projects/-home-dev-proj/sess-1.jsonl"
ROLLOUT = "sessions/2025/09/10/rollout-2025-09-10T12-00-00-0199.jsonl"
#: The writer: Claude Code's lines of a new turn every INTERVAL seconds, each turn's time
#: printed once its lines are written and flushed.
WRITER = r"""
import json, sys, time
from tests.support import import_fixtures as fx
path, turns, interval = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
parent = "a9"
for k in range(turns):
    t = f"2025-08-20T10:00:{k:02d}.000Z"
    lines = [fx.cc_user(f"p{k}", parent, f"NEW PROMPT {k}", t),
             fx.cc_assistant(f"r{k}", f"p{k}", f"msg_new{k}", fx.tool_use(f"toolu_new{k}", "Bash", {"command": "ls"}), t),
             fx.cc_user(f"o{k}", f"r{k}", [fx.tool_result(f"toolu_new{k}", f"NEW RESULT {k}")], t)]
    with open(path, "a", encoding="utf-8") as f:
        f.write(fx.jsonl(lines))
    print(k, time.time(), flush=True)
    parent = f"o{k}"
    time.sleep(interval)
"""


@pytest.fixture
def sources_served(tmp_path, backend_name):
    """A server over a Claude Code projects folder and a Codex sessions folder, importing
    in worker processes on the core under test, as the command runs it."""
    sources = build_sources(str(tmp_path))
    sock = bind("127.0.0.1", 0)
    policy = resolve_policy("127.0.0.1", sock.getsockname()[1])
    viewer = Viewer(Roots([sources.projects, sources.sessions]), import_workers=2)
    server = uvicorn.Server(uvicorn.Config(app(viewer, policy), log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    yield {"base": f"http://127.0.0.1:{sock.getsockname()[1]}", "token": policy.token, "sources": sources,
           "env": child_env(LLM_AGENT_SESSION_BACKEND=backend_name)}
    server.should_exit = True
    thread.join(5)
    viewer.imports.close()


@pytest.fixture
def page(browser, sources_served):  # noqa: F811 - the module's browser
    context = browser.new_context(viewport={"width": 1200, "height": 800})
    p = context.new_page()
    errors = []
    p.on("pageerror", lambda e: errors.append(str(e)))
    p.goto(sources_served["base"] + "/#token=" + sources_served["token"])
    yield p
    context.close()
    assert errors == []


def shown(page, text):
    return page.evaluate("(t) => document.getElementById('layer').innerText.includes(t)", text)


def test_a_claude_code_session_in_the_page_follows_a_writer(page, sources_served):
    page.wait_for_selector(f"a.shelf-row[href='/t/{SESSION}']")
    page.click(f"a.shelf-row[href='/t/{SESSION}']")
    page.wait_for_selector("[data-envelope-id]")
    page.click("#to-end")  # at the end, what is appended scrolls into view
    turns = 8
    writer = subprocess.Popen([sys.executable, "-c", WRITER, sources_served["sources"].claude, str(turns), "0.7"],
                              stdout=subprocess.PIPE, text=True, env=sources_served["env"])
    seen = {}
    try:
        end = time.monotonic() + turns * 0.7 + 10
        while len(seen) < turns and time.monotonic() < end:
            for k in range(len(seen), turns):
                if not shown(page, f"NEW RESULT {k}"):
                    break
                seen[k] = time.time()
            time.sleep(0.02)
    finally:
        written = dict((int(k), float(t)) for k, t in (line.split() for line in writer.communicate(timeout=30)[0].split("\n")
                                                      if line))
    latencies = [seen[k] - written[k] for k in sorted(seen)]
    print(f"\nfollow latency, {len(latencies)} turns: " + ", ".join(f"{x:.2f}" for x in latencies)
          + (f" s (median {statistics.median(latencies):.2f}, max {max(latencies):.2f})" if latencies else ""))
    assert sorted(seen) == list(range(turns)), f"turns shown: {sorted(seen)} of {turns}"
    assert max(latencies) < 10


def test_a_codex_session_follows_and_an_import_made_again_is_noted(page, sources_served):
    rollout = sources_served["sources"].rollout
    page.wait_for_selector(f"a.shelf-row[href='/t/{ROLLOUT}']")
    page.click(f"a.shelf-row[href='/t/{ROLLOUT}']")
    page.wait_for_selector("[data-envelope-id]")
    page.click("#to-end")
    with open(rollout, "a", encoding="utf-8") as f:
        f.write(fx.jsonl([fx.cx_msg("assistant", "CODEX WROTE THIS", 19)]))
    wait_until(page, "document.getElementById('layer').innerText.includes('CODEX WROTE THIS')")
    with open(rollout) as f:
        text = f.read()
    with open(rollout, "w") as f:  # the rollout rewritten before what was imported: imported again
        f.write(text.replace("delete b.py", "delete c.py"))
    wait_until(page, "document.getElementById('status').textContent.includes('imported again from its first line')")
    wait_until(page, "document.getElementById('layer').innerText.includes('CODEX WROTE THIS')")
