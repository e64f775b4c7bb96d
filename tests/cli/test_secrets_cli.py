"""``scan`` and ``scrub`` from the command line: exit codes (0 nothing, 8 found, 1 a file
unreadable; scrub 0, 1 refused, 3 not a transcript), --json, and no secret ever printed."""

from __future__ import annotations

import json
import os
import random

import pytest

from benches import secret_corpus
from llm_agent_session import Session


@pytest.fixture
def config(tmp_path_factory):
    return {"LLM_AGENT_SESSION_CONFIG": str(tmp_path_factory.mktemp("config"))}


@pytest.fixture
def seeded(tmp_path):
    path = tmp_path / "hist" / "run.jsonl"
    placed = secret_corpus.write_seeded(str(path), random.Random(2), filler=0, forms=("tool-output", "split"))
    return path, sorted({p.seed.secret for p, _ in placed})


def leaks(r, secrets):
    return [s for s in secrets if s in r.stdout or s in r.stderr]


def test_scan_exit_codes_and_report(cli, seeded, config, tmp_path):
    path, secrets = seeded
    r = cli("scan", str(path.parent), env=config)
    assert r.returncode == 1, r.stderr
    assert "github-token" in r.stdout and "secret(s) in 1 file(s)" in r.stdout and leaks(r, secrets) == []
    clean = tmp_path / "clean.jsonl"
    with Session.create(str(clean), {}) as s:
        s.append_message({"role": "user", "content": "hello"})
    r = cli("scan", str(clean), env=config)
    assert r.returncode == 0 and "no secret found" in r.stdout
    (tmp_path / "gone.jsonl.zst").write_bytes(b"not zstd")
    r = cli("scan", str(clean), str(tmp_path / "gone.jsonl.zst"), env=config)
    assert r.returncode == 3 and "could not be read" in r.stdout
    r = cli("scan", str(path.parent), str(tmp_path / "gone.jsonl.zst"), env=config)
    assert r.returncode == 3 and "github-token" in r.stdout  # what it could read is reported
    assert cli("scan", str(tmp_path / "missing"), env=config).returncode == 3
    assert cli("scan", env=config).returncode == 2
    bad = tmp_path / "bad.json"
    bad.write_text("[]")
    r = cli("scan", "--config", str(bad), str(clean), env=config)
    assert r.returncode == 2 and "must be a JSON object" in r.stderr


def test_scan_json_has_every_finding_and_no_secret(cli, seeded, config):
    path, secrets = seeded
    r = cli("scan", "--json", str(path), env=config)
    assert r.returncode == 1
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    assert [row["path"] for row in rows] == [str(path)]
    found = rows[0]["findings"]
    assert {f["rule"] for f in found} == {s.rule for s in secret_corpus.seeds(random.Random(2))}
    assert set(found[0]) == {"rule", "line", "offset", "envelope", "type", "where", "path", "start", "end", "parts",
                             "base64", "fingerprint"}
    assert any(f["parts"] == 2 for f in found) and leaks(r, secrets) == []


def test_scan_shows_hostile_names_escaped(cli, tmp_path, config, seeded):
    _, secrets = seeded
    evil = tmp_path / "x\x1b[2Jy.jsonl"
    evil.write_text("export GITHUB_TOKEN=" + secret_corpus.seeds(random.Random(1))[15].secret + "\n")
    r = cli("scan", str(evil), env=config)
    assert r.returncode == 1 and "\x1b" not in r.stdout and "\\x1b" in r.stdout


def test_scrub_then_scan_finds_nothing(cli, seeded, config, tmp_path):
    path, secrets = seeded
    (path.parent / "claude.jsonl").write_text('{"type":"summary","summary":"not a transcript"}\n')
    r = cli("scrub", "--keep-original", str(path.parent), env=config)
    assert r.returncode == 0, r.stderr
    assert "scrubbed" in r.stdout and "skipped" in r.stdout and leaks(r, secrets) == []
    assert os.path.exists(str(path) + ".unscrubbed")
    os.unlink(str(path) + ".unscrubbed")
    assert cli("scan", str(path.parent), env=config).returncode == 0
    r = cli("scrub", "--json", str(path), env=config)
    assert r.returncode == 0 and json.loads(r.stdout)["status"] == "clean"
    r = cli("scrub", str(path.parent / "claude.jsonl"), env=config)
    assert r.returncode == 3


def test_scrub_of_a_file_held_by_a_session_is_refused(cli, seeded, config):
    path, _ = seeded
    data = path.read_bytes()
    with Session.load(str(path)):
        r = cli("scrub", str(path), env=config)
    assert r.returncode == 1 and "open in another session" in r.stdout
    assert path.read_bytes() == data


def test_import_redact_writes_no_secret(cli, tmp_path, config):
    data, placed = secret_corpus.claude_code_seeded(random.Random(5), forms=("tool-output", "base64"))
    src = tmp_path / "src" / "p" / "session.jsonl"
    src.parent.mkdir(parents=True)
    src.write_bytes(data)
    r = cli("import", "claude-code", "--redact", str(tmp_path / "src"), str(tmp_path / "out"), env=config)
    assert r.returncode == 0, r.stdout + r.stderr
    written = (tmp_path / "out" / "p" / "session.jsonl").read_bytes()
    assert not any(p.seed.secret.encode() in written for p, _ in placed)
    assert cli("scan", str(tmp_path / "out"), env=config).returncode == 0
    assert cli("scan", str(tmp_path / "src"), env=config).returncode == 1
