"""The package type-checks under ``mypy --strict`` (configured in pyproject.toml)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_mypy_strict_is_clean(backend_name):
    if backend_name != "pure":
        pytest.skip("backend-independent: checked once, in the pure run")
    if not os.path.isdir(os.path.join(ROOT, "python", "llm_agent_session")):
        pytest.skip("no source tree here (the suite runs against an installed wheel)")
    out = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", os.path.join(ROOT, "pyproject.toml")],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    assert out.returncode == 0, out.stdout + out.stderr
