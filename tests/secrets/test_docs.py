"""docs/secrets.md holds what the code does: its python examples run as written, and its
table names every built-in rule."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from llm_agent_session.secrets import BUILTIN

DOC = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "docs", "secrets.md")


def test_the_table_names_every_builtin_rule(backend_name):
    if backend_name != "pure":
        pytest.skip("backend-independent: checked once, in the pure run")
    text = open(DOC, encoding="utf-8").read()
    assert [r.name for r in BUILTIN if f"`{r.name}`" not in text] == []


def test_the_python_examples_run(tmp_path, config_dir, backend_name):
    blocks = re.findall(r"^```python\n(.*?)^```", open(DOC, encoding="utf-8").read(), re.S | re.M)
    assert blocks
    env = dict(os.environ, LLM_AGENT_SESSION_BACKEND=backend_name, LLM_AGENT_SESSION_CONFIG=config_dir,
               DATABASE_URL="postgres://app:" + "Zq9" * 4 + "@db/prod")
    for block in blocks:
        r = subprocess.run([sys.executable, "-c", block], cwd=tmp_path, env=env, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert "«redacted:env-database-url:" in r.stdout and "«redacted:known-secret:" in r.stdout
    written = (tmp_path / "runs" / "a.jsonl").read_text()
    assert "Zq9" not in written and "zebra" not in written
