"""What the data API refuses to answer, and with which status.

Raised wherever the answer is made (the routes, the view model, an open transcript); the
routes turn it into ``{"error": "..."}`` with its status: 400 for a question asked wrongly
(a parameter missing or malformed), 403 for a name that leaves its PATH, 404 for nothing
there.
"""

from __future__ import annotations


class Problem(Exception):
    """An answer of the data API that is an error: its HTTP `status` and what to say."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
