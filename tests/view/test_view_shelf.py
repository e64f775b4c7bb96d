"""The shelf: which files under the PATHs given it lists, and that one odd file costs its own
row at most (the rows are made in a thread, and past the first 100 in worker processes)."""

from __future__ import annotations

import os
import time

import pytest

from llm_agent_session import Session, user_message
from llm_agent_session.view.shelf import BATCH, Roots, Shelf

ODD_SUMMARIES = [5, True, {"a": 1}, "a string, not a list", [], [7], None]


def _filled(paths) -> Shelf:
    shelf = Shelf(Roots(paths))
    shelf.start()
    for _ in range(3000):
        if shelf.done:
            return shelf
        time.sleep(0.01)
    raise AssertionError(f"the shelf never finished: {len(shelf.rows)} rows")


def _transcript(path, meta) -> None:
    with Session.create(path, meta) as s:
        s.append_message(user_message("hello"))


def test_an_odd_summaries_field_costs_no_row(tmp_path):
    """A meta whose "summaries" was 5, true or an object killed the shelf's worker: 0 rows."""
    _transcript(tmp_path / "a-good.jsonl", {"summaries": ["the import's title"]})
    for n, odd in enumerate(ODD_SUMMARIES):
        _transcript(tmp_path / f"odd-{n}.jsonl", {"summaries": odd})
    rows = {r["name"]: r for r in _filled([str(tmp_path)]).rows}
    assert len(rows) == 1 + len(ODD_SUMMARIES)
    root = os.path.basename(tmp_path)
    assert rows[f"{root}/a-good.jsonl"]["title"] == "the import's title"
    for n in range(len(ODD_SUMMARIES)):
        row = rows[f"{root}/odd-{n}.jsonl"]
        # No title from an odd summaries field: the first prompt's (it was None before rows had one).
        assert (row["title"], row["verdict"], row["messages"]) == ("hello", "clean", 1), ODD_SUMMARIES[n]


@pytest.mark.slow  # worker processes
def test_an_odd_meta_among_the_workers_rows_costs_no_row(tmp_path, backend_name, monkeypatch):
    """Past the first BATCH rows the pool makes them: an odd meta there lost every row after
    (100 of 154)."""
    monkeypatch.setenv("LLM_AGENT_SESSION_BACKEND", backend_name)  # the workers' core
    count = BATCH + 54
    for n in range(count):
        odd = ODD_SUMMARIES[n % len(ODD_SUMMARIES)] if n >= BATCH else ["fine"]
        _transcript(tmp_path / f"run-{n:03d}.jsonl", {"summaries": odd})
    rows = _filled([str(tmp_path)]).rows
    assert len(rows) == count and all(r["verdict"] == "clean" for r in rows)
    assert [r["title"] for r in rows[:BATCH]] == ["fine"] * BATCH


def _names(paths, limit=1000):
    """The walk's names (at most `limit`: a walk that loops stops there, not never)."""
    import itertools

    return [found.name for found in itertools.islice(Roots(paths).walk(), limit)]


def test_a_directory_is_walked_once_whatever_links_lead_back_to_it(tmp_path):
    """A link to an ancestor was followed until the kernel refused (a transcript listed 41
    times); two such links made the walk never end."""
    root = tmp_path / "root"
    (root / "a" / "b").mkdir(parents=True)
    (root / "elsewhere").mkdir()
    for where in ("a/x.jsonl", "a/b/y.jsonl", "elsewhere/z.jsonl"):
        _transcript(root / where, {})
    os.symlink("..", root / "a" / "b" / "up")  # to its parent
    os.symlink(".", root / "a" / "self")  # to the directory it is in
    os.symlink(root, root / "a" / "b" / "top")  # to the root itself
    os.symlink("../elsewhere", root / "a" / "also")  # to a directory walked in its own right
    names = _names([str(root)])
    assert names == ["root/a/x.jsonl", "root/a/b/y.jsonl", "root/elsewhere/z.jsonl"]


def test_links_to_a_directory_walked_already_add_nothing(tmp_path):
    root = tmp_path / "root"
    (root / "a").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    _transcript(tmp_path / "outside" / "o.jsonl", {})
    _transcript(root / "a" / "x.jsonl", {})
    os.symlink(tmp_path / "outside", root / "out")  # leads out of the PATH: skipped, as before
    os.symlink(root / "a", root / "b-link")
    os.symlink(root / "a", root / "c-link")
    assert _names([str(root)]) == ["root/a/x.jsonl"]


BLANK_LEADS = [b"\n", b"\r\n", b" \t\n\n", b"\n" * 3]


@pytest.mark.parametrize("lead", BLANK_LEADS, ids=["newline", "crlf", "spaces", "three"])
def test_a_leading_blank_line_is_a_transcript_as_every_reader_takes_it(tmp_path, lead):
    """Load, check and export read it (blank lines are skipped anywhere); the shelf left it
    out and `view FILE` said "not a transcript"."""
    from llm_agent_session import Session
    from llm_agent_session.cli.view import _check

    plain = tmp_path / "plain.jsonl"
    _transcript(plain, {"title": "leading blank"})
    path = tmp_path / "run.jsonl"
    path.write_bytes(lead + plain.read_bytes())
    plain.unlink()
    with Session.load(str(path)) as s:  # what the shelf now agrees with
        assert len(s.messages) == 1
    assert _check([str(path)]) == "run.jsonl"
    rows = _filled([str(tmp_path)]).rows
    assert [(r["name"], r["title"], r["verdict"]) for r in rows] == [(f"{tmp_path.name}/run.jsonl", "leading blank",
                                                                       "clean")]


