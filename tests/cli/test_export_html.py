"""The HTML export opened in real headless Chromium: the rendered DOM holds the
conversation, and a screenshot is written under the test's temp dir."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from html.parser import HTMLParser
from typing import Any, Dict

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def chromium(*args: str, cwd: str) -> subprocess.CompletedProcess:
    assert CHROMIUM is not None
    return subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-dev-shm-usage",
         f"--user-data-dir={os.path.join(cwd, 'chromium-profile')}", *args],
        capture_output=True, text=True, timeout=90, cwd=cwd,
    )


def test_html_export_is_self_contained(cli, transcript, tmp_path):
    r = cli("export", transcript.path, "--format", "html")
    assert r.returncode == 0, r.stderr
    page = r.stdout
    assert page.startswith("<!DOCTYPE html>") and "<style>" in page
    assert "http://" not in page and "https://" not in page and "<link" not in page  # no network
    assert page.count('<details class="tool-result">') == 2  # the two live tool messages
    assert "SECRET-BUILD-LOG" not in page and "&lt;script" not in page


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (apt-get install -y chromium)")
def test_html_export_renders_in_headless_chromium(cli, transcript, tmp_path):
    out = tmp_path / "run.html"
    r = cli("export", transcript.path, "--format", "html", "-o", str(out))
    assert r.returncode == 0, r.stderr
    url = out.as_uri()
    dom = chromium("--dump-dom", url, cwd=str(tmp_path))
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = dom.stdout
    for text in ("You are a careful coding agent.", "The parser reads day-first dates as month-first.",
                 "Thanks — ship it when green.", "SUMMARY-OF-EARLIER-TURNS", "[elided: 3,400 chars of build log]", "edited dates.py"):
        assert text in html, text
    assert 'class="note compaction-note"' in html and "Compaction summary" in html
    assert 'class="note elision-note"' in html and "Elided by" in html
    assert '<details class="tool-result"><summary>Tool result' in html
    assert '<article class="msg role-tool elided"' in html
    shot = tmp_path / "run.png"
    r = chromium(f"--screenshot={shot}", "--window-size=1200,2000", "--hide-scrollbars", url, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (apt-get install -y chromium)")
def test_html_export_of_the_whole_history_renders_in_headless_chromium(cli, transcript, tmp_path):
    out = tmp_path / "all.html"
    r = cli("export", transcript.path, "--format", "html", "--all", "-o", str(out))
    assert r.returncode == 0, r.stderr
    dom = chromium("--dump-dom", out.as_uri(), cwd=str(tmp_path))
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = dom.stdout
    with open(transcript.path, "rb") as f:
        ids = [json.loads(line)["id"] for line in f.read().splitlines()][1:]
    built = elements(html)
    assert [a["id"][2:] for _, a in built if a.get("id", "").startswith("m-")] == ids  # every line, in file order
    assert "Please fix the date parser in dates.py." in html and "SECRET-BUILD-LOG" in html  # compacted, elided
    assert html.count('class="note compacted-note"') == 5 and '<span class="note failed-note">failed</span>' in html
    assert [t for t, _ in built if t == "script"] == ["script"]


# ------------------------------------------------------------------ hostile payloads (issue #11)

# Each payload, if it ever ran, marks the page; "EXEC" + "UTED" is built at run time, so
# the marker appears in the DOM only if a script ran (the escaped payload text holds the two halves).
RUN = "document.documentElement.setAttribute('data-pwned','EXEC'+'UTED')"
PAYLOADS = [
    f"<script>{RUN}</script>",
    f'<img src=x onerror="{RUN}">',
    f"\"'><svg onload=\"{RUN}\">",
    f"</pre></details></article><script>{RUN}</script>",
    f"<iframe srcdoc=\"<script>parent.{RUN}</script>\"></iframe>",
    "\x1b[2J\u202e<b>bidi</b>",
]
P = "".join(PAYLOADS)


def hostile_html_transcript(path: str) -> None:
    from llm_agent_session import Session

    call: Dict[str, Any] = {"id": "call" + P, "type": "function", "function": {"name": "tool" + P, "arguments": json.dumps({"q": P})}}
    with Session.create(path, {"agent" + P: P}) as s:
        s.append_message({"role": "system" + P, "content": "compacted away", "name": "n" + P})
        s.append_compaction(P, s.message_ids[0], 10, 5)
        s.append_message({"role": "system" + P, "content": P, "name": "n" + P})
        s.append_message({"role": "user", "content": [
            {"type": "text", "text": P},
            {"type": "image_url", "image_url": {"url": f"javascript:{RUN}"}},
            {"type": "image_url", "image_url": f"javascript:{RUN}//" + P},
            {"type": "other" + P, "value": P},
        ]}, extra={"x" + P: P})
        s.append_message({"role": "assistant", "content": P, "tool_calls": [call]})
        s.append_tool_dispatched(call["id"], "tool" + P, {"q": P})
        s.append_message({"role": "tool", "tool_call_id": call["id"], "content": P * 3})
        s.append_message({"role": "tool", "tool_call_id": "c" + P, "content": P})
        s.append_elision([(s.message_ids[-1], P)])


class Elements(HTMLParser):
    """Every element and attribute the browser built."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def elements(html: str) -> list:
    parser = Elements()
    parser.feed(html)
    return parser.tags


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (apt-get install -y chromium)")
def test_html_export_runs_no_script_from_any_field(cli, tmp_path):
    path = str(tmp_path / "hostile.jsonl")
    hostile_html_transcript(path)
    out = tmp_path / "hostile.html"
    r = cli("export", path, "--format", "html", "-o", str(out))
    assert r.returncode == 0, r.stderr
    whole = tmp_path / "hostile-all.html"
    r = cli("export", path, "--format", "html", "--all", "-o", str(whole))
    assert r.returncode == 0, r.stderr

    # The detector works: the same payloads in a page that does not escape them do run.
    control = tmp_path / "control.html"
    control.write_text(f"<!DOCTYPE html><html><body>{P}</body></html>", encoding="utf-8")
    dom = chromium("--dump-dom", control.as_uri(), cwd=str(tmp_path))
    assert 'data-pwned="EXECUTED"' in dom.stdout, dom.stdout[:2000]

    for page, least in ((out, 15), (whole, 20)):  # the whole history has the compacted message and the stub's original too
        dom = chromium("--dump-dom", page.as_uri(), cwd=str(tmp_path))
        assert dom.returncode == 0, dom.stderr[-2000:]
        html = dom.stdout
        assert "EXECUTED" not in html
        built = elements(html)
        assert [t for t, _ in built if t == "script"] == ["script"]  # only the page's own
        assert not [t for t, _ in built if t in ("img", "svg", "iframe", "b", "a", "object", "embed")]
        assert not [(t, a) for t, a in built for k in a if k.startswith("on")]
        assert not [(t, a) for t, a in built for v in a.values() if v and "javascript:" in v]
        # Every payload is on the page as text, in every field: meta, roles, names, tool names,
        # call ids, arguments, content parts, image URLs, results, summaries, stubs, extras.
        shown = html.count("&lt;script&gt;")
        assert shown >= least, (page, shown)
        assert "javascript:document.documentElement" in html  # the image URL, as text
        assert "\u202e" not in html and "&lt;U+202E&gt;" in html
