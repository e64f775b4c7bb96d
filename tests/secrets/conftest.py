"""Fixtures for the secrets tests: a configuration directory of the test's own (its own
fingerprint key, no user configuration file), and the seeds of ``benches/secret_corpus.py``."""

from __future__ import annotations

import random

import pytest


@pytest.fixture(autouse=True)
def config_dir(tmp_path_factory, monkeypatch):
    """Each test its own configuration directory (so its own fingerprint key)."""
    path = str(tmp_path_factory.mktemp("config"))
    monkeypatch.setenv("LLM_AGENT_SESSION_CONFIG", path)
    return path


@pytest.fixture
def rules():
    from llm_agent_session.secrets import load_rules

    return load_rules()


@pytest.fixture
def fingerprints():
    from llm_agent_session.secrets import Fingerprints

    return Fingerprints.default()


@pytest.fixture
def seeds():
    from benches import secret_corpus

    return secret_corpus.seeds(random.Random(7))
