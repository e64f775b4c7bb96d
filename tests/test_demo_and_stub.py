"""The README's main job and the native module's type stub, run for real."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

from llm_agent_session import Session


def test_demo_kills_a_real_writer_and_resumes(tmp_path, backend_name):
    env = dict(os.environ, LLM_AGENT_SESSION_BACKEND=backend_name)
    out = subprocess.run(
        [sys.executable, "-m", "llm_agent_session", "demo", "--dir", str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert f"backend: {backend_name}" in text
    assert "exit -9" in text  # the child really died of SIGKILL
    found, told = [int(x) for x in text.split("acknowledged appends found in the file: ")[1].split()[0:3:2]]
    assert found == told > 0
    assert "state 'dispatched'" in text
    with Session.load(tmp_path / "run.jsonl") as s:
        assert s.pending_tool_operations() == []
        assert s.messages[-1].content == "Good. Then run the test again."
        assert [e.type for e in s.events].count("tool-settled") == 2


@pytest.mark.skipif(importlib.util.find_spec("llm_agent_session._native") is None, reason="native module not built")
@pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="mypy not installed (pip install '.[test]')")
def test_native_stub_matches_the_module(backend_name):
    if backend_name != "native":
        pytest.skip("backend-independent: checked once, in the native run")
    out = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "llm_agent_session._native"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout + out.stderr
