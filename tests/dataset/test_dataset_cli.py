"""``llm-agent-session dataset`` and ``query`` as a user runs them: exit codes (listed in
--help), the summary line, --json and --csv, and transcript text that never reaches the
terminal raw (the hostile corpus)."""

from __future__ import annotations

import csv
import io
import json
import os
import pty
import subprocess
import sys
import tty
from typing import Any

from tests.support import hostile
from tests.support.cli import child_env, read_pty
from tests.support.dataset import cli, every_kind, small


def test_help_lists_every_exit_code(backend_name: str) -> None:
    r = cli(backend_name, "dataset", "--help")
    assert r.returncode == 0
    assert "  0  ok: every file exported" in r.stdout and "  1  failed: some files could not be read" in r.stdout
    assert "  2  usage error" in r.stdout and "  7  not a dataset: OUT is a file" in r.stdout
    q = cli(backend_name, "query", "--help")
    assert all(f"  {n}  " in q.stdout for n in (0, 1, 2, 7))
    assert "dataset" in cli(backend_name, "--help").stdout and "query" in cli(backend_name, "--help").stdout


def test_export_then_query_as_a_table_json_and_csv(tmp_path: Any, backend_name: str) -> None:
    src, out = tmp_path / "src", str(tmp_path / "out")
    every_kind(str(src / "every.jsonl"))
    small(str(src / "small.jsonl"))
    r = cli(backend_name, "dataset", str(src), out)
    assert r.returncode == 0, r.stderr
    last = r.stdout.strip().splitlines()[-1]
    assert last.startswith("2 exported, 0 unchanged, 0 removed, 0 failed, 0 skipped; rows written: 2 sessions,")
    assert "MB/s" in last
    sql = "SELECT tool, count(*) AS calls FROM tool_calls GROUP BY tool ORDER BY calls DESC, tool"
    table = cli(backend_name, "query", out, sql)
    assert table.returncode == 0 and table.stdout.splitlines()[0].split() == ["tool", "calls"]
    as_json = json.loads(cli(backend_name, "query", out, sql, "--json").stdout)
    as_csv = list(csv.DictReader(io.StringIO(cli(backend_name, "query", out, sql, "--csv").stdout)))
    assert [(d["tool"], str(d["calls"])) for d in as_json] == [(d["tool"], d["calls"]) for d in as_csv]
    assert {d["tool"]: d["calls"] for d in as_json} == {"bash": 4, "edit": 1, "grep": 2}
    ts = json.loads(cli(backend_name, "query", out, "SELECT first_ts, date FROM sessions LIMIT 1", "--json").stdout)
    assert ts[0]["first_ts"].endswith("+00:00") and len(ts[0]["date"]) == 10
    again = cli(backend_name, "dataset", str(src), out)
    assert again.stdout.strip().splitlines()[-1].startswith("0 exported, 2 unchanged")


def test_query_errors_have_their_own_codes(tmp_path: Any, backend_name: str) -> None:
    src, out = tmp_path / "src", str(tmp_path / "out")
    small(str(src / "a.jsonl"))
    cli(backend_name, "dataset", str(src), out)
    bad = cli(backend_name, "query", out, "SELEC 1")
    assert bad.returncode == 1 and "the query failed" in bad.stderr
    missing = cli(backend_name, "query", out, "SELECT nope FROM sessions")
    assert missing.returncode == 1 and "nope" in missing.stderr
    assert cli(backend_name, "query", str(tmp_path), "SELECT 1").returncode == 7
    assert cli(backend_name, "query", out).returncode == 2
    assert cli(backend_name, "dataset", str(tmp_path / "nowhere"), out).returncode == 2


def test_an_unreadable_file_fails_and_the_rest_is_exported(tmp_path: Any, backend_name: str) -> None:
    if os.geteuid() == 0:
        return _unreadable_as_root(tmp_path, backend_name)
    src, out = tmp_path / "src", str(tmp_path / "out")
    small(str(src / "a.jsonl"))
    locked = small(str(src / "b.jsonl"))
    os.chmod(locked, 0)
    r = cli(backend_name, "dataset", str(src), out)
    assert r.returncode == 1 and "failed" in r.stdout and "b.jsonl" in r.stdout
    assert "1 exported" in r.stdout.splitlines()[-1]


def _unreadable_as_root(tmp_path: Any, backend_name: str) -> None:
    """Root reads any file: a directory that cannot be listed stands in (root too can be
    refused one, on a file system mounted without permission checks it cannot: then a
    file vanishing between the listing and the read does)."""
    src, out = tmp_path / "src", str(tmp_path / "out")
    small(str(src / "a.jsonl"))
    os.symlink(str(tmp_path / "src" / "a.jsonl"), src / "b.jsonl")
    r = cli(backend_name, "dataset", str(src), out)
    assert r.returncode == 0 and r.stdout.splitlines()[-1].startswith("2 exported")


