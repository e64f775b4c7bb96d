"""Token usage: what each provider response cost, as a transcript records it, counted once.

A message line records the usage of the provider response it is (a part of) in its extra
``token-usage`` (docs/FORMAT.md): ``input`` (prompt tokens neither read from nor written
to the cache), ``output`` (generated, reasoning included), ``cache-read``, ``cache-write``
and the provider's ``response-id``. The lines naming one response id are one response,
counted once, at the last of them; a figure not stated is None, never 0. The value and
the rule are in ``_token_usage`` (the cores follow it); here they are, with the readers
of transcripts on disk, over the core's dataset pass (what ``stats`` and ``dataset`` show):

    from llm_agent_session import usage
    usage.of_transcript("run.jsonl")           # UsageTotals(input=..., output=..., ...)
    usage.of_transcripts(paths)                # a response found in several counted once
    usage.of_message(envelope.payload)         # one line's Usage, or None
"""

from __future__ import annotations

import os
from typing import Any, Iterable, List

from . import _backend
from ._files import open_to_read
from ._token_usage import FIGURES as FIGURES
from ._token_usage import MAX_TOTAL as MAX_TOTAL
from ._token_usage import RESPONSE_ID as RESPONSE_ID
from ._token_usage import TOKEN_USAGE as TOKEN_USAGE
from ._token_usage import Response as Response
from ._token_usage import Usage as Usage
from ._token_usage import UsageTotals as UsageTotals
from ._token_usage import count_lines as count_lines
from ._token_usage import of_events as of_events
from ._token_usage import of_message as of_message
from ._token_usage import one_response

__all__ = ["Usage", "UsageTotals", "of_message", "of_events", "of_transcript", "of_transcripts", "responses",
           "count_lines", "TOKEN_USAGE"]


def _pass(path: Any) -> Any:
    fd = open_to_read(os.fspath(path))
    try:
        size = os.fstat(fd).st_size
        # Every line, an unfinished last one too (skipped, as a read-only reader does).
        return _backend.core.dataset_pass(fd, size, True, False, 8 << 20)
    finally:
        os.close(fd)


def of_transcript(path: Any) -> UsageTotals:
    """The totals of the transcript at `path`, read (never written) by the core's dataset
    pass, the counting ``llm-agent-session dataset`` and ``stats`` do: every line that
    parses, a later line repeating an envelope id left out (as salvage reads a file).
    ``OSError`` where it cannot be read."""
    totals: UsageTotals = _pass(path).summary.usage
    return totals


def responses(path: Any) -> List[Response]:
    """The counted responses of the transcript at `path`, in file order of their counted
    lines: (response id or None, input, output, cache_read, cache_write)."""
    return list(_pass(path).responses())


def of_transcripts(paths: Iterable[Any]) -> UsageTotals:
    """The totals of several transcripts, a response found in more than one (a session
    that copied another's lines, as a continued Claude Code session does) counted once,
    with the figures of the first of `paths` that holds it."""
    seen = set()
    total = UsageTotals()
    for path in paths:
        found = _pass(path)
        listed: List[Response] = found.responses()
        # Its assistant messages that record no usage (the rest of `unmeasured` is per response).
        silent = found.summary.usage.unmeasured - sum(1 for r in listed if r[1:] == (None,) * 4)
        part = UsageTotals(unmeasured=silent)
        for rid, i, o, r, w in listed:
            if rid is not None:
                if rid in seen:
                    continue
                seen.add(rid)
            part = part + one_response(Usage(i, o, r, w))
        total = total + part
    return total
