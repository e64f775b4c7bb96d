"""``llm-agent-session search TEXT PATH...`` (issue #35): hits printed as the library finds
them, in walk order; -i, --extras, --limit, --count, --json; exit 0 found, 1 none, 3 a
PATH that could not be searched, 2 a usage error; the cache kept between runs (a grown
transcript's new hit appears); hostile text and names shown, never obeyed."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.support import hostile
from tests.support.cli import child_env, cli_argv
from tests.support.helpers import dispatched_line, env_line, meta_line, msg_line, write_raw

TEXT = "Needle-7"
TS = "2026-08-09T13:10:08.542283Z"  # helpers' envelopes' time


def transcript(path, *lines: bytes, title: str = f"about {TEXT}") -> str:
    os.makedirs(os.path.dirname(str(path)), exist_ok=True)
    write_raw(path, meta_line(payload={"title": title}), *lines)
    return str(path)


@pytest.fixture
def fleet(tmp_path):
    root = tmp_path / "fleet"
    a = transcript(root / "a.jsonl", msg_line("a-1", "user", f"find {TEXT} please"),
                   msg_line("a-2", "assistant", "nothing"), msg_line("a-3", "tool", f"{TEXT.upper()}\tok", tool_call_id="c"))
    b = transcript(root / "sub" / "b.jsonl", dispatched_line("b-1", "c", "grep", {"q": TEXT}),
                   env_line("b-2", "mystery", {"x": TEXT}))
    transcript(root / "sub" / "c.jsonl", msg_line("c-1", "user", "no hit"), title="no hit either")
    return {"root": str(root), "a": a, "b": b, "cache": str(tmp_path / "cache")}


def search(cli, fleet, *args: str, **kw):
    env = {"LLM_AGENT_SESSION_CACHE": fleet["cache"], **kw.pop("env", {})}
    return cli("search", *args, env=env, **kw)


def test_each_hit_is_a_line_in_walk_order_and_0_means_found(cli, fleet):
    r = search(cli, fleet, TEXT, fleet["root"])
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        f"{fleet['a']}:2: {TS} user: find {TEXT} please",
        f"{fleet['b']}:2: {TS} tool-dispatched: {TEXT}",
    ]
    assert r.stderr == ""


def test_1_means_none(cli, fleet):
    r = search(cli, fleet, "absent text", fleet["root"])
    assert (r.returncode, r.stdout, r.stderr) == (1, "", "")
    r = search(cli, fleet, "about", fleet["root"])  # only in the meta: an extra
    assert r.returncode == 1


@pytest.mark.slow  # processes
def test_ignore_case_extras_and_limit(cli, fleet):
    r = search(cli, fleet, "needle-7", fleet["root"], "-i", "--extras")
    assert r.returncode == 0
    lines = r.stdout.splitlines()
    assert [line.split(": ", 1)[0] for line in lines] == [
        f"{fleet['a']}:1", f"{fleet['a']}:2", f"{fleet['a']}:4", f"{fleet['b']}:1", f"{fleet['b']}:2",
        f"{fleet['b']}:3"]
    assert lines[2] == f"{fleet['a']}:4: {TS} tool: {TEXT.upper()}\tok"
    r = search(cli, fleet, "needle-7", fleet["root"], "-i", "--extras", "--limit", "4")
    assert r.stdout.splitlines() == lines[:4]


def test_json_lines_are_the_library_s_hits(cli, fleet):
    from llm_agent_session.search_many import search_many

    r = search(cli, fleet, TEXT, fleet["root"], "--json", "--extras")
    assert r.returncode == 0
    got = [json.loads(line) for line in r.stdout.splitlines()]
    want = [h for h in search_many(TEXT, [fleet["root"]], groups=("content", "arguments", "results", "extras")).hits()]
    assert [(g["path"], g["offset"], g["line"], g["id"], g["ts"], g["type"], g["role"], tuple(g["groups"]),
             g["snippet"], tuple(g["match"])) for g in got] == \
        [(h.path, h.offset, h.line, h.id, h.ts, h.type, h.role, h.groups, h.snippet, h.match) for h in want]
    assert got[1]["groups"] == ["content"] and got[1]["role"] == "user" and got[1]["match"] == [5, 5 + len(TEXT)]


@pytest.mark.slow  # processes
def test_count(cli, fleet):
    r = search(cli, fleet, TEXT, fleet["root"], "--count", "-i", "--extras")
    assert r.returncode == 0
    assert r.stdout.splitlines() == [f"{fleet['a']}: 3", f"{fleet['b']}: 3"]
    r = search(cli, fleet, TEXT, fleet["root"], "-c", "--json", "--limit", "2", "-i", "--extras")
    assert [json.loads(line) for line in r.stdout.splitlines()] == [{"path": fleet["a"], "hits": 2}]
    # A transcript read in parts, its hits all in the first, then another: each its own count.
    big = transcript(os.path.join(fleet["root"], "big.jsonl"), msg_line("b-0", "user", TEXT),
                     *[msg_line(f"b-{i}", "user", "x" * 100_000) for i in range(1, 40)])
    r = search(cli, fleet, TEXT, big, fleet["a"], "-c")
    assert r.stdout.splitlines() == [f"{big}: 1", f"{fleet['a']}: 1"]
    r = search(cli, fleet, TEXT, fleet["a"], fleet["a"], "-c")
    assert r.stdout.splitlines() == [f"{fleet['a']}: 1", f"{fleet['a']}: 1"]


def test_3_means_a_path_could_not_be_searched_and_wins(cli, fleet, tmp_path):
    missing = str(tmp_path / "missing")
    plain = tmp_path / "plain.jsonl"
    plain.write_text(f'{{"just": "{TEXT}"}}\n')
    r = search(cli, fleet, TEXT, missing, fleet["a"], str(plain))
    assert r.returncode == 3
    assert r.stdout.splitlines() == [f"{fleet['a']}:2: {TS} user: find {TEXT} please"]
    assert r.stderr.splitlines() == [
        f"llm-agent-session search: {missing}: cannot read it: No such file or directory",
        f"llm-agent-session search: {plain}: not a transcript: the first line is not a session-meta envelope "
        "(not an envelope: missing id, payload, ts, type, v; unexpected just)"]
    r = search(cli, fleet, "absent", missing)
    assert r.returncode == 3


def test_usage_errors(fleet, capsys, monkeypatch):
    from llm_agent_session.cli import main

    monkeypatch.setenv("LLM_AGENT_SESSION_CACHE", fleet["cache"])
    for args in (["", fleet["root"]], [TEXT], [TEXT, fleet["root"], "--limit", "0"], [TEXT, fleet["root"], "--regex"]):
        try:
            code = main(["search", *args])
        except SystemExit as e:
            code = e.code
        assert code == 2, args
        assert capsys.readouterr().err.startswith("usage: llm-agent-session search"), args


@pytest.mark.slow  # processes
def test_the_cache_sees_a_transcript_grow_between_runs(cli, fleet):
    assert search(cli, fleet, TEXT, fleet["root"], "-c").stdout.splitlines() == [f"{fleet['a']}: 1",
                                                                                   f"{fleet['b']}: 1"]
    (written,) = os.listdir(os.path.join(fleet["cache"], "search"))
    with open(fleet["b"], "ab") as f:
        f.write(msg_line("b-3", "user", f"again {TEXT}"))
    r = search(cli, fleet, TEXT, fleet["root"])
    assert r.stdout.splitlines()[-1] == f"{fleet['b']}:4: {TS} user: again {TEXT}"
    assert os.listdir(os.path.join(fleet["cache"], "search")) == [written]
    other = fleet["cache"] + "-other"
    r = search(cli, fleet, TEXT, fleet["root"], "--no-cache", env={"LLM_AGENT_SESSION_CACHE": other})
    assert r.returncode == 0 and not os.path.exists(other)


@pytest.mark.slow  # processes
def test_a_name_that_is_not_utf8_is_shown_as_text(cli, fleet):
    root = os.fsencode(fleet["root"])
    path = transcript(os.fsdecode(os.path.join(root, b"bad-\xff\x1b[2J.jsonl")), msg_line("m", "user", TEXT))
    r = search(cli, fleet, TEXT, fleet["root"], "--json")
    assert r.returncode == 0
    assert "\x1b" not in r.stdout
    got = [json.loads(line)["path"] for line in r.stdout.splitlines()]
    assert path in got
    r = search(cli, fleet, TEXT, fleet["root"])
    assert "bad-<U+DCFF>\\x1b[2J.jsonl:2: " in r.stdout and "\x1b" not in r.stdout


@pytest.mark.slow  # processes
def test_hostile_text_is_shown_not_obeyed(backend_name, tmp_path):
    """The hostile corpus's content, file name, ids and types, through every output."""
    directory = str(tmp_path / "corpus")
    hostile.build(directory)
    env = child_env(backend_name, {"LLM_AGENT_SESSION_CACHE": str(tmp_path / "cache")})
    for args in (["forged", directory, "--extras"], ["forged", directory, "--extras", "--color", "always"],
                 ["forged", directory, "--extras", "--json"], ["MARKUP", directory, "-i", "--count"]):
        r = subprocess.run(cli_argv("search", *args), capture_output=True, env=env, timeout=60)
        assert r.returncode == 0, r.stderr
        hostile.assert_clean(r.stdout, " ".join(args), coloured="always" in args)
        hostile.assert_clean(r.stderr, " ".join(args))
        assert r.stdout.count(b"\n") >= 1


