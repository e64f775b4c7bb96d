"""Issue #15, packaging: the core imports with no runtime installed, and an adapter imported
without its runtime raises an ImportError that names the extra to install. Runs whether or
not the runtimes are installed (each child hides them)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support.helpers import child_env


def run_hiding(hidden, code):
    prelude = "import sys\n" + "".join(f"sys.modules[{name!r}] = None\n" for name in hidden)
    return subprocess.run([sys.executable, "-c", prelude + code], env=child_env(),
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("module, runtime, extra", [
    ("openai_agents", "agents", "openai-agents"),
    ("pydantic_ai", "pydantic_ai", "pydantic-ai"),
    ("adk", "google.adk", "adk"),
])
def test_import_without_the_extra_names_it(module, runtime, extra):
    proc = run_hiding([runtime], f"import llm_agent_session.integrations.{module}\n")
    assert proc.returncode != 0
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError:") and f"pip install 'llm-agent-session[{extra}]'" in last


def test_core_imports_without_any_runtime():
    proc = run_hiding(
        ["agents", "pydantic_ai", "pydantic", "openai", "google.adk"],
        "import llm_agent_session, llm_agent_session.integrations, llm_agent_session.aio\n"
        "from llm_agent_session import Session\n"
        "print(llm_agent_session.backend())\n",
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() in ("native", "pure")
