"""Every behaviour test runs once per available backend (SPEC 7: both give identical
results and identical errors on every input; the test suite runs on both)."""

from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

import llm_agent_session  # noqa: E402
from llm_agent_session import Session, _backend  # noqa: E402

BACKENDS = list(_backend.available())


def pytest_report_header(config):
    return f"llm_agent_session backends available: {BACKENDS}"


@pytest.fixture(autouse=True, params=BACKENDS, ids=BACKENDS)
def backend_name(request):
    """Switch the running process to the backend under test."""
    previous = llm_agent_session.backend()
    _backend.use(request.param)
    assert llm_agent_session.backend() == request.param
    yield request.param
    _backend.use(previous)


@pytest.fixture
def tpath(tmp_path):
    """A path for a transcript that does not exist yet."""
    return tmp_path / "run.jsonl"


@pytest.fixture
def session(tpath):
    """A freshly created session, closed afterwards."""
    s = Session.create(tpath, {"agent": "test"})
    yield s
    s.close()


@pytest.fixture
def other_backend(backend_name):
    """The name of another available backend, or skip."""
    others = [b for b in BACKENDS if b != backend_name]
    if not others:
        pytest.skip("only one backend available")
    return others[0]
