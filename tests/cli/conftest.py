"""Fixtures for the command-line tests: a transcript with every kind of line, and a runner
that starts the real command in a subprocess on the backend under test (the autouse
``backend_name`` fixture of tests/conftest.py parametrises every test over backends)."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Dict, Optional

import pytest
from tests.support.cli import Transcript, build_transcript, child_env, declared_exit_codes  # noqa: E402


@pytest.fixture
def transcript(tmp_path) -> Transcript:
    return build_transcript(str(tmp_path / "run.jsonl"))


@pytest.fixture
def cli(backend_name):
    """Run ``python -m llm_agent_session ARGS`` on the backend under test. Every run also
    checks that the command returned one of the exit codes its --help lists (issue #27)."""

    def run(*args: str, env: Optional[Dict[str, str]] = None, timeout: float = 60, **kw) -> subprocess.CompletedProcess:
        r = subprocess.run(
            [sys.executable, "-m", "llm_agent_session", *args],
            capture_output=True, text=True, timeout=timeout, env=child_env(backend_name, env), **kw,
        )
        declared = declared_exit_codes().get(args[0]) if args else None
        if declared is not None:
            assert r.returncode in declared, f"{args[0]} exited {r.returncode}, which its --help does not list"
        return r

    return run


