"""Issue #11: every suggestion the command line prints is a command a user can paste,
never a Python call, on every error path where the library's own message advises one."""

from __future__ import annotations

import os

from llm_agent_session import Session

PYTHON_ADVICE = ("Session.", "message_ids", "(path, out)")


def transcript(tmp_path, name="run.jsonl"):
    path = str(tmp_path / name)
    with Session.create(path, {}) as s:
        first = s.append_message({"role": "user", "content": "hello"})
        s.append_message({"role": "assistant", "content": "hi"})
    return path, first


def output(r) -> str:
    text = r.stdout + r.stderr
    assert not [a for a in PYTHON_ADVICE if a in text], text
    return text


def test_corrupt_file_advice_names_salvage_and_fork(cli, tmp_path):
    path, _ = transcript(tmp_path)
    with open(path, "ab") as f:
        f.write(b"{broken\n")
        f.write(b'{"id":"z","payload":{"role":"user"},"ts":"2026-01-01T00:00:00.000000Z","type":"message","v":1}\n')
    stem = path[: -len(".jsonl")]
    for command in (["show", path], ["export", path, "--format", "markdown"], ["repair", path], ["check", path], ["peek", path]):
        text = output(cli(*command))
        assert f"llm-agent-session salvage {path} {stem}.salvaged.jsonl" in text, (command, text)
        assert f"llm-agent-session fork {path} {stem}.fork.jsonl --through ID" in text, (command, text)


def test_locked_file_advice_names_peek(cli, tmp_path):
    path, _ = transcript(tmp_path)
    with Session.load(path):
        text = output(cli("repair", path))
    assert f"llm-agent-session peek {path}" in text


def test_read_only_torn_file_advice_names_peek(cli, tmp_path):
    path, _ = transcript(tmp_path)
    with open(path, "ab") as f:
        f.write(b'{"id":"torn')
    os.chmod(path, 0o444)
    r = cli("repair", path)
    assert r.returncode == 1
    text = output(r)
    assert "read-only" in text and f"llm-agent-session peek {path}" in text
    assert "read-only" in cli("check", path).stdout


def test_fork_of_an_unknown_id_names_show_raw(cli, tmp_path):
    path, _ = transcript(tmp_path)
    text = output(cli("fork", path, str(tmp_path / "f.jsonl"), "--through", "nope"))
    assert f"llm-agent-session show --raw {path}" in text


def test_salvage_that_does_not_load_yet_names_fork_of_the_new_file(cli, tmp_path):
    path, first = transcript(tmp_path)
    with Session.load(path) as s:
        s.append_compaction("sum", first, 10, 5)
    with open(path, "rb") as f:
        lines = f.read().split(b"\n")
    lines[1] = b"{broken"  # the message the compaction names is lost: the salvaged file cannot replay
    with open(path, "wb") as f:
        f.write(b"\n".join(lines))
    out = str(tmp_path / "new.jsonl")
    r = cli("salvage", path, out)
    assert r.returncode == 6 and os.path.exists(out)  # written, does not load yet: not "nothing was written" (1)
    text = output(r)
    assert f"llm-agent-session fork {out} {tmp_path}/new.fork.jsonl --through ID" in text


def test_newer_version_says_upgrade(cli, tmp_path):
    path, _ = transcript(tmp_path)
    with open(path, "ab") as f:
        f.write(b'{"id":"v2","payload":{},"ts":"2026-01-01T00:00:00.000000Z","type":"message","v":2}\n')
    text = output(cli("show", path))
    assert "upgrade" in text and "line 4" in text
