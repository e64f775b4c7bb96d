"""docs/integrations.md: each runtime's copy-paste example runs as written (offline, in a
fresh process) and leaves a transcript that loads with nothing pending."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.helpers import child_env
from llm_agent_session import Session

DOC = Path(__file__).resolve().parent.parent / "docs" / "integrations.md"
EXAMPLES = dict(re.findall(r"<!-- example: ([\w-]+) -->\n```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S))
NEEDS = {"openai-agents": ("agents", "runs/weather.jsonl"), "pydantic-ai": ("pydantic_ai", "runs/weather-pydantic-ai.jsonl"),
         "adk": ("google.adk", "runs/adk/weather/ada/s1.jsonl")}


def test_doc_has_every_example():
    assert sorted(EXAMPLES) == sorted(NEEDS)


@pytest.mark.parametrize("name", sorted(NEEDS))
def test_example_runs_as_written(name, tmp_path):
    module, transcript = NEEDS[name]
    if importlib.util.find_spec(module.split(".")[0]) is None or importlib.util.find_spec(module) is None:
        pytest.skip(f"{name} not installed: pip install 'llm-agent-session[{name}]'")
    env = child_env(OPENAI_AGENTS_DISABLE_TRACING="1")  # offline: no trace export
    script = tmp_path / "example.py"
    script.write_text(EXAMPLES[name], encoding="utf-8")
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    s = Session.load(tmp_path / transcript)
    try:
        if name == "adk":
            assert s.meta["agent"] == "weather" and s.meta["adk-session"]["id"] == "s1"
        else:
            assert s.meta == {"agent": "weather"}
        assert s.pending_tool_operations() == []
        assert [m.content for m in s.messages if m.role == "user"] == ["Weather in Paris?"]
        assert [e.payload["outcome"] for e in s.events if e.type == "tool-settled"] == ["completed"]
    finally:
        s.close()
    if name == "openai-agents":
        assert proc.stdout.splitlines() == ["It is sunny in Paris.", "4 items in the session"]
    elif name == "adk":
        assert proc.stdout.splitlines() == ["It is sunny in Paris.", "4 events in the session"]
    else:
        assert proc.stdout.splitlines() == ['{"get_weather":"sunny in a"}', "4 messages in the conversation"]
