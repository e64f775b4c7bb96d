"""``llm-agent-session index PATH...``: build or refresh side indexes (docs/command-line.md)."""

from __future__ import annotations

import json
import os
import stat

from llm_agent_session import Session, _cache, _index, index_file, user_message


def test_index_builds_refreshes_and_says_why_not(cli, transcript, tmp_path):
    cache = str(tmp_path / "cache")
    env = {_cache.ENV_VAR: cache}
    path = transcript.path
    broken = tmp_path / "dir" / "broken.jsonl"
    broken.parent.mkdir()
    good = tmp_path / "dir" / "sub" / "good.jsonl"
    good.parent.mkdir()
    with open(path, "rb") as f:
        data = f.read()
    good.write_bytes(data)
    broken.write_bytes(data + b"not json\n" + data.splitlines(keepends=True)[1])
    (tmp_path / "dir" / "notes.jsonl").write_text('{"not": "a transcript"}\n')

    r = cli("index", path, env=env)
    assert r.returncode == 0 and r.stdout.startswith("indexed: "), r.stdout + r.stderr
    where = os.path.join(cache, "index", os.path.basename(index_file(path)))  # named by the path alone
    assert stat.S_IMODE(os.stat(where).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(where)).st_mode) == 0o700
    assert cli("index", path, env=env).stdout.startswith("up to date: ")
    with open(path, "ab") as f:  # another process appends (as a session would)
        f.write(data.splitlines(keepends=True)[-1].replace(b'"id":"', b'"id":"again-'))
    assert cli("index", path, env=env).stdout.startswith("refreshed: ")

    # A directory: its transcripts, the one that fails named with why, a *.jsonl that is
    # no transcript passed over.
    r = cli("index", str(tmp_path / "dir"), "--json", env=env)
    assert r.returncode == 1, r.stdout + r.stderr
    rows = {os.path.basename(row["path"]): row for row in map(json.loads, r.stdout.splitlines())}
    assert set(rows) == {"broken.jsonl", "good.jsonl"}
    assert rows["good.jsonl"]["status"] == "indexed" and rows["good.jsonl"]["index"]
    assert rows["broken.jsonl"]["status"] == "not indexed" and rows["broken.jsonl"]["index"] is None
    assert "a load would fail" in rows["broken.jsonl"]["detail"] and "line" in rows["broken.jsonl"]["detail"]

    r = cli("index", str(tmp_path / "nothing-here"), env=env)
    assert r.returncode == 3 and "not a transcript" in r.stdout
    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli("index", str(empty), env=env).returncode == 3


def test_a_load_after_the_command_reads_only_what_was_appended(transcript):
    path = transcript.path
    assert _index.update(path) == (_index.INDEXED, index_file(path))
    with Session.load(path) as s:
        assert s._index_used == "used"
        s.append_message(user_message("after the index"))
    _index.flush()
    with Session.load(path) as s:
        assert s._index_used == "used"
        got = (s.messages, s.message_ids, s.pending_tool_operations(), list(s.events))
    with Session.load(path, index=False) as s:
        assert got == (s.messages, s.message_ids, s.pending_tool_operations(), list(s.events))
    assert _index.update(path)[0] == _index.REFRESHED
    assert _index.update(path)[0] == _index.UP_TO_DATE


def test_stats_and_check_through_an_index_say_what_they_say_without(transcript, tmp_path):
    """stats reads only the lines whose kind it needs, check replays only what follows
    the index: the same reports as without one (the transcript has every line type, an
    elision among them; a line appended after the index, then a torn tail)."""
    from llm_agent_session.cli import stats
    from llm_agent_session.cli.check import report
    from llm_agent_session.verdict import verdict

    path = transcript.path
    with open(path, "rb") as f:
        extra = f.read().splitlines(keepends=True)[2].replace(b'"id":"', b'"id":"late-')

    def both() -> tuple:
        return stats.compute(path), report(path, verdict(path))

    for change in (b"", extra, b'{"id":"torn'):
        with open(path, "ab") as f:
            f.write(change)
        _index.remove(path)
        want = both()
        assert _index.update(path)[0] in (_index.INDEXED, _index.REFRESHED)
        assert both() == want
