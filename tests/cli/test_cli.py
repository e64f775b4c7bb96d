"""Every subcommand of ``llm-agent-session``, run as a real subprocess: output, exit codes,
and the error messages on bad files. The file a viewer looks at must never change."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

from llm_agent_session import Session, assistant_message, user_message

from tests.support.cli import LONG_RESULT, child_env, cli_argv, read_pty

ESC = "\x1b["


def read(path) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def tear(path: str, data: bytes = b'{"id":"torn-line","payload":{"role":"user","con') -> int:
    """Append a torn last line, as a crash mid-write leaves it; return its size."""
    with open(path, "ab") as f:
        f.write(data)
    return len(data)


def corrupt_middle(path: str) -> int:
    """Damage the third line (a crash never does this); return that line's byte offset."""
    data = read(path)
    lines = data.split(b"\n")
    offset = len(lines[0]) + len(lines[1]) + 2
    lines[2] = b'{"id": broken'
    with open(path, "wb") as f:
        f.write(b"\n".join(lines))
    return offset


def not_a_transcript(tmp_path) -> str:
    p = tmp_path / "notes.jsonl"
    p.write_text('{"hello": "world"}\n')
    return str(p)


# --------------------------------------------------------------------------- usage


def test_help_lists_every_subcommand_and_usage_errors_exit_2(cli):
    r = cli("--help")
    assert r.returncode == 0
    for name in ("demo", "peek", "show", "tail", "check", "repair", "salvage", "fork", "stats", "export"):
        assert name in r.stdout
    r = cli("show")
    assert r.returncode == 2 and "FILE" in r.stderr and "usage:" in r.stderr
    r = cli("frobnicate")
    assert r.returncode == 2 and "invalid choice" in r.stderr
    r = cli("export", "x.jsonl", "--format", "pdf")
    assert r.returncode == 2 and "invalid choice" in r.stderr
    r = cli("show", "x.jsonl", "--last", "-3")
    assert r.returncode == 2 and ">= 0" in r.stderr
    r = cli("check", "--help")
    assert r.returncode == 0 and "would repair a torn tail" in r.stdout
    if shutil.which("llm-agent-session"):
        r = subprocess.run(["llm-agent-session", "--help"], capture_output=True, text=True)
        assert r.returncode == 0 and "peek" in r.stdout


# --------------------------------------------------------------------------- peek


def test_peek_reports_meta_counts_live_messages_and_pending_operations(cli, transcript):
    before = read(transcript.path)
    r = cli("peek", transcript.path)
    assert r.returncode == 0, r.stderr
    assert '"agent": "cli-test"' in r.stdout
    assert re.search(r"message\s+12", r.stdout) and re.search(r"tool-dispatched\s+5", r.stdout)
    assert "the model would be sent 8" in r.stdout
    assert "result-recorded" in r.stdout and "dispatched" in r.stdout and "call_5" in r.stdout
    assert "clean" in r.stdout and ESC not in r.stdout
    r = cli("peek", transcript.path, "--json")
    report = json.loads(r.stdout)
    assert report["counts"]["compaction"] == 1 and report["live_messages"] == 8
    states = {op["call_id"]: op["state"] for op in report["pending_tool_operations"]}
    assert states == {"call_4": "result-recorded", "call_5": "dispatched"}
    assert read(transcript.path) == before


def test_peek_shows_a_torn_tail_and_never_writes(cli, transcript):
    torn = tear(transcript.path)
    before = read(transcript.path)
    r = cli("peek", transcript.path, "--json")
    assert r.returncode == 0
    assert json.loads(r.stdout)["pending"] == torn
    r = cli("peek", transcript.path)
    assert f"{torn:,} bytes of an unfinished last line" in r.stdout
    assert read(transcript.path) == before
    assert not os.path.exists(transcript.path + ".repair")


