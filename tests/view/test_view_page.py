"""The page's own files (``view/static/``) as the server hands them to a browser."""

from __future__ import annotations

import os

import pytest
from view_support import client_for

import llm_agent_session

STATIC = os.path.join(os.path.dirname(llm_agent_session.__file__), "view", "static")


def _static_files():
    for folder, _, names in os.walk(STATIC):
        for name in sorted(names):
            yield os.path.relpath(os.path.join(folder, name), STATIC).replace(os.sep, "/")


def test_the_pages_files_are_asked_for_again_on_every_load(backend_name):
    """Each file of the page is revalidated on every load (``no-cache``; unchanged, it is a
    304 by its ETag). Without a Cache-Control, a browser kept each file for a time of its own
    guessing (a tenth of its age): after an upgrade, a page could run one module of the new
    version beside another of the old."""
    if backend_name != "pure":
        pytest.skip("backend-independent: checked once, in the pure run")
    client = client_for(["."], token=None)
    files = list(_static_files())
    assert "viewer.js" in files and "viewer.css" in files
    for name in files:
        first = client.get("/static/" + name)
        assert first.status_code == 200 and first.headers.get("cache-control") == "no-cache", name
        again = client.get("/static/" + name, headers={"if-none-match": first.headers["etag"]})
        assert again.status_code == 304 and again.headers.get("cache-control") == "no-cache", name
