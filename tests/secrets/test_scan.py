"""``secrets.scan_file`` over transcripts, Claude Code and Codex session files (``.zst``
too) and artifacts: every seeded secret is found where it was put, in every form; the
clean corpora (the generated transcripts and sources) give nothing; no finding holds a
secret; both cores find the same."""

from __future__ import annotations

import collections
import json
import os
import random

import pytest

from benches import generate
from benches import import_speed
from benches import secret_corpus
from llm_agent_session import _backend
from llm_agent_session.secrets import histories, scan_file


def _by(findings, key):
    out = collections.defaultdict(set)
    for f in findings:
        out[key(f)].add(f.finding.rule)
    return out


def test_every_seed_in_every_form_is_found_in_a_transcript(tmp_path, rules, fingerprints):
    path = str(tmp_path / "seeded.jsonl")
    placed = secret_corpus.write_seeded(path, random.Random(1), filler=1)
    result = scan_file(path, rules, fingerprints)
    assert (result.format, result.error) == ("transcript", None)
    found = _by(result.findings, lambda f: f.envelope)
    missed = [(p.seed.rule, p.form) for p, id_ in placed if p.seed.rule not in found[id_]]
    assert missed == []
    assert len({(p.seed.rule, p.form) for p, _ in placed}) == len(secret_corpus.seeds(random.Random(1))) * 5
    # Where each was: a payload path, never the secret.
    text = json.dumps([list(f) for f in result.findings])
    assert not any(p.seed.secret in text for p, _ in placed)
    assert {f.finding.path[0] for f in result.findings} == {"payload"}
    split = [f for f in result.findings if f.finding.parts > 1]
    assert split and all(f.finding.path[:2] == ("payload", "content") for f in split)


@pytest.mark.parametrize("fmt", ["claude-code", "codex"])
@pytest.mark.parametrize("compressed", [False, True])
def test_every_seed_is_found_in_claude_code_and_codex_files(tmp_path, rules, fingerprints, fmt, compressed):
    make = secret_corpus.claude_code_seeded if fmt == "claude-code" else secret_corpus.codex_seeded
    data, placed = make(random.Random(2))
    path = tmp_path / ("session.jsonl" + (".zst" if compressed else ""))
    if compressed:
        zstandard = pytest.importorskip("zstandard")
        data = zstandard.ZstdCompressor().compress(data)
    path.write_bytes(data)
    result = scan_file(str(path), rules, fingerprints)
    assert (result.format, result.error) == (fmt, None)
    found = _by(result.findings, lambda f: f.line)
    assert [(p.seed.rule, p.form) for p, line in placed if p.seed.rule not in found[line]] == []


CLEAN_SIZE = 1 << 20


@pytest.mark.parametrize("corpus", generate.CORPORA)
def test_the_generated_transcripts_hold_no_secret(tmp_path, rules, fingerprints, corpus):
    path = str(tmp_path / f"{corpus}.jsonl")
    generate.generate(path, CLEAN_SIZE, seed=3, corpus=corpus)
    result = scan_file(path, rules, fingerprints)
    assert result.error is None and result.lines > 100
    assert [(f.finding.rule, f.finding.where()) for f in result.findings] == []


@pytest.mark.parametrize("fmt", ["claude-code", "codex"])
def test_the_generated_sources_hold_no_secret(tmp_path, rules, fingerprints, fmt):
    path = tmp_path / "source.jsonl"
    path.write_bytes(import_speed.SOURCES[fmt][1](CLEAN_SIZE, 4))
    result = scan_file(str(path), rules, fingerprints)
    assert result.format == fmt and result.error is None
    assert [(f.finding.rule, f.finding.where()) for f in result.findings] == []


def test_artifacts_and_lines_that_are_not_json_are_read_as_text(tmp_path, rules, fingerprints, seeds):
    token = next(s for s in seeds if s.rule == "github-token")
    transcript = tmp_path / "run.jsonl"
    meta = '{"id":"m","payload":{},"ts":"2026-01-01T00:00:00.000000Z","type":"session-meta","v":1}\n'
    transcript.write_text(meta + '{"id":"x","payload":{"role":"tool","content":"' + token.text)  # torn
    artifacts = tmp_path / "run.artifacts"
    artifacts.mkdir()
    (artifacts / "call_1.txt").write_text("line one\n" + token.text + "\n")
    (tmp_path / "notes.txt").write_text(token.text)  # not a history: not read in a directory
    files = list(histories([str(tmp_path)]))
    assert files == [(str(transcript), None), (str(artifacts / "call_1.txt"), "text")]
    text = scan_file(files[1][0], rules, fingerprints, files[1][1])
    assert [(f.line, f.finding.rule, f.finding.path) for f in text.findings] == [(2, "github-token", ())]
    torn = scan_file(str(transcript), rules, fingerprints)
    assert [(f.line, f.envelope, f.finding.rule) for f in torn.findings] == [(2, None, "github-token")]
    assert torn.lines == 2


def test_an_unreadable_file_is_an_error_not_a_crash(tmp_path, rules, fingerprints):
    assert scan_file(str(tmp_path / "missing.jsonl"), rules, fingerprints).error
    (tmp_path / "bad.jsonl.zst").write_bytes(b"not zstd at all")
    pytest.importorskip("zstandard")
    result = scan_file(str(tmp_path / "bad.jsonl.zst"), rules, fingerprints)
    assert result.error and "zstd" in result.error


def test_both_cores_find_the_same(tmp_path, rules, fingerprints, other_backend, backend_name):
    path = str(tmp_path / "seeded.jsonl")
    secret_corpus.write_seeded(path, random.Random(5), filler=0)
    mine = scan_file(path, rules, fingerprints)
    _backend.use(other_backend)
    try:
        theirs = scan_file(path, rules, fingerprints)
    finally:
        _backend.use(backend_name)
    assert mine == theirs and len(mine.findings) > 100


def test_a_block_boundary_inside_a_line_changes_nothing(tmp_path, rules, fingerprints, monkeypatch, seeds):
    from llm_agent_session.secrets import scan as scan_module

    path = str(tmp_path / "seeded.jsonl")
    secret_corpus.write_seeded(path, random.Random(6), filler=1, forms=("tool-output",))
    whole = scan_file(path, rules, fingerprints)
    monkeypatch.setattr(scan_module, "BLOCK", 777)
    assert scan_file(path, rules, fingerprints) == whole
    assert os.path.getsize(path) > 777 * 10
