"""The README's examples run as written: every ```python block, each in a fresh process,
top to bottom, in one empty directory, on the backend under test; every transcript they leave loads and
is a conversation the OpenAI chat-completions API accepts."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from typing import Any, Dict, List

import pytest

from llm_agent_session import Session

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(ROOT, "README.md")


def python_blocks() -> List[str]:
    with open(README, encoding="utf-8") as f:
        text = f.read()
    return re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)


def openai_problem(messages: List[Dict[str, Any]]) -> str:
    """Why the chat-completions API would refuse `messages` ("" when it would not): every
    assistant tool call is answered by a `tool` message before the next other message,
    and every `tool` message answers a call of the assistant message before it."""
    open_calls: List[str] = []
    for i, m in enumerate(messages):
        if m["role"] == "tool":
            if m.get("tool_call_id") not in open_calls:
                return f"message {i}: a tool message answering no open call ({m.get('tool_call_id')!r})"
            open_calls.remove(m["tool_call_id"])
            continue
        if open_calls:
            return f"message {i} ({m['role']}) comes before the tool calls {open_calls} are answered"
        if m["role"] == "assistant":
            open_calls = [c["id"] for c in m.get("tool_calls") or []]
    return f"the tool calls {open_calls} are never answered" if open_calls else ""


def test_openai_problem_finds_what_the_api_refuses():
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    asks = {"role": "assistant", "content": None, "tool_calls": [call]}
    answer = {"role": "tool", "tool_call_id": "c1", "content": "ok"}
    user = {"role": "user", "content": "go on"}
    assert openai_problem([user, asks, answer, user]) == ""
    assert "before the tool calls" in openai_problem([user, asks, user])
    assert "never answered" in openai_problem([user, asks])
    assert "answering no open call" in openai_problem([user, answer])


def test_readme_python_blocks_run_as_written(backend_name, tmp_path):
    """Each block runs alone, in a process of its own (a reader copies one block, not the
    page), in order, in one directory: a later block finds only the files an earlier one
    left, never its names."""
    blocks = python_blocks()
    assert len(blocks) >= 3
    work = tmp_path / "fresh"
    work.mkdir()
    env = dict(os.environ, LLM_AGENT_SESSION_BACKEND=backend_name, PYTHONWARNINGS="error")
    for number, block in enumerate(blocks, 1):
        r = subprocess.run([sys.executable, "-c", block], cwd=str(work), env=env, capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 0, f"README python block {number}, run alone:\n{block}\n{r.stdout}{r.stderr}"
    transcripts = [os.path.join(d, f) for d, _, files in os.walk(work) for f in files if f.endswith(".jsonl")]
    assert transcripts
    for path in transcripts:
        with Session.load(path) as s:  # closed by the example, or this would be SessionLocked
            assert s.pending_tool_operations() == []
            assert openai_problem([m.to_dict() for m in s.messages]) == ""


def test_readme_links_stay_inside_the_repository(backend_name):
    if backend_name != "pure":
        pytest.skip("backend-independent: checked once, in the pure run")
    with open(README, encoding="utf-8") as f:
        text = f.read()
    assert "SPEC.md" not in text  # a user of the package never has the project's shared files
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text):
        assert not target.startswith(("http:", "https:")), target
        if os.path.exists(os.path.join(ROOT, "pyproject.toml")):  # in the source tree
            assert os.path.exists(os.path.join(ROOT, target)), target


def test_every_public_name_has_a_docstring(backend_name):
    if backend_name != "pure":
        pytest.skip("backend-independent: checked once, in the pure run")
    import inspect

    import llm_agent_session

    missing = []
    for name in llm_agent_session.__all__:
        obj = getattr(llm_agent_session, name)
        if len(inspect.getdoc(obj) or "") < 20:
            missing.append(name)
        if inspect.isclass(obj) and not issubclass(obj, Exception):
            for attr, value in vars(obj).items():
                if attr.startswith("_") or not (callable(value) or isinstance(value, (property, classmethod, staticmethod))):
                    continue
                doc = value.__doc__ if isinstance(value, property) else inspect.getdoc(getattr(obj, attr))
                if len(doc or "") < 20:
                    missing.append(f"{name}.{attr}")
    assert missing == []


def test_help_of_session_opens_with_what_a_user_does(backend_name):
    if backend_name != "pure":
        pytest.skip("backend-independent: checked once, in the pure run")
    import pydoc

    from llm_agent_session import Session

    text = pydoc.render_doc(Session, renderer=pydoc.plaintext)
    opening = "\n".join(text.splitlines()[:12])
    assert "fd" not in opening and "FoldState" not in opening  # not the internal constructor
    for way_in in ("Session.create(path, meta)", "Session.load(path)", "Session.peek(path)"):
        assert way_in in opening, way_in


def test_ci_runs_the_readme_test_command_as_written(backend_name):
    if backend_name != "pure":
        pytest.skip("backend-independent: checked once, in the pure run")
    ci = os.path.join(ROOT, ".ci", "run")
    if not os.path.exists(ci):
        pytest.skip("not in the source tree (the wheel's test run has no .ci/)")
    with open(README, encoding="utf-8") as f:
        commands = [line.strip() for line in f if line.strip().startswith('python -m pip install ".[test')]
    assert len(commands) == 1, commands  # the one command that builds and runs every test
    with open(ci, encoding="utf-8") as f:
        assert commands[0] in [line.strip() for line in f]
