"""Fixtures for the viewer's tests (helpers in tests/support/view.py). Skipped where the view
extra is missing."""

from __future__ import annotations

import os
import sys

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