def test_peek_on_bad_files_exits_3_with_the_reason(cli, tmp_path):
    r = cli("peek", not_a_transcript(tmp_path))
    assert r.returncode == 3 and "not a transcript" in r.stderr and "session-meta" in r.stderr
    r = cli("peek", str(tmp_path / "missing.jsonl"))
    assert r.returncode == 3 and "no such file" in r.stderr
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    r = cli("peek", str(empty))
    assert r.returncode == 3 and "empty" in r.stderr


# --------------------------------------------------------------------------- show


def test_show_renders_the_conversation_the_model_would_be_sent(cli, transcript):
    r = cli("show", transcript.path)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert ESC not in out  # not a TTY: plain text, fit for grep and less
    assert "You are a careful coding agent." in out
    assert "compaction summary" in out and "SUMMARY-OF-EARLIER-TURNS" in out and "FALLBACK" in out
    assert "Please fix the date parser" not in out  # compacted away
    assert "[elided by " in out and "[elided: 3,400 chars of build log]" in out
    assert "SECRET-BUILD-LOG" not in out
    assert "→ call edit" in out and '"file": "dates.py"' in out
    assert "extras: client (--extras shows them)" in out and '"tui"' not in out  # extras collapsed
    assert "extras: finish-reason (--extras shows them)" in out
    assert "pending tool operation" in out and "result-recorded" in out
    ids = [transcript.ids[k] for k in ("system", "compaction", "a3", "t3_call", "t3", "a4", "t4", "user_last")]
    positions = [out.index(i) for i in ids]
    assert positions == sorted(positions)


def test_show_shortens_tool_results_and_shows_their_full_size(cli, tmp_path):
    path = str(tmp_path / "long.jsonl")
    with Session.create(path, {}) as s:
        s.append_message({"role": "tool", "tool_call_id": "c1", "content": LONG_RESULT})
    r = cli("show", path, "--max-chars", "300")
    assert f"{len(LONG_RESULT):,} in all" in r.stdout and "collected line 00399" not in r.stdout
    r = cli("show", path, "--full")
    assert "collected line 00399" in r.stdout and "more chars" not in r.stdout


def test_show_last_and_from_select_messages(cli, transcript):
    r = cli("show", transcript.path, "--last", "2")
    assert transcript.ids["user_last"] in r.stdout and transcript.ids["t4"] in r.stdout
    assert transcript.ids["a4"] not in r.stdout and "6 earlier message(s) not shown" in r.stdout
    r = cli("show", transcript.path, "--from", transcript.ids["a4"])
    assert transcript.ids["a4"] in r.stdout and transcript.ids["t3"] not in r.stdout
    r = cli("show", transcript.path, "--from", transcript.ids["user1"])
    assert r.returncode == 1 and "no message has id" in r.stderr and "compacted" in r.stderr
    r = cli("show", transcript.path, "--raw", "--last", "3")
    assert r.stdout.count("── ") == 3 and "tool-dispatched" in r.stdout


def test_show_raw_lists_every_envelope_in_file_order(cli, transcript):
    r = cli("show", transcript.path, "--raw")
    assert r.returncode == 0
    heads = re.findall(r"^── (\d+) (\S+)", r.stdout, re.M)
    lines = read(transcript.path).splitlines()
    assert [int(n) for n, _ in heads] == list(range(1, len(lines) + 1))
    assert [t for _, t in heads] == [json.loads(l)["type"] for l in lines]
    assert "SECRET-BUILD-LOG" in r.stdout  # raw: the original content is still in the file
    r = cli("show", transcript.path, "--raw", "--from", transcript.ids["elision"])
    assert re.findall(r"^── \d+ (\S+)", r.stdout, re.M)[0] == "elision"


def test_show_colours_only_when_asked_or_on_a_tty(cli, transcript):
    pytest.importorskip("rich")
    r = cli("show", transcript.path, "--color", "always", "--last", "2")
    assert ESC in r.stdout and "Thanks" in r.stdout
    r = cli("show", transcript.path, "--last", "2", env={"NO_COLOR": "1"})
    assert ESC not in r.stdout