def test_what_is_not_a_transcript_stays_off_the_shelf(tmp_path):
    from llm_agent_session.cli.output import CliError
    from llm_agent_session.cli.view import _check

    _transcript(tmp_path / "real.jsonl", {})
    message_first = (tmp_path / "real.jsonl").read_bytes().split(b"\n", 1)[1]
    files = {"empty.jsonl": b"", "blank.jsonl": b"\n \n\r\n", "object.jsonl": b'{"not": "a transcript"}\n',
             "message-first.jsonl": message_first, "text.jsonl": b"\nhello\n", "torn-meta.jsonl": b'\n{"id":"x","pay'}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(CliError) as e:
            _check([str(tmp_path / name)])
        assert e.value.code == 3 and "not a transcript" in str(e.value), name
    assert _names([str(tmp_path)]) == [f"{tmp_path.name}/real.jsonl"]


def _without_the_power_to_read_anything():
    """A child process's start, made to meet file permissions: as root, without the
    capabilities that read past them (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH)."""
    if os.geteuid() != 0:
        return None

    def drop() -> None:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        for capability in (1, 2):
            if libc.prctl(24, capability, 0, 0, 0) != 0:  # PR_CAPBSET_DROP: gone at exec
                raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")

    return drop


@pytest.mark.slow  # processes
def test_an_unreadable_file_or_directory_is_a_row_that_says_so(tmp_path, backend_name):
    """They were silently absent."""
    import json
    import subprocess
    import sys

    root = tmp_path / "root"
    (root / "locked").mkdir(parents=True)
    (root / "open").mkdir()
    _transcript(root / "open" / "fine.jsonl", {})
    _transcript(root / "locked" / "hidden.jsonl", {})
    _transcript(root / "secret.jsonl", {})
    only = tmp_path / "only-unreadable"
    only.mkdir()
    _transcript(only / "secret.jsonl", {})
    for path in (root / "secret.jsonl", root / "locked", only / "secret.jsonl"):
        os.chmod(path, 0)
    env = dict(os.environ, LLM_AGENT_SESSION_BACKEND=backend_name)
    code = ("import json, sys, time\nfrom llm_agent_session.view.shelf import Roots, Shelf\n"
            "s = Shelf(Roots(sys.argv[1:])); s.start()\nwhile not s.done: time.sleep(0.01)\nprint(json.dumps(s.rows))")
    try:
        r = subprocess.run([sys.executable, "-c", code, str(root)], capture_output=True, text=True, timeout=120,
                           env=env, preexec_fn=_without_the_power_to_read_anything())
    except subprocess.SubprocessError as e:
        pytest.skip(f"cannot start a process that meets file permissions here: {e}")
    assert r.returncode == 0, r.stderr
    rows = [(row["name"], row["link"], row["verdict"], row["why"]) for row in json.loads(r.stdout)]
    assert rows[0] == ("root/secret.jsonl", "root/secret.jsonl", "unreadable", "cannot read it: Permission denied")
    assert rows[1] == ("root/locked", None, "unreadable", "cannot list it: Permission denied")
    assert rows[2][:3] == ("root/open/fine.jsonl", "root/open/fine.jsonl", "clean") and len(rows) == 3

    r = subprocess.run([sys.executable, "-m", "llm_agent_session", "view", str(only), "--no-browser"],
                       capture_output=True, text=True, timeout=120, env=env,
                       preexec_fn=_without_the_power_to_read_anything())
    assert r.returncode == 3 and "secret.jsonl: cannot read it: Permission denied" in r.stderr, r.stderr


# -- what a row says of an imported session (issue #35: a shelf you can read) -------------------


def _shelf_rows(client):
    rows = []
    for _ in range(3000):
        got = client.get("/api/shelf", params={"from": len(rows)}).json()
        rows += got["rows"]
        if got["done"]:
            return {row["name"]: row for row in rows}
        time.sleep(0.01)
    raise AssertionError("the shelf never finished")


@pytest.fixture
def imported(tmp_path):
    from tests.support.view import build_imported

    return build_imported(str(tmp_path / "shelf"), str(tmp_path / "sources"))


