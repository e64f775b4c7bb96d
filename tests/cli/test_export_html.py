"""The HTML export opened in real headless Chromium: the rendered DOM holds the
conversation, and a screenshot is written under the test's temp dir."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def chromium(*args: str, cwd: str) -> subprocess.CompletedProcess:
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
