"""The viewer's memory on a transcript of many small lines, where it follows the number of
lines more than the bytes (docs/viewer.md, "How it is built")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request

import pytest

pytestmark = pytest.mark.slow  # a whole process, 300,000 lines
from benches.viewer_speed import one_line_messages  # noqa: E402

LINES = 300_000
#: The most the server may hold at its peak for each line of one-line messages, beyond
#: what it holds idle. Native: above what it holds (measured at 300,000 lines: 0.97 KB)
#: and below what it held while load's copy of the live conversation was kept until the
#: history was read (1.46 KB). Pure: 4.3 to 4.6 KB measured since the viewer builds the
#: side index and counts the tokens of a file it opens (the pure core's index build and
#: dataset pass hold every line's values in Python lists: 450 and 660 MB for this file),
#: so the bound there only catches a doubling; the native bound is the one that holds
#: the viewer to its figures.
PEAK_PER_LINE = {"native": 1200, "pure": 6000}


def _memory_kb(pid: int, field: str) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise AssertionError(field)


def test_the_peak_while_a_transcript_of_small_lines_is_read(tmp_path, backend_name):
    """Load's verdict replays the file into the live conversation, which the history then
    reads again: the first copy was kept until the second was done, and the peak was both."""
    if not os.path.exists("/proc/self/status"):
        pytest.skip("the memory of a process is read from /proc here")
    path = tmp_path / "small.jsonl"
    one_line_messages(str(path), LINES)
    env = dict(os.environ, LLM_AGENT_SESSION_BACKEND=backend_name)
    proc = subprocess.Popen([sys.executable, "-m", "llm_agent_session", "view", str(path), "--no-browser"],
                            stdout=subprocess.PIPE, stderr=open(tmp_path / "stderr.txt", "w"), text=True, env=env)
    try:
        url = proc.stdout.readline().strip()
        page, token = url.split("#token=")
        idle = _memory_kb(proc.pid, "VmHWM")
        request = urllib.request.Request(page.replace("/t/", "/api/transcript?t="),
                                         headers={"authorization": f"Bearer {token}"})
        for _ in range(6000):
            with urllib.request.urlopen(request, timeout=120) as r:
                info = json.loads(r.read())
            if all(info["ready"].values()):
                break
            time.sleep(0.05)
        assert info["count"] == LINES + 1 and info["live"] == LINES and info["verdict"]["text"] == "clean"
        per_line = (_memory_kb(proc.pid, "VmHWM") - idle) * 1024 / LINES
        assert per_line <= PEAK_PER_LINE[backend_name], f"{per_line:.0f} bytes a line at the peak"
    finally:
        proc.terminate()
        proc.wait()
