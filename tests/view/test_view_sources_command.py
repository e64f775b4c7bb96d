"""``llm-agent-session view ~/.claude/projects`` as a command: the URL, then the sessions
imported into the cache (``LLM_AGENT_SESSION_CACHE``) and listed; ``--clear-cache``; and
exit 3, suggesting ``import``, only where a PATH holds neither transcripts nor sessions."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request

import pytest
from tests.support.view import build_sources

from tests.support import import_fixtures as fx

pytestmark = pytest.mark.slow  # whole processes


def _env(tmp_path, backend_name):
    return dict(os.environ, LLM_AGENT_SESSION_BACKEND=backend_name, LLM_AGENT_SESSION_CACHE=str(tmp_path / "cache"))


def _run(*args: str, env, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "llm_agent_session", *args], capture_output=True, text=True,
                          timeout=timeout, env=env)


def _get(url: str, token: str):
    request = urllib.request.Request(url, headers={"authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=30) as r:
        return json.loads(r.read())


def test_view_of_source_folders_lists_their_sessions_and_clear_cache_deletes_the_imports(tmp_path, backend_name):
    sources = build_sources(str(tmp_path))
    before = fx.tree_state(tmp_path / "projects")
    env = _env(tmp_path, backend_name)
    proc = subprocess.Popen([sys.executable, "-m", "llm_agent_session", "view", sources.projects, sources.sessions,
                             "--no-browser"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and "#token=" in url, proc.stderr.read()
        base, token = url.split("#token=")
        base = base.rstrip("/")
        for _ in range(600):
            shelf = _get(base + "/api/shelf", token)
            if shelf["done"]:
                break
            time.sleep(0.05)
        names = {row["name"]: row["verdict"] for row in shelf["rows"]}
        assert names == {"projects/-home-dev-proj/sess-1.jsonl": "clean", "projects/-home-dev-proj/sess-2.jsonl": "clean",
                         "projects/-home-dev-proj/sess-2/sidechains/s1.jsonl": "clean",
                         "projects/-home-dev-proj/sess-1/subagents/agent-a1b2.jsonl": "clean",
                         "sessions/2025/09/10/rollout-2025-09-10T12-00-00-0199.jsonl": "clean"}
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert fx.tree_state(tmp_path / "projects") == before
    imported = tmp_path / "cache" / "view-imports"
    files = [f for _, _, names in os.walk(imported) for f in names if f.endswith(".jsonl")]
    assert len(files) == 5
    r = _run("view", "--clear-cache", env=env)
    assert r.returncode == 0 and r.stdout.startswith(f"deleted {imported}: ") and " file(s), " in r.stdout, r.stderr
    assert not imported.exists()
    r = _run("view", "--clear-cache", env=env)
    assert r.returncode == 0 and r.stdout == f"nothing to delete: {imported} holds no imports\n"


def test_a_session_file_as_path_opens_straight_into_it(tmp_path, backend_name):
    sources = build_sources(str(tmp_path))
    env = _env(tmp_path, backend_name)
    proc = subprocess.Popen([sys.executable, "-m", "llm_agent_session", "view", sources.claude, "--no-browser"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        url = proc.stdout.readline().strip()
        assert "/t/sess-1.jsonl#token=" in url, proc.stderr.read()
        base, token = url.split("#token=")
        info = _get(base.split("/t/")[0] + "/api/transcript?t=sess-1.jsonl", token)
        assert info["title"] == "Date parser fix" and info["meta"]["source-path"] == sources.claude
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_folder_of_neither_transcripts_nor_sessions_exits_3_and_suggests_import(tmp_path, backend_name):
    if backend_name != "pure":
        pytest.skip("backend-independent: checked once, in the pure run")
    env = _env(tmp_path, backend_name)
    other = tmp_path / "other"
    fx.write(str(other / "p" / "1234.jsonl"), '{"type": "a future line", "what": 1}\n')
    r = _run("view", str(other), env=env)
    assert r.returncode == 3 and "nor a Claude Code or Codex session" in r.stderr
    assert "1 other *.jsonl file(s) there are neither" in r.stderr and "llm-agent-session import claude-code|codex" in r.stderr
    r = _run("view", str(other / "p" / "1234.jsonl"), env=env)
    assert r.returncode == 3 and "nor a Claude Code or Codex session" in r.stderr and "import" in r.stderr
    (tmp_path / "empty").mkdir()
    r = _run("view", str(tmp_path / "empty"), env=env)
    assert r.returncode == 3 and "no transcript under" in r.stderr and "import claude-code" not in r.stderr
    r = _run("view", env=env)
    assert r.returncode == 2 and "--clear-cache" in r.stderr
