"""Issue #11: nothing in a transcript can drive the terminal.

The hostile corpus (tests/support/hostile.py) puts control characters, ANSI/OSC/DCS sequences, C1
controls, bidi controls, invisible characters and rich markup into every field a
transcript has and into its file name; every command that prints transcript text runs
on it, on both backends, in a pipe and on a real terminal (a pty), with rich and
without. The output bytes must hold none of them raw, and every suggestion must be a
command, never a Python call.
"""

from __future__ import annotations

import json
import os
import pty
import shutil
import subprocess
import sys
import tty
from typing import Dict, List, Tuple

import pytest

from tests.support import hostile
from tests.support.cli import child_env, cli_argv, declared_exit_codes, read_pty

MODES = ["pipe", "pipe-colour", "pipe-no-rich", "tty", "tty-no-rich"]


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory) -> str:
    directory = str(tmp_path_factory.mktemp("hostile") / "corpus")
    hostile.build(directory)
    return directory


def rich_blocker(tmp_path) -> Dict[str, str]:
    blocker = tmp_path / "block"
    blocker.mkdir(exist_ok=True)
    (blocker / "rich.py").write_text("raise ImportError('rich is not installed here')\n")
    return {"PYTHONPATH": str(blocker) + os.pathsep + os.environ.get("PYTHONPATH", "")}


def run_on_tty(argv: List[str], env: Dict[str, str]) -> Tuple[int, bytes, bytes]:
    """Run with stdout on a real terminal (raw mode: the bytes are the program's own)."""
    master, slave = pty.openpty()
    tty.setraw(slave)
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=slave, stderr=subprocess.PIPE, env=env)
    os.close(slave)
    stdout = read_pty(master)
    stderr = proc.stderr.read() if proc.stderr else b""
    return proc.wait(timeout=60), stdout, stderr


def with_colour(cmd: List[str], choice: str) -> List[str]:
    return [cmd[0], "--color", choice, *cmd[1:]]


@pytest.mark.parametrize("mode", MODES)
def test_no_command_lets_transcript_text_drive_the_terminal(backend_name, corpus_dir, tmp_path, mode):
    if mode in ("pipe-colour", "tty"):
        pytest.importorskip("rich")
    work = tmp_path / "c"
    shutil.copytree(corpus_dir, work)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    corpus_path = os.path.join(work, hostile.FILE_NAME)
    broken = os.path.join(work, "broken-" + hostile.FILE_NAME)
    through = _last_plain_id(corpus_path)
    env = child_env(backend_name, rich_blocker(tmp_path) if mode.endswith("no-rich") else {"TERM": "xterm-256color"})
    coloured = mode in ("pipe-colour", "tty")
    seen_markup = False
    for path in (corpus_path, broken):
        for cmd in hostile.commands(path, str(out_dir), through):
            if mode.startswith("pipe-"):
                cmd = with_colour(cmd, "always")
            argv = cli_argv(*cmd)
            where = ascii(f"{mode}: {' '.join(cmd)}")
            if mode.startswith("tty"):
                code, stdout, stderr = run_on_tty(argv, env)
            else:
                r = subprocess.run(argv, capture_output=True, timeout=60, env=env)
                code, stdout, stderr = r.returncode, r.stdout, r.stderr
            assert b"Traceback" not in stderr, f"{where}: {ascii(stderr)}"
            assert code in declared_exit_codes()[cmd[0]], where
            hostile.assert_clean(stdout, where + " (stdout)", coloured)
            hostile.assert_clean(stderr, where + " (stderr)")
            text = (stdout + stderr).decode("utf-8", "surrogateescape")
            assert "Session." not in text and "message_ids" not in text, f"{where}: a Python call as advice:\n{ascii(text)}"
            if cmd[0] == "show" and code == 0:
                # Shown as what they are: escapes spelled out, markup as its brackets.
                assert "\\x1b[2J" in text and "<U+202E>" in text, where
                if "[bold red]MARKUP[/bold red]" in text:
                    seen_markup = True
    assert seen_markup, "rich markup in content was not shown literally"


