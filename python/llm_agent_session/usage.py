"""Token usage: what each provider response cost, as a transcript records it, counted once.

A message line records the usage of the provider response it is (a part of) in its extra
``token-usage`` (docs/FORMAT.md): ``input`` (prompt tokens neither read from nor written
to the cache), ``output`` (generated, reasoning included), ``cache-read``, ``cache-write``
and the provider's ``response-id``. The lines naming one response id are one response,
counted once, at the last of them; a figure not stated is None, never 0. The value and
the rule are in ``_token_usage`` (the cores follow it); here they are, with the readers
of transcripts on disk, over the core's usage pass (the dataset pass's counting: what ``stats``
and ``dataset`` show):

    from llm_agent_session import usage
    usage.of_transcript("run.jsonl")           # UsageTotals(input=..., output=..., ...)
    usage.of_transcripts(paths)                # a response found in several counted once
    usage.of_message(envelope.payload)         # one line's Usage, or None
    reading = usage.read("run.jsonl")          # totals, and where each response is counted
    reading.counted[message_id]                # the response counted at that line, if any
    usage.together([reading, ...])             # several readings' totals, each response once
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, NamedTuple, Tuple

from . import _backend
from ._files import open_to_read
from ._token_usage import FIGURES as FIGURES
from ._token_usage import MAX_TOTAL as MAX_TOTAL
from ._token_usage import RESPONSE_ID as RESPONSE_ID
from ._token_usage import Response
from ._token_usage import TOKEN_USAGE as TOKEN_USAGE
from ._token_usage import Usage as Usage
from ._token_usage import UsageTotals as UsageTotals
from ._token_usage import count_lines as count_lines
from ._token_usage import of_events as of_events
from ._token_usage import of_message as of_message
from ._token_usage import one_response

__all__ = ["Usage", "UsageTotals", "TranscriptUsage", "Counted", "of_message", "of_events", "of_transcript",
           "of_transcripts", "read", "together", "count_lines", "TOKEN_USAGE"]


def _pass(path: Any) -> Tuple[UsageTotals, List[Response]]:
    """The core's usage pass: the dataset pass's counting, without the rows' memory."""
    fd = open_to_read(os.fspath(path))
    try:
        size = os.fstat(fd).st_size
        # Every line, an unfinished last one too (skipped, as a read-only reader does).
        return _backend.core.usage_pass(fd, size, True)
    finally:
        os.close(fd)


def of_transcript(path: Any) -> UsageTotals:
    """The totals of the transcript at `path`, read (never written) by the core's usage
    pass, counting as ``llm-agent-session dataset`` and ``stats`` do: every line that
    parses, a later line repeating an envelope id left out (as salvage reads a file).
    ``OSError`` where it cannot be read."""
    return _pass(path)[0]


class Counted(NamedTuple):
    """A response as counted: its usage (at the line it is counted at, ``message_id``)."""

    message_id: str  # the envelope id of that message line
    usage: Usage  # its response id and figures


@dataclass(frozen=True)
class TranscriptUsage:
    """A transcript's totals and its counted responses, by the message line each is counted
    at (in file order): what a reader that shows each message's usage needs besides the
    line's own ``of_message``. A message line whose usage names a response counted at
    another line (``counted_at``) is a repeat of it."""

    totals: UsageTotals
    counted: Mapping[str, Counted]  # message id -> the response counted at that line

    def counted_at(self) -> Dict[str, str]:
        """Each response id -> the message id it is counted at."""
        return {c.usage.response_id: m for m, c in self.counted.items() if c.usage.response_id is not None}


def read(path: Any) -> TranscriptUsage:
    """The totals and the counted responses of the transcript at `path` (one pass of the
    core, as ``of_transcript``)."""
    totals, responses = _pass(path)
    counted = {m: Counted(m, Usage(i, o, r, w, rid)) for m, rid, i, o, r, w in responses}
    return TranscriptUsage(totals, counted)


def together(readings: Iterable[TranscriptUsage]) -> UsageTotals:
    """The totals of several transcripts (``read``), a response found in more than one (a
    session that copied another's lines, as a continued Claude Code session does) counted
    once, with the figures of the first of `readings` that holds it."""
    seen = set()
    total = UsageTotals()
    for reading in readings:
        listed = list(reading.counted.values())
        # Its assistant messages that record no usage (the rest of `unmeasured` is per response).
        silent = reading.totals.unmeasured - sum(1 for c in listed if c.usage.figures == (None,) * 4)
        part = UsageTotals(unmeasured=silent)
        for c in listed:
            rid = c.usage.response_id
            if rid is not None:
                if rid in seen:
                    continue
                seen.add(rid)
            part = part + one_response(c.usage)
        total = total + part
    return total


def of_transcripts(paths: Iterable[Any]) -> UsageTotals:
    """``together(read(p) for p in paths)``: several transcripts' totals, each response once."""
    return together(read(p) for p in paths)
