"""Fixtures for the command-line tests: a transcript with every kind of line, and a runner
that starts the real command in a subprocess on the backend under test (the autouse
``backend_name`` fixture of tests/conftest.py parametrises every test over backends)."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Dict, Optional

import pytest

sys.path.insert(0, os.path.dirname(__file__))

from cli_support import Transcript, build_transcript, child_env  # noqa: E402


@pytest.fixture
def transcript(tmp_path) -> Transcript:
    return build_transcript(str(tmp_path / "run.jsonl"))


@pytest.fixture
def cli(backend_name):
    """Run ``python -m llm_agent_session ARGS`` on the backend under test."""

    def run(*args: str, env: Optional[Dict[str, str]] = None, timeout: float = 60, **kw) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "llm_agent_session", *args],
            capture_output=True, text=True, timeout=timeout, env=child_env(backend_name, env), **kw,
        )

    return run