def test_an_imported_sessions_row_has_its_title_project_short_id_and_source_times(imported):
    """Every row read "claude/-home-USER-projects-...": no title where the meta had none, no
    project, no session id, and "last" was the time of the import (its checkpoint's)."""
    from tests.support.view import client_for

    rows = _shelf_rows(client_for([imported.root]))
    claude = rows["shelf/claude/-home-dev-proj/sess-1.jsonl"]
    assert (claude["title"], claude["project"], claude["session"], claude["session_id"]) == (
        "Date parser fix", "/home/dev/proj", "sess-1", "sess-1")
    # The source's first and last records (the last: the pending call's), not the import's checkpoint.
    assert (claude["first"], claude["last"]) == ("2025-08-20T09:00:00.000000Z", "2025-08-20T09:00:19.000000Z")
    with Session.load(imported.session) as s:
        checkpoints = [e for e in s.events if e.type == "import-checkpoint"]
    assert len(checkpoints) == 4 and all(c.ts > "2025-12" for c in checkpoints)  # the imports' own times: later
    assert (claude["parent"], claude["subagent"]) == (None, None)
    # Codex: no title in the meta: the first prompt a person typed (not the environment context).
    codex = rows["shelf/codex/2025/09/10/rollout-2025-09-10T12-00-00-0199-sess.jsonl"]
    assert (codex["title"], codex["project"], codex["session"], codex["session_id"]) == (
        "what is in this screenshot, and list the files", "/home/dev/proj", "0199-ses", "0199-sess")
    assert (codex["first"], codex["last"]) == ("2025-09-10T12:00:00.000000Z", "2025-09-10T12:00:17.000000Z")
    # Sidechain and subagent rows name their parent; a copy whose parent is not there names one not on the shelf.
    subagent = rows["shelf/claude/-home-dev-proj/sess-1/subagents/agent-a1b2.jsonl"]
    assert (subagent["title"], subagent["parent"], subagent["subagent"]) == (
        "Count the TODOs", "shelf/claude/-home-dev-proj/sess-1.jsonl", "subagent")
    sidechain = rows["shelf/claude/-home-dev-proj/side/sidechains/s1.jsonl"]
    assert (sidechain["title"], sidechain["parent"], sidechain["subagent"]) == (
        "Review it", "shelf/claude/-home-dev-proj/side.jsonl", "sidechain")
    assert rows["shelf/claude/-home-dev-proj/side.jsonl"]["title"] == "review the repo"
    lonely = rows["shelf/lonely/sess-9/subagents/agent-a1b2.jsonl"]
    assert lonely["parent"] == "shelf/lonely/sess-1.jsonl" and lonely["parent"] not in rows


def test_a_rows_project_and_short_id_where_the_meta_names_neither(tmp_path):
    """Without a cwd, the folder Claude Code kept the source in; without a session id, the
    meta envelope's own (a time-ordered UUID: its last 8 characters, its first are its time)."""
    source = "/home/me/.claude/projects/-home-me-work-app/4f1c2d3e-aaaa-bbbb-cccc-123456789abc.jsonl"
    _transcript(tmp_path / "cc.jsonl", {"imported-from": "claude-code", "source-path": source})
    _transcript(tmp_path / "cc-sub.jsonl", {"imported-from": "claude-code",
                                            "source-path": source[:-6] + "/subagents/agent-1.jsonl"})
    _transcript(tmp_path / "mine.jsonl", {"agent": "mine"})
    _transcript(tmp_path / "sid.jsonl", {"session-id": "4f1c2d3e-aaaa-bbbb-cccc-123456789abc"})
    rows = {r["name"].split("/")[-1]: r for r in _filled([str(tmp_path)]).rows}
    assert rows["cc.jsonl"]["project"] == rows["cc-sub.jsonl"]["project"] == "-home-me-work-app"
    assert rows["mine.jsonl"]["project"] is None
    with Session.load(str(tmp_path / "mine.jsonl")) as s:
        meta_id = s.events[0].id
    assert meta_id[14] == "7" and rows["mine.jsonl"]["session_id"] == meta_id
    assert rows["mine.jsonl"]["session"] == meta_id.replace("-", "")[-8:]
    assert (rows["sid.jsonl"]["session"], rows["mine.jsonl"]["title"]) == ("4f1c2d3e", "hello")


@pytest.mark.parametrize("content,title", [
    ("  fix   the\n\nparser  ", "fix the parser"),
    ("x" * 300, "x" * 119 + "…"),
    ("<environment_context>\n<cwd>/x</cwd>\n</environment_context>", None),
    ("<command-name>/clear</command-name>", None),
    ([{"type": "text", "text": "look at"}, {"type": "image_url", "image_url": {"url": "data:,"}},
      {"type": "text", "text": "this"}], "look at this"),
])
def test_the_first_prompt_as_a_title(tmp_path, content, title):
    with Session.create(str(tmp_path / "t.jsonl"), {}) as s:
        s.append_message({"role": "system", "content": "you are a bot", "sysprompt": True})
        s.append_message({"role": "user", "content": content})
    assert _filled([str(tmp_path)]).rows[0]["title"] == title


def test_a_transcripts_page_has_the_title_its_row_has(imported):
    """The page said the file's name where the meta had no title (a Codex rollout)."""
    from tests.support.view import client_for

    client = client_for([imported.root])
    rows = _shelf_rows(client)
    for name, row in rows.items():
        assert client.get("/api/transcript", params={"t": name}).json()["title"] == row["title"], name
    assert rows["shelf/codex/2025/09/10/rollout-2025-09-10T12-00-00-0199-sess.jsonl"]["title"].startswith("what is in")