def test_show_without_rich_falls_back_to_plain_text(cli, transcript, tmp_path):
    blocker = tmp_path / "block"
    blocker.mkdir()
    (blocker / "rich.py").write_text("raise ImportError('rich is not installed here')\n")
    env = {"PYTHONPATH": str(blocker) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    r = cli("show", transcript.path, "--color", "always", env=env)
    assert r.returncode == 0, r.stderr
    assert ESC not in r.stdout and "SUMMARY-OF-EARLIER-TURNS" in r.stdout


def test_show_on_a_torn_file_reads_a_copy_and_leaves_the_file_alone(cli, transcript):
    tear(transcript.path)
    before = read(transcript.path)
    r = cli("show", transcript.path, "--last", "1")
    assert r.returncode == 0, r.stderr
    assert "private copy" in r.stdout and "torn" in r.stdout and "Thanks" in r.stdout
    assert read(transcript.path) == before


def test_show_on_a_locked_file_reads_a_copy(cli, transcript):
    with Session.load(transcript.path) as live:
        live.append_message(user_message("appended by the live writer"))
        r = cli("show", transcript.path, "--last", "1")
    assert r.returncode == 0, r.stderr
    assert "live writer" in r.stdout and "appended by the live writer" in r.stdout


def test_show_on_bad_files(cli, transcript, tmp_path):
    offset = corrupt_middle(transcript.path)
    r = cli("show", transcript.path)
    assert r.returncode == 1 and "line 3" in r.stderr and f"byte {offset}" in r.stderr and "salvage" in r.stderr
    r = cli("show", not_a_transcript(tmp_path))
    assert r.returncode == 3 and "session-meta" in r.stderr
    r = cli("show", str(tmp_path / "missing.jsonl"))
    assert r.returncode == 3 and "no such file" in r.stderr


def test_show_piped_into_head_exits_quietly(backend_name, tmp_path):
    path = str(tmp_path / "many.jsonl")
    with Session.create(path, {}) as s:
        s.sync_messages([{"role": "user", "content": f"message {i}\n" * 20} for i in range(2000)])
    pipe = f"{subprocess.list2cmdline(cli_argv('show', path))} | head -n 3"
    r = subprocess.run(pipe, shell=True, capture_output=True, text=True, env=child_env(backend_name), timeout=60)
    assert r.stdout.count("\n") == 3 and "Traceback" not in r.stderr and "BrokenPipe" not in r.stderr


# --------------------------------------------------------------------------- check


def test_check_exit_codes(cli, transcript, tmp_path):
    r = cli("check", transcript.path)
    assert r.returncode == 0 and "loads clean" in r.stdout and "checked read-only" in r.stdout

    torn_path = str(tmp_path / "torn.jsonl")
    shutil.copyfile(transcript.path, torn_path)
    torn = tear(torn_path)
    before = read(torn_path)
    r = cli("check", torn_path)
    assert r.returncode == 4, r.stdout + r.stderr  # would repair
    assert f"torn last line of {torn:,} bytes" in r.stdout
    assert read(torn_path) == before and not os.path.exists(torn_path + ".repair")

    bad_path = str(tmp_path / "bad.jsonl")
    shutil.copyfile(transcript.path, bad_path)
    offset = corrupt_middle(bad_path)
    before = read(bad_path)
    r = cli("check", bad_path)
    assert r.returncode == 5, r.stdout + r.stderr  # would fail: never 2, a usage error
    assert "CorruptTranscript" in r.stdout and f"line 3, byte offset {offset:,}" in r.stdout
    assert f"llm-agent-session salvage {bad_path}" in r.stdout and "Session." not in r.stdout
    assert read(bad_path) == before

    r = cli("check", not_a_transcript(tmp_path))
    assert r.returncode == 3 and "not a transcript" in r.stdout
    r = cli("check", str(tmp_path / "missing.jsonl"))
    assert r.returncode == 3 and "no such file" in r.stderr


def test_check_does_not_take_the_lock_of_a_live_writer(cli, transcript):
    with Session.load(transcript.path) as live:
        r = cli("check", transcript.path)
        live.append_message(user_message("the writer carries on"))
    assert r.returncode == 0, r.stdout + r.stderr


# --------------------------------------------------------------------------- repair, salvage, fork


def test_repair_reports_what_it_removed(cli, transcript):
    r = cli("repair", transcript.path)
    assert r.returncode == 0 and "nothing to repair" in r.stdout
    size = os.path.getsize(transcript.path)
    torn = tear(transcript.path)
    r = cli("repair", transcript.path)
    assert r.returncode == 0, r.stderr
    assert "removed a torn last line" in r.stdout and f"{torn} bytes" in r.stdout
    assert os.path.getsize(transcript.path) == size
    assert cli("check", transcript.path).returncode == 0


def test_repair_errors(cli, transcript, tmp_path):
    with Session.load(transcript.path):
        r = cli("repair", transcript.path)
    assert r.returncode == 1 and "stop the process" in r.stderr
    offset = corrupt_middle(transcript.path)
    r = cli("repair", transcript.path)
    assert r.returncode == 1 and f"line 3 (byte {offset})" in r.stderr
    r = cli("repair", not_a_transcript(tmp_path))
    assert r.returncode == 3


def test_salvage_copies_what_parses_and_reports_the_rest(cli, transcript, tmp_path):
    offset = corrupt_middle(transcript.path)
    out = str(tmp_path / "salvaged.jsonl")
    r = cli("salvage", transcript.path, out)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1 line(s) dropped" in r.stdout and f"line 3 (bytes {offset:,}" in r.stdout
    assert "loads clean" in r.stdout
    assert cli("check", out).returncode == 0
    r = cli("salvage", transcript.path, out)
    assert r.returncode == 1 and "already exists" in r.stderr


def test_fork_through_an_id(cli, transcript, tmp_path):
    out = str(tmp_path / "fork.jsonl")
    r = cli("fork", transcript.path, out, "--through", transcript.ids["a3"])
    assert r.returncode == 0, r.stderr
    assert "forked" in r.stdout
    with Session.load(out) as s:
        assert s.message_ids[-1] == transcript.ids["a3"]
        assert s.meta["forked-from"]["id"] == transcript.ids["a3"]
    r = cli("fork", transcript.path, str(tmp_path / "f2.jsonl"), "--through", "no-such-id")
    assert r.returncode == 1 and "no-such-id" in r.stderr
    r = cli("fork", transcript.path, str(tmp_path / "f3.jsonl"))
    assert r.returncode == 2 and "--through" in r.stderr


# --------------------------------------------------------------------------- stats


def test_stats(cli, transcript):
    r = cli("stats", transcript.path, "--json")
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    lines = read(transcript.path).splitlines()
    assert sum(t["lines"] for t in s["types"].values()) == len(lines)
    assert sum(t["bytes"] for t in s["types"].values()) == os.path.getsize(transcript.path)
    assert s["other_bytes"] == 0
    assert s["roles"] == {"assistant": 5, "system": 1, "tool": 4, "user": 2}
    bash = s["tools"]["bash"]
    assert bash["count"] == 3 and bash["outcomes"] == {"completed": 2, "pending": 1}
    assert bash["median_duration"] == pytest.approx(2.0) and bash["p95_duration"] == pytest.approx(2.45)
    assert s["tools"]["grep"]["outcomes"] == {"failed": 1}
    assert s["compactions"] == {"count": 1, "fallbacks": 1, "tokens_before": 5200, "tokens_after": 310}
    assert s["elided"]["items"] == 1 and s["elided"]["chars"] == len("SECRET-BUILD-LOG " * 200) - len("[elided: 3,400 chars of build log]")
    assert s["artifacts"] == {"count": 1, "bytes": 20000, "chars": 19000, "elided_chars": 9000}
    r = cli("stats", transcript.path)
    assert "p95" in r.stdout and "5,200 → 310 tokens" in r.stdout
    r = cli("stats", os.devnull)
    assert r.returncode == 3


def test_stats_counts_each_response_once(cli, tmp_path):
    """A response streamed over three lines (one id, the last line's output final) counts
    once, rewound or not; one without an id counts on its own; an assistant message without
    usage is unmeasured; a count no response states is unknown (null, ?), never 0."""
    from llm_agent_session import Usage

    path = str(tmp_path / "tokens.jsonl")
    with Session.create(path, {"agent": "a"}) as s:
        first = s.append_message(user_message("go"))
        for output in (1, 1, 120):
            s.append_message(assistant_message("block"), usage=Usage(7, output, 60000, response_id="msg_1"))
        s.append_rewind(first)  # the response was paid for: still counted
        s.append_message(assistant_message("again"), usage=Usage(5, 30, 61000))
        s.append_message(assistant_message("no usage recorded"))
    r = cli("stats", path, "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["usage"] == {"input": 12, "output": 150, "cache_read": 121000, "cache_write": None,
                                             "responses": 2, "unmeasured": 1}
    text = cli("stats", path).stdout
    assert "input 12 · output 150 · cache read 121,000 · cache write ?" in text
    assert "(2 response(s), each counted once; 1 unmeasured, left out)" in text
    bare = str(tmp_path / "bare.jsonl")
    with Session.create(bare, {"agent": "a"}) as s:
        s.append_message(assistant_message("hi"))
    assert json.loads(cli("stats", bare, "--json").stdout)["usage"] == {
        "input": None, "output": None, "cache_read": None, "cache_write": None, "responses": 0, "unmeasured": 1}
    assert "tokens      none recorded (1 assistant message(s) record none)" in cli("stats", bare).stdout


# --------------------------------------------------------------------------- export


def test_export_openai_is_a_messages_array_ready_to_send(cli, transcript):
    r = cli("export", transcript.path, "--format", "openai")
    assert r.returncode == 0, r.stderr
    messages = json.loads(r.stdout)
    with Session.load(transcript.path) as s:
        expected = s.messages
    assert [m["role"] for m in messages] == [m.role for m in expected]
    for m in messages:
        assert set(m) <= {"role", "content", "tool_calls", "tool_call_id", "name"}
        for c in m.get("tool_calls", ()):
            assert isinstance(c["function"]["arguments"], str)
    assert messages[1]["content"].startswith("SUMMARY-OF-EARLIER-TURNS")
    assert messages[4] == {"role": "tool", "content": "[elided: 3,400 chars of build log]", "tool_call_id": "call_3"}


def test_export_markdown(cli, transcript, tmp_path):
    out = str(tmp_path / "run.md")
    r = cli("export", transcript.path, "--format", "markdown", "-o", out)
    assert r.returncode == 0, r.stderr
    with open(out, encoding="utf-8") as f:
        md = f.read()
    assert "**Compaction summary**" in md and "SUMMARY-OF-EARLIER-TURNS" in md
    assert "*Elided by" in md and "<details><summary>Tool result" in md
    assert "## assistant" in md and "```json" in md
    r = cli("export", transcript.path, "--format", "markdown", "-o", out)
    assert r.returncode == 1 and "already exists" in r.stderr


# --------------------------------------------------------------------------- tail


def _read_until(proc, needle: str, timeout: float = 15) -> str:
    """Lines from proc.stdout until one contains `needle`."""
    seen = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(line)
        if needle in line:
            return "".join(seen)
    raise AssertionError(f"{needle!r} not printed; got {''.join(seen)!r}")


def test_tail_prints_the_last_envelopes(cli, transcript):
    r = cli("tail", transcript.path, "-n", "2")
    assert r.returncode == 0
    assert r.stdout.count("\n") == 2 and "Thanks" in r.stdout and "tool-dispatched" in r.stdout
    r = cli("tail", transcript.path, "-n", "1", "--json")
    assert json.loads(r.stdout)["id"] == transcript.ids["user_last"]
    assert r.stdout.encode() == read(transcript.path).splitlines(keepends=True)[-1]


def test_tail_follow_survives_a_repair_and_exits_on_ctrl_c(backend_name, transcript):
    proc = subprocess.Popen(
        cli_argv("tail", "-f", "-n", "1", transcript.path), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env=child_env(backend_name),
        # Ctrl-C's default: a suite started in the background (`cmd &` without job control)
        # ignores SIGINT, which children inherit, and Python then installs no handler.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        _read_until(proc, "Thanks")
        with Session.load(transcript.path) as s:
            s.append_message(user_message("first-new-message"))
        _read_until(proc, "first-new-message")
        tear(transcript.path)  # a writer killed mid-line
        time.sleep(0.5)
        with Session.load(transcript.path) as s:  # the repair renames a new file over the path
            assert s.warnings
            s.append_message(user_message("after-the-repair"))
        text = _read_until(proc, "after-the-repair")
        assert "first-new-message" not in text and "Thanks" not in text  # nothing printed twice
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=10)
        assert proc.returncode == 0 and "Traceback" not in err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# --------------------------------------------------------------------------- progress


def test_progress_bar_only_on_a_tty(backend_name, transcript):
    pytest.importorskip("rich")
    env = child_env(backend_name, {"LLM_AGENT_SESSION_PROGRESS_DELAY": "0"})
    # Not a TTY: stderr stays empty.
    r = subprocess.run(cli_argv("stats", transcript.path), capture_output=True, text=True, env=env)
    assert r.returncode == 0 and r.stderr == ""
    # A TTY: the bar appears (on stderr) while a slow step runs.
    import pty

    master, slave = pty.openpty()
    code = (
        "import time\nfrom llm_agent_session.cli.progress import Progress\n"
        "with Progress('reading big.jsonl (1.0 GB)', 100) as p:\n"
        "    p.update(40)\n    time.sleep(0.6)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], stderr=slave, env=env)
    os.close(slave)
    shown = read_pty(master).decode("utf-8", "replace")
    proc.wait(timeout=10)
    assert "reading big.jsonl" in shown and "40%" in shown


def test_viewers_never_finish_a_line_or_delete_a_leftover_repair(cli, transcript):
    data = read(transcript.path)
    with open(transcript.path, "wb") as f:
        f.write(data[:-1])  # the last line is whole but lacks its newline
    before = read(transcript.path)
    r = cli("show", transcript.path, "--last", "1")
    assert r.returncode == 0 and "no final newline" in r.stdout and "Thanks" in r.stdout
    r = cli("check", transcript.path)
    assert r.returncode == 0 and "missing final newline" in r.stdout
    r = cli("export", transcript.path, "--format", "openai")
    assert r.returncode == 0 and "private copy" in r.stderr
    assert read(transcript.path) == before
    with open(transcript.path, "wb") as f:
        f.write(data)
    leftover = transcript.path + ".repair"
    with open(leftover, "wb") as f:
        f.write(b"half a repair")
    r = cli("show", transcript.path, "--last", "1")
    assert r.returncode == 0 and ".repair" in r.stdout
    assert os.path.exists(leftover)


def test_tail_on_bad_files(cli, tmp_path):
    r = cli("tail", str(tmp_path / "missing.jsonl"))
    assert r.returncode == 3 and "no such file" in r.stderr
    r = cli("tail", not_a_transcript(tmp_path))
    assert r.returncode == 3 and "not a transcript" in r.stderr
    r = cli("tail", str(tmp_path))
    assert r.returncode == 3 and "directory" in r.stderr