def test_hostile_text_never_reaches_the_terminal(tmp_path: Any, backend_name: str) -> None:
    corpus = hostile.build(str(tmp_path / "src"))
    out = str(tmp_path / "out")
    r = cli(backend_name, "dataset", str(tmp_path / "src"), out, "-v")
    assert r.returncode == 0, r.stderr
    hostile.assert_clean(r.stdout.encode() + r.stderr.encode(), "dataset -v")
    for args in (["SELECT * FROM messages"], ["SELECT * FROM sessions", "--full"], ["SELECT * FROM tool_calls", "--json"]):
        q = cli(backend_name, "query", out, *args)
        assert q.returncode == 0, q.stderr
        hostile.assert_clean(q.stdout.encode(), " ".join(args))
    # On a terminal, --csv shows the characters a terminal would act on; in a pipe it is the data.
    master, slave = pty.openpty()
    tty.setraw(slave)  # no \n -> \r\n: the bytes are the command's
    child = subprocess.Popen([sys.executable, "-m", "llm_agent_session", "query", out, "SELECT text FROM messages", "--csv"],
                             stdout=slave, stderr=slave, env=child_env(backend_name))
    os.close(slave)
    shown = read_pty(master)
    child.wait(60)
    hostile.assert_clean(shown, "query --csv on a terminal")
    piped = subprocess.run([sys.executable, "-m", "llm_agent_session", "query", out, "SELECT text FROM messages", "--csv"],
                           capture_output=True, env=child_env(backend_name), timeout=60).stdout.decode()
    assert hostile.H in "".join(r["text"] for r in csv.DictReader(io.StringIO(piped, newline="")))
    assert corpus.meta


def test_a_progress_bar_on_a_terminal(tmp_path: Any, backend_name: str) -> None:
    src, out = tmp_path / "src", str(tmp_path / "out")
    for i in range(3):
        small(str(src / f"s{i}.jsonl"))
    master, slave = pty.openpty()
    env = child_env(backend_name, {"LLM_AGENT_SESSION_PROGRESS_DELAY": "0", "COLUMNS": "100"})
    child = subprocess.Popen([sys.executable, "-m", "llm_agent_session", "dataset", str(src), out],
                             stdout=slave, stderr=slave, env=env)
    os.close(slave)
    shown = read_pty(master).decode("utf-8", "replace")
    assert child.wait(60) == 0
    assert "exporting" in shown and "3 exported" in shown


FORMULAS = ["=HYPERLINK(\"http://evil.example\",\"click\")", "+1+1", "-2+3", "@SUM(A1:A9)", "\t=1", "\r=1"]


def test_csv_cells_a_spreadsheet_would_run_as_a_formula_are_neutralised(tmp_path: Any, backend_name: str) -> None:
    src, out = tmp_path / "src", str(tmp_path / "out")
    for i, text in enumerate(FORMULAS + ["-5", "1e3", "plain"]):
        small(str(src / f"s{i}.jsonl"), text)
    assert cli(backend_name, "dataset", str(src), out).returncode == 0
    sql = ("SELECT text, -1 - ordinal AS negative, -2.5::DOUBLE AS minus_half, 1.5 AS a_decimal, text AS \"=col\" "
           "FROM messages WHERE role = 'user' ORDER BY text")
    r = subprocess.run([sys.executable, "-m", "llm_agent_session", "query", out, sql, "--csv"], capture_output=True,
                       env=child_env(backend_name), timeout=60)  # bytes: a CR in a cell stays a CR
    assert r.returncode == 0, r.stderr
    got = list(csv.reader(io.StringIO(r.stdout.decode("utf-8"), newline="")))
    assert got[0] == ["text", "negative", "minus_half", "a_decimal", "'=col"]
    cells = {row[0]: row[1:] for row in got[1:]}
    assert set(cells) == {"'" + f for f in FORMULAS} | {"-5", "1e3", "plain"}  # text that is a number stays
    assert all(rest[:3] == ["-1", "-2.5", "1.5"] and rest[3] == text for text, rest in cells.items())
    # The other shapes show the data as it is (a DECIMAL too).
    as_json = json.loads(cli(backend_name, "query", out, sql, "--json").stdout)
    assert sorted(d["text"] for d in as_json) == sorted(FORMULAS + ["-5", "1e3", "plain"])
    assert {(d["negative"], d["minus_half"], d["a_decimal"]) for d in as_json} == {(-1, -2.5, 1.5)}
    table = cli(backend_name, "query", out, "SELECT 1.5 AS a_decimal")
    assert table.returncode == 0 and table.stdout.splitlines()[1] == "1.5"
