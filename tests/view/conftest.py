"""Fixtures for the viewer's tests (helpers in tests/support/view.py). Skipped where the view
extra is missing."""

from __future__ import annotations

import os
import sys
import threading
import time

import pytest

pytest.importorskip("starlette", reason="the viewer's packages (the view extra) are not installed")
pytest.importorskip("uvicorn", reason="the viewer's packages (the view extra) are not installed")
pytest.importorskip("markdown_it", reason="the viewer's packages (the view extra) are not installed")
pytest.importorskip("httpx", reason="httpx (Starlette's test client) is not installed")
from tests.support.view import Shelf, build_shelf, client_for  # noqa: E402


@pytest.fixture
def shelf(tmp_path) -> Shelf:
    return build_shelf(str(tmp_path / "shelf"))


@pytest.fixture
def client(shelf):
    """A client sending the token as the page does."""
    return client_for([shelf.root])


#: The viewer's threads that read whole files, often inside the native core.
PASSES = ("view-index-", "view-tokens", "view-shelf", "view-search")


@pytest.fixture(scope="session", autouse=True)
def passes_done_before_the_interpreter_ends():
    """Once the last test is done, wait for the viewer's passes its tests started (daemon
    threads): one still inside the native core when the interpreter finalizes is ended by
    CPython with pthread_exit, which aborts the process (the command itself ends with
    os._exit for that reason: cli/view.py), and the run would fail after every test passed."""
    yield
    deadline = time.monotonic() + 120
    for thread in threading.enumerate():
        if thread.daemon and thread.name.startswith(PASSES):
            thread.join(max(0.0, deadline - time.monotonic()))