def _without_the_power_to_read_anything():
    """As tests/view/test_view_shelf.py: a child that meets file permissions, as root too."""
    if os.geteuid() != 0:
        return None

    def drop() -> None:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        for capability in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
            if libc.prctl(24, capability, 0, 0, 0) != 0:  # PR_CAPBSET_DROP: gone at exec
                raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")

    return drop


@pytest.mark.slow  # processes that drop capabilities
def test_an_unreadable_file_or_directory_is_named_and_the_rest_searched(backend_name, fleet):
    secret = transcript(os.path.join(fleet["root"], "secret.jsonl"), msg_line("s", "user", TEXT))
    locked = os.path.join(fleet["root"], "locked")
    transcript(os.path.join(locked, "hidden.jsonl"), msg_line("h", "user", TEXT))
    for path in (secret, locked):
        os.chmod(path, 0)
    env = child_env(backend_name, {"LLM_AGENT_SESSION_CACHE": fleet["cache"]})
    try:
        r = subprocess.run(cli_argv("search", TEXT, fleet["root"]), capture_output=True, text=True, timeout=60,
                           env=env, preexec_fn=_without_the_power_to_read_anything())
    except subprocess.SubprocessError as e:
        pytest.skip(f"cannot start a process that meets file permissions here: {e}")
    assert r.returncode == 3
    assert r.stderr.splitlines() == [f"llm-agent-session search: {secret}: cannot read it: Permission denied",
                                     f"llm-agent-session search: {locked}: cannot list it: Permission denied"]
    assert [line.split(":")[0] for line in r.stdout.splitlines()] == [fleet["a"], fleet["b"]]
    assert sys.platform != "win32"
