"""Every address the viewer hands out, made by one function (docs/viewer.md).

The page is one static file served at ``/`` (the shelf) and at ``/t/NAME`` (a
transcript, ``NAME`` as the shelf lists it, each segment percent-encoded), with ``?at=ID``
(the envelope at the top of the screen) and ``?mode=live``; the data API is
``/api/ENDPOINT?t=NAME&...``. The URL the command prints adds the origin and, after
``#``, the run's token (a part of the address no browser sends to a server).
"""

from __future__ import annotations

from typing import Mapping, Optional, Union
from urllib.parse import quote, urlencode

#: The data API's endpoints (``/api/NAME``), as the routes serve them.
ENDPOINTS = ("shelf", "transcript", "window", "envelope", "locate", "search", "follow", "shelf-search", "reveal")
#: Where a transcript's page is: this, then its name.
TRANSCRIPT_PAGE = "/t/"

Value = Union[str, int]


def link(to: str = "page", transcript: Optional[str] = None, query: Optional[Mapping[str, Value]] = None, *,
         origin: str = "", token: Optional[str] = None) -> str:
    """The address of `to`: ``"page"`` (the shelf, or with `transcript` that transcript's
    page) or one of ``ENDPOINTS`` (its ``t`` is `transcript`), with `query` after ``?``.
    `origin` (``http://host:port``) makes it absolute; `token` adds ``#token=``. A
    transcript's name keeps its ``/`` and ``~`` on a page's path (the names the shelf
    lists); everything else that is not a letter, digit or ``_.-`` is percent-encoded.
    ValueError for any other `to`."""
    params = dict(query or {})
    if to == "page":
        path = "/" if transcript is None else TRANSCRIPT_PAGE + quote(transcript, safe="/~")
    elif to in ENDPOINTS:
        path = "/api/" + to
        if transcript is not None:
            params = {"t": transcript, **params}
    else:
        raise ValueError(f"no such place in the viewer: {to!r} (the page, or one of {', '.join(ENDPOINTS)})")
    address = origin + path
    if params:
        address += "?" + urlencode(params, quote_via=quote)
    if token is not None:
        address += "#" + urlencode({"token": token}, quote_via=quote)
    return address
