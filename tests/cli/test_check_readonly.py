"""Issue #11: ``check`` gives load's verdict without copying the file (read-only, no lock,
O(1) extra disk), reports a torn tail exactly as ``repair`` removes it; ``peek`` says when
load would refuse a file."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from llm_agent_session import Session

TORN = b'{"id":"torn-line","payload":{"role":"user","content":"half a'


def big_transcript(path: str, megabytes: int) -> None:
    with Session.create(path, {"agent": "big"}) as s:
        chunk = "x" * 4000
        s.sync_messages([{"role": "user", "content": f"{i} {chunk}"} for i in range(megabytes * 250)])


@pytest.fixture
def tiny_tmpfs(tmp_path):
    """A 1 MiB tmpfs (root only: mounting needs CAP_SYS_ADMIN)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mount = tmp_path / "tiny-tmp"
    mount.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")
    try:
        yield str(mount)
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def test_check_of_a_file_8x_larger_than_tmpdir_copies_nothing(cli, tmp_path, tiny_tmpfs):
    path = str(tmp_path / "big.jsonl")
    big_transcript(path, 8)  # 8 MB against a 1 MiB TMPDIR: any copy would fail with ENOSPC
    size = os.path.getsize(path)
    assert size > 8 * 1000 * 1000 > 1 << 20
    r = cli("check", path, env={"TMPDIR": tiny_tmpfs})
    assert r.returncode == 0, r.stdout + r.stderr
    assert "loads clean" in r.stdout and "2,000 message(s)" in r.stdout

    with open(path, "ab") as f:
        f.write(TORN)
    before = open(path, "rb").read()
    r = cli("check", path, "--json", env={"TMPDIR": tiny_tmpfs})
    assert r.returncode == 4, r.stdout + r.stderr
    verdict = json.loads(r.stdout)
    assert verdict["verdict"] == "would repair"
    assert verdict["torn"]["offset"] == size and verdict["torn"]["bytes"] == len(TORN)
    assert os.listdir(tiny_tmpfs) == []
    assert open(path, "rb").read() == before and not os.path.exists(path + ".repair")

    # Exactly what repair removes.
    r = cli("repair", path)
    assert r.returncode == 0, r.stderr
    assert os.path.getsize(path) == verdict["torn"]["offset"]
    assert f"line {verdict['torn']['line']} at byte {verdict['torn']['offset']}, {verdict['torn']['bytes']} bytes" in r.stdout


def test_check_reports_the_torn_line_as_repair_does(cli, tmp_path):
    path = str(tmp_path / "run.jsonl")
    with Session.create(path, {}) as s:
        s.append_message({"role": "user", "content": "hello"})
    size = os.path.getsize(path)
    with open(path, "ab") as f:
        f.write(TORN)
    r = cli("check", path)
    assert r.returncode == 4, r.stdout + r.stderr
    assert f"a torn last line of {len(TORN)} bytes (line 3, from byte {size:,} to the end" in r.stdout
    assert f"llm-agent-session repair {path}" in r.stdout


def test_check_takes_no_lock_and_writes_nothing(cli, tmp_path):
    path = str(tmp_path / "run.jsonl")
    with Session.create(path, {}) as s:
        s.append_message({"role": "user", "content": "hello"})
    with open(path, "ab") as f:
        f.write(b'{"id":"x","payload":{"role":"user"},"ts":"2026-01-01T00:00:00.000000Z","type":"message","v":1}')
    os.chmod(path, 0o400)  # read-only: a check must not need to write
    st = os.stat(path)
    with Session.peek(path) and open(path, "rb"):
        r = cli("check", path)
    assert r.returncode == 0 and "adds the missing final newline" in r.stdout, r.stdout + r.stderr
    after = os.stat(path)
    assert (after.st_size, after.st_mtime_ns) == (st.st_size, st.st_mtime_ns)


def test_check_with_a_live_writer_holding_the_lock(cli, tmp_path):
    path = str(tmp_path / "run.jsonl")
    with Session.create(path, {}) as s:
        s.append_message({"role": "user", "content": "hello"})
        r = cli("check", path)
        s.append_message({"role": "user", "content": "still writing"})
    assert r.returncode == 0 and "1 message(s)" in r.stdout, r.stdout + r.stderr
    if not os.path.exists("/proc/locks"):
        pytest.skip("check reads the lock's holder from /proc/locks, which is not mounted here")
    assert f"a live writer (pid {os.getpid()}) holds it" in r.stdout


def test_peek_says_when_load_would_refuse_the_file(cli, tmp_path):
    path = str(tmp_path / "run.jsonl")
    with Session.create(path, {}) as s:
        first = s.append_message({"role": "user", "content": "hello"})
        s.append_message({"role": "assistant", "content": "hi"})
    with open(path, "rb") as f:
        lines = f.read().split(b"\n")
    # A duplicate id: peek's own scan has nothing to skip, only a replay sees it.
    dup = lines[1].replace(b'"hello"', b'"again"')
    offset = sum(len(line) + 1 for line in lines[:3])
    with open(path, "ab") as f:
        f.write(dup + b"\n")
    r = cli("peek", path)
    assert r.returncode == 0, r.stderr
    assert "the model would be sent" not in r.stdout
    assert "a load would refuse this file (CorruptTranscript)" in r.stdout
    assert f"line 4 (byte {offset:,})" in r.stdout and first in r.stdout
    assert f"llm-agent-session salvage {path}" in r.stdout
    report = json.loads(cli("peek", path, "--json").stdout)
    assert report["load"]["verdict"] == "would fail" and report["load"]["error"]["line"] == 4
    assert report["load"]["error"]["offset"] == offset

    lines_now = open(path, "rb").read().split(b"\n")
    lines_now[2] = b"{not json"
    with open(path, "wb") as f:
        f.write(b"\n".join(lines_now))
    r = cli("peek", path)
    assert "a load would refuse this file (CorruptTranscript)" in r.stdout and "line 3 (byte" in r.stdout