def _last_plain_id(path: str) -> str:
    from llm_agent_session import Session

    view = Session.peek(path)
    return next(e.id for e in reversed(list(view["envelopes"])) if e.payload.get("content") == "plain")


def test_json_outputs_are_escaped_but_lossless(cli, corpus_dir, tmp_path):
    path = os.path.join(corpus_dir, hostile.FILE_NAME)
    r = cli("peek", path, "--json")
    assert r.returncode == 0, r.stderr
    hostile.assert_clean(r.stdout.encode("utf-8", "surrogateescape"), "peek --json")
    report = json.loads(r.stdout)
    assert report["meta"] == {"agent" + hostile.SHORT: hostile.H, "model": hostile.H}
    assert report["path"] == path and report["load"]["verdict"] == "would repair"

    r = cli("export", path, "--format", "openai")
    messages = json.loads(r.stdout)
    assert messages[0] == {"role": "system", "content": hostile.H}

    r = cli("tail", path, "-n", "3", "--json")
    lines = [json.loads(line) for line in r.stdout.splitlines()]
    assert lines[-1]["type"] == "type" + hostile.SHORT and lines[-1]["payload"] == {"k" + hostile.SHORT: hostile.H}


def test_markdown_export_keeps_content_in_code(cli, tmp_path):
    """No backtick run closes a fence or a code span; raw HTML is inside code only."""
    from llm_agent_session import Session

    path = str(tmp_path / "md.jsonl")
    payload = "```\n</details>\n<script>alert(1)</script>\n<img src=x onerror=alert(2)>\n````` done"
    with Session.create(path, {"m": "<b>meta</b>"}) as s:
        s.append_message({"role": "user", "content": payload})
        s.append_message({"role": "assistant`<img src=x onerror=alert(3)>", "content": "ok"})
        s.append_message({"role": "tool", "tool_call_id": "c`1", "content": payload})
    r = cli("export", path, "--format", "markdown")
    assert r.returncode == 0, r.stderr
    md = r.stdout
    markdown_it = pytest.importorskip("markdown_it")
    renderer = markdown_it.MarkdownIt("commonmark")  # raw HTML passes through, as in many viewers
    assert "<script>" in renderer.render("<script>alert(1)</script>\n")  # so this test can fail
    html = renderer.render(md)
    assert "<script>" not in html and "<img" not in html and "onerror=alert" not in html.replace("onerror=alert(", "")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "&lt;img src=x onerror=alert(2)&gt;" in html
    assert "&lt;img src=x onerror=alert(3)&gt;" in html  # a hostile role, in a code span
    assert html.count("</details>") == 1  # ours; the one in content is text


def test_progress_bar_shows_a_hostile_file_name_as_text(backend_name, tmp_path):
    """The bar's label holds the file name: rich must neither obey its markup nor its escapes."""
    pytest.importorskip("rich")
    env = child_env(backend_name, {"LLM_AGENT_SESSION_PROGRESS_DELAY": "0", "TERM": "xterm-256color"})
    code = (
        "import sys, time\nfrom llm_agent_session.cli.progress import Progress\n"
        "with Progress('reading ' + sys.argv[1], 100) as p:\n"
        "    p.update(40)\n    time.sleep(0.6)\n"
    )
    master, slave = pty.openpty()
    tty.setraw(slave)
    name = "[bold]BOLD[/bold] \x1b]0;T\x07\x1b[2J\u202e\u200b.jsonl"
    proc = subprocess.Popen([sys.executable, "-c", code, name], stderr=slave, env=env)
    os.close(slave)
    shown = read_pty(master).decode("utf-8", "surrogateescape")
    proc.wait(timeout=10)
    assert "[bold]BOLD[/bold]" in shown and "\\x1b]0;T\\x07\\x1b[2J<U+202E><U+200B>" in shown, ascii(shown)
    assert "\x1b]0;" not in shown and "\x1b[2J" not in shown and "\u202e" not in shown and "\u200b" not in shown
