"""``llm-agent-session import`` as a real process (issue #16): per-file lines, exit codes,
--help with the default source locations, JSON reports, and no rich needed."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.support.cli import child_env
from tests.support.import_fixtures import claude_code_session, claude_code_subagent, codex_rollout, write  # noqa: E402


def test_help_names_the_default_source_locations(cli):
    done = cli("import", "--help")
    assert done.returncode == 0
    assert "~/.claude/projects/<project>/<session-uuid>.jsonl" in done.stdout
    assert "~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl" in done.stdout
    assert "import" in cli("--help").stdout


def test_tree_import_lines_exit_codes_and_json(cli, tmp_path):
    root = tmp_path / "projects"
    write(str(root / "p" / "s1.jsonl"), claude_code_session())
    write(str(root / "p" / "s1" / "subagents" / "agent-x.jsonl"), claude_code_subagent())
    bad = write(str(root / "q" / "s2.jsonl"), "whatever\n")
    out = tmp_path / "out"
    os.makedirs(out / "q")
    write(str(out / "q" / "s2.jsonl"), "someone else's file\n")  # not an import: refused, untouched
    done = cli("import", "claude-code", str(root), str(out))
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("imported  ") and "s1.jsonl" in lines[0]
    assert lines[1].strip().startswith("imported") and "agent-x.jsonl" in lines[1]
    assert lines[2].startswith("failed    ") and bad in lines[2] and "choose a new OUT" in lines[2]
    assert lines[-1] == "3 transcript(s): 2 imported, 1 failed"
    assert (out / "q" / "s2.jsonl").read_text() == "someone else's file\n"
    os.unlink(out / "q" / "s2.jsonl")
    done = cli("import", "claude-code", str(root), str(out), "--json")
    assert done.returncode == 0, done.stderr
    reports = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["status"] for r in reports] == ["unchanged", "imported"]
    assert not [k for r in reports for k in r if k.startswith("_")]  # (an importer's own notes stay inside)
    assert reports[1]["malformed"] == [{"line": 1, "offset": 0, "reason": "Expecting value: line 1 column 1 (char 0)"}]
    assert cli("check", str(out / "p" / "s1.jsonl")).returncode == 0


def test_jobs_import_a_tree_in_processes_with_the_same_result(cli, tmp_path):
    root = tmp_path / "projects"
    for n in range(3):
        write(str(root / "p" / f"s{n}.jsonl"), claude_code_session())
    write(str(root / "p" / "s0" / "subagents" / "agent-x.jsonl"), claude_code_subagent())
    write(str(root / "q" / "bad.jsonl"), "whatever\n")
    one = cli("import", "claude-code", str(root), str(tmp_path / "one"), "--json")
    two = cli("import", "claude-code", str(root), str(tmp_path / "two"), "--json", "--jobs", "2")
    assert one.returncode == two.returncode == 0, two.stderr

    def shape(done, out):
        reports = [json.loads(line) for line in done.stdout.splitlines()]
        flat = []
        while reports:
            r = reports.pop(0)
            flat.append((os.path.relpath(r["out"], out), r["status"], r["types"], r["malformed"]))
            reports[:0] = r["transcripts"]
        return flat

    assert shape(two, tmp_path / "two") == shape(one, tmp_path / "one")
    assert len(shape(one, tmp_path / "one")) == 5  # 4 session files, one subagent
    for r in shape(two, tmp_path / "two"):
        assert cli("check", str(tmp_path / "two" / r[0])).returncode == 0
    bad = cli("import", "claude-code", str(root), str(tmp_path / "three"), "--jobs", "0")
    assert bad.returncode == 2 and "expected a number >= 1, not 0" in bad.stderr


def test_single_file_into_a_directory_and_a_missing_source(cli, tmp_path):
    src = write(str(tmp_path / "rollout-1.jsonl"), codex_rollout())
    os.makedirs(tmp_path / "out")
    done = cli("import", "codex", src, str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out" / "rollout-1.jsonl").exists()
    done = cli("import", "codex", str(tmp_path / "nope.jsonl"), str(tmp_path / "o.jsonl"))
    assert done.returncode == 1 and "no such file" in done.stderr and "~/.codex/sessions" in done.stderr
    assert cli("import", "gemini", src, str(tmp_path / "o.jsonl")).returncode == 2


def test_works_without_rich(backend_name, tmp_path):
    root = tmp_path / "projects"
    write(str(root / "p" / "s1.jsonl"), claude_code_session())
    code = ("import sys; sys.modules['rich'] = None; from llm_agent_session.cli import main; "
            "sys.exit(main(sys.argv[1:]))")
    done = subprocess.run([sys.executable, "-c", code, "import", "claude-code", str(root), str(tmp_path / "out")],
                          env=child_env(backend_name, {"FORCE_COLOR": "1", "LLM_AGENT_SESSION_PROGRESS_DELAY": "0"}),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "1 transcript(s): 1 imported" in done.stdout and "\x1b[" not in done.stdout


def test_a_fifo_in_the_tree_fails_without_a_traceback_or_a_hang(cli, tmp_path):
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this platform")
    root = tmp_path / "sessions"
    write(str(root / "2025" / "rollout-1.jsonl"), codex_rollout())
    write(str(root / "rollout-2.jsonl"), codex_rollout())
    os.mkfifo(root / "fifo.jsonl")
    done = cli("import", "codex", str(root), str(tmp_path / "out"))
    assert done.returncode == 1
    assert "Traceback" not in done.stderr + done.stdout
    assert "fifo.jsonl: " in done.stdout and "a FIFO, not a regular file" in done.stdout
    assert done.stdout.splitlines()[-1] == "3 transcript(s): 2 imported, 1 failed"
