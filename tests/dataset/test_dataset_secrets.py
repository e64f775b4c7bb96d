"""The dataset masks by default (docs/secrets.md): the tables of a seeded transcript hold
none of its secrets, and all of them with ``redact=False`` (``--no-redact``); the report,
each file's result and the manifest count what was masked; a transcript exported one way
is read again by a run the other way; one that grows by a secret is read whole again
(masked), not only where it grew; and clean transcripts give the very same rows either
way."""

from __future__ import annotations

import json
import os
import random
from typing import Any, Set

import pytest

from benches import generate
from benches import secret_corpus
from tests.support.dataset import all_tables, manifest_entry
from llm_agent_session import Session
from llm_agent_session.dataset import export
from llm_agent_session.dataset import grow as grow_module
from llm_agent_session.dataset.report import EXPORTED, UNCHANGED


@pytest.fixture(autouse=True)
def own_config(tmp_path_factory: Any, monkeypatch: Any) -> None:
    """A configuration directory of the test's own: its own fingerprint key."""
    monkeypatch.setenv("LLM_AGENT_SESSION_CONFIG", str(tmp_path_factory.mktemp("config")))


def held(out: str, secrets: Set[str]) -> Set[str]:
    """The secrets any table's rows hold (a string cell, or JSON text as written)."""
    text = json.dumps(all_tables(out), ensure_ascii=False, default=str)
    return {s for s in secrets if s in text or json.dumps(s, ensure_ascii=False)[1:-1] in text}


def test_the_tables_of_a_seeded_transcript_hold_no_secret_unless_told(tmp_path: Any) -> None:
    src = tmp_path / "src" / "run.jsonl"
    placed = secret_corpus.write_seeded(str(src), random.Random(5), filler=0)
    secrets = {p.seed.secret for p, _ in placed}
    out = str(tmp_path / "out")
    report = export(str(src.parent), out)
    assert held(out, secrets) == set()
    assert report.masked >= len(secrets) and report.files[0].masked == report.masked
    for folder, _, files in os.walk(out):  # every file private: the rows hold what the conversations held
        for name in files:
            assert os.stat(os.path.join(folder, name)).st_mode & 0o777 == 0o600, name
    assert manifest_entry(out, str(src))["redacted"] == report.masked
    assert f"{report.masked:,} secrets masked" in report.summary()
    # The other way round: read again (the stamp is the same), every secret kept.
    report = export(str(src.parent), out, redact=False)
    assert [f.status for f in report.files] == [EXPORTED] and report.masked == 0
    assert held(out, secrets) == secrets and "redacted" not in manifest_entry(out, str(src))
    assert "masked" not in report.summary()
    report = export(str(src.parent), out)
    assert [f.status for f in report.files] == [EXPORTED] and held(out, secrets) == set()
    assert [f.status for f in export(str(src.parent), out).files] == [UNCHANGED]


def test_a_transcript_grown_by_a_secret_is_read_whole_and_masked(tmp_path: Any, monkeypatch: Any) -> None:
    monkeypatch.setattr(grow_module, "GROW_MIN", 0)  # small transcripts keep what a re-run needs
    src = tmp_path / "src" / "run.jsonl"
    os.makedirs(src.parent)
    generate.generate(str(src), 1 << 18, seed=6)
    out = str(tmp_path / "out")
    export(str(src.parent), out)
    assert manifest_entry(out, str(src)).get("grow") is not None
    with Session.load(str(src)) as s:  # a clean growth: read only where it grew
        s.append_message({"role": "user", "content": "and one more clean turn"})
    report = export(str(src.parent), out)
    assert [(f.status, f.grown) for f in report.files] == [(EXPORTED, True)] and report.masked == 0
    seed = next(s for s in secret_corpus.seeds(random.Random(6)) if s.rule == "github-token")
    with Session.load(str(src)) as s:
        s.append_message({"role": "user", "content": "here: " + seed.text})
    report = export(str(src.parent), out)
    assert [(f.status, f.grown) for f in report.files] == [(EXPORTED, False)] and report.masked == 1
    assert held(out, {seed.secret}) == set() and manifest_entry(out, str(src))["redacted"] == 1


def test_a_clean_transcript_gives_the_same_rows_either_way(tmp_path: Any) -> None:
    assert_same_rows_either_way(tmp_path, "realistic", 1 << 18, 5)


@pytest.mark.parametrize("corpus,size,seed", [("realistic", 1 << 20, 1), ("realistic", 3 << 20, 7),
                                              ("nonascii", 1 << 20, 3), ("escapes", 1 << 20, 4)])
def test_clean_corpora_give_the_same_rows_either_way(tmp_path: Any, corpus: str, size: int, seed: int) -> None:
    assert_same_rows_either_way(tmp_path, corpus, size, seed)


def assert_same_rows_either_way(tmp_path: Any, corpus: str, size: int, seed: int) -> None:
    src = tmp_path / "src"
    os.makedirs(src)
    generate.generate(str(src / "a.jsonl"), size, seed=seed, corpus=corpus)
    masked, kept = str(tmp_path / "masked"), str(tmp_path / "kept")
    assert export(str(src), masked).masked == 0
    export(str(src), kept, redact=False)
    assert all_tables(masked) == all_tables(kept)
    assert manifest_entry(masked, str(src / "a.jsonl"))["redacted"] == 0
