"""Token usage, the value and the counting rule (``usage.py`` is the public face: it adds
the readers of files, over the core; this module stands below the cores, which follow it).

What each provider response cost, as a transcript records it, counted once.

A message line records the usage of the provider response it is (a part of) in its extra
``token-usage`` (docs/FORMAT.md)::

    {"input": 3, "output": 211, "cache-read": 61608, "cache-write": 1024, "response-id": "msg_01..."}

``input`` is the prompt tokens neither read from nor written to the provider's cache,
``cache-read`` and ``cache-write`` those that were (so the whole prompt is their sum), and
``output`` the tokens generated, reasoning included. A figure the source does not state is
absent, never 0. ``response-id`` is the provider's id of the response: the lines that
name one id are one response, however many lines it was streamed over.

The counting rule, the one both cores' dataset pass follow (``rust/columns/usage.rs``;
``_pure/columns.py`` calls :func:`count_lines`):

* of the message lines with a ``token-usage`` object, those naming one ``response-id``
  are one response, counted once: at the last of them in file order (a streamed
  response's last line carries its final count); a line naming no id is a response of
  its own;
* a figure is a JSON integer from 0 to 2**63 - 1; anything else is not stated;
* a total is, per figure, the sum over the counted lines that state it (held at
  2**63 - 1 should it pass it), and None where none states it; ``responses`` counts the
  responses, ``unmeasured`` those whose counted line states no figure plus the assistant
  message lines that record no ``token-usage`` at all.

Every line counts, live or not: a compacted or rewound message's response was paid for.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

#: The message extra that holds a response's usage.
TOKEN_USAGE = "token-usage"
#: The figures, as the extra names them and as ``Usage`` does.
FIGURES: Tuple[Tuple[str, str], ...] = (
    ("input", "input"), ("output", "output"), ("cache-read", "cache_read"), ("cache-write", "cache_write"))
RESPONSE_ID = "response-id"
#: Where a total stops (the largest int64: what a Parquet column holds).
MAX_TOTAL = (1 << 63) - 1


def figure(value: Any) -> Optional[int]:
    """A figure as the readers take it: an int from 0 to 2**63 - 1 (a bool is not one)."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_TOTAL:
        return value
    return None


@dataclass(frozen=True)
class Usage:
    """The token usage of one provider response. Each figure is a non-negative int or None
    (not stated: never write 0 for a count the provider did not give); ``response_id`` is
    the provider's id of the response (a non-empty str) or None. ``TypeError`` /
    ``ValueError`` for anything else."""

    input: Optional[int] = None
    output: Optional[int] = None
    cache_read: Optional[int] = None
    cache_write: Optional[int] = None
    response_id: Optional[str] = None

    def __post_init__(self) -> None:
        for _, name in FIGURES:
            value = getattr(self, name)
            if value is None:
                continue
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(f"Usage.{name} must be an int or None, not {type(value).__name__}")
            if not 0 <= value <= MAX_TOTAL:
                raise ValueError(f"Usage.{name} must be from 0 to 2**63 - 1, not {value}")
        if self.response_id is not None:
            if not isinstance(self.response_id, str):
                raise TypeError(f"Usage.response_id must be a str or None, not {type(self.response_id).__name__}")
            if not self.response_id:
                raise ValueError("Usage.response_id must not be empty (None: the response has no id)")

    @property
    def figures(self) -> Tuple[Optional[int], Optional[int], Optional[int], Optional[int]]:
        """(input, output, cache_read, cache_write)."""
        return (self.input, self.output, self.cache_read, self.cache_write)

    def to_json(self) -> Dict[str, Any]:
        """The ``token-usage`` extra: the figures and id that are stated, and no others."""
        out: Dict[str, Any] = {key: getattr(self, name) for key, name in FIGURES if getattr(self, name) is not None}
        if self.response_id is not None:
            out[RESPONSE_ID] = self.response_id
        return out

    @classmethod
    def from_json(cls, value: Any) -> Optional["Usage"]:
        """A ``token-usage`` value as every reader reads it: None unless it is an object; a
        figure that is not an int from 0 to 2**63 - 1, or an id that is not a non-empty
        string, is not stated. Never raises."""
        if not isinstance(value, dict):
            return None
        rid = value.get(RESPONSE_ID)
        i, o, r, w = (figure(value.get(key)) for key, _ in FIGURES)
        return cls(i, o, r, w, rid if isinstance(rid, str) and rid else None)

    @classmethod
    def checked(cls, value: Any, what: str = TOKEN_USAGE) -> "Usage":
        """A ``token-usage`` value a writer gives: an object of the figures and id only, each
        valid (``TypeError`` / ``ValueError`` naming `what` otherwise)."""
        if isinstance(value, Usage):
            return value
        if not isinstance(value, Mapping):
            raise TypeError(f"{what} must be a Usage or a mapping, not {type(value).__name__}")
        keys = {key for key, _ in FIGURES} | {RESPONSE_ID}
        unknown = sorted(str(k) for k in value if k not in keys)
        if unknown:
            raise ValueError(f"{what} has keys it cannot have: {', '.join(unknown)} "
                             f"(it holds only {', '.join(sorted(keys))})")
        try:
            i, o, r, w = (value.get(key) for key, _ in FIGURES)
            return cls(i, o, r, w, value.get(RESPONSE_ID))
        except (TypeError, ValueError) as e:
            raise type(e)(f"{what}: {e}") from None


def stated(input: Any = None, output: Any = None, cache_read: Any = None, cache_write: Any = None,
           response_id: Any = None) -> Dict[str, Any]:
    """The ``token-usage`` extra of counts a source gives, each kept only where it is a
    figure (the readers' rule), the id only where it is a non-empty string: what
    ``Usage(...).to_json()`` gives for valid values, without building one (an importer
    makes one per response)."""
    out: Dict[str, Any] = {}
    for (key, _), value in zip(FIGURES, (input, output, cache_read, cache_write)):
        if type(value) is int and 0 <= value <= MAX_TOTAL:
            out[key] = value
        elif value is not None and figure(value) is not None:  # an int subclass
            out[key] = int(value)
    if isinstance(response_id, str) and response_id:
        out[RESPONSE_ID] = response_id
    return out


def of_message(payload: Mapping[str, Any]) -> Optional[Usage]:
    """The usage a message line's payload records (its ``token-usage`` extra), or None."""
    return Usage.from_json(payload.get(TOKEN_USAGE))


def _plus(a: Optional[int], b: Optional[int]) -> Optional[int]:
    if a is None:
        return b
    if b is None:
        return a
    return min(a + b, MAX_TOTAL)


@dataclass(frozen=True)
class UsageTotals:
    """What a transcript's responses (or several transcripts') add up to: each figure
    summed over the responses that state it (None where none does; held at 2**63 - 1),
    how many responses were counted, and how many of them, or of its assistant
    messages, record no figure (``unmeasured``: the totals leave them out)."""

    input: Optional[int] = None
    output: Optional[int] = None
    cache_read: Optional[int] = None
    cache_write: Optional[int] = None
    responses: int = 0
    unmeasured: int = 0

    @property
    def figures(self) -> Tuple[Optional[int], Optional[int], Optional[int], Optional[int]]:
        """(input, output, cache_read, cache_write)."""
        return (self.input, self.output, self.cache_read, self.cache_write)

    def __add__(self, other: "UsageTotals") -> "UsageTotals":
        """Both together (no response in both: see ``of_transcripts`` for that)."""
        if not isinstance(other, UsageTotals):
            return NotImplemented
        i, o, r, w = (_plus(a, b) for a, b in zip(self.figures, other.figures))
        return UsageTotals(i, o, r, w, self.responses + other.responses, self.unmeasured + other.unmeasured)

    def to_json(self) -> Dict[str, Any]:
        """As ``stats --json`` gives it: the fields by name, None as null."""
        return dataclasses.asdict(self)


def count_lines(lines: Sequence[Tuple[Optional[Usage], bool]]) -> Tuple[List[Optional[bool]], UsageTotals]:
    """The counting rule over a transcript's message lines, in file order, each given as
    (its usage or None, whether its role is ``assistant``): per line, whether its usage is
    the one counted for its response (None for a line without usage), and the totals."""
    flags: List[Optional[bool]] = [None] * len(lines)
    seen = set()
    for i in range(len(lines) - 1, -1, -1):  # the last line of a response is its counted one
        stated = lines[i][0]
        if stated is None:
            continue
        rid = stated.response_id
        flags[i] = rid is None or rid not in seen
        if rid is not None:
            seen.add(rid)
    totals = UsageTotals()
    for (stated, assistant), flag in zip(lines, flags):
        if stated is None:
            if assistant:
                totals = dataclasses.replace(totals, unmeasured=totals.unmeasured + 1)
        elif flag:
            totals = totals + one_response(stated)
    return flags, totals


def one_response(stated: Usage) -> UsageTotals:
    """One counted response's totals."""
    i, o, r, w = stated.figures
    return UsageTotals(i, o, r, w, responses=1, unmeasured=1 if stated.figures == (None,) * 4 else 0)


def of_events(events: Iterable[Any]) -> UsageTotals:
    """The totals of envelopes in file order (``Session.events``, a peek's ``envelopes``):
    the reference the cores' dataset pass is held to (it reads every payload)."""
    lines = [(of_message(e.payload), e.payload.get("role") == "assistant") for e in events if e.type == "message"]
    return count_lines(lines)[1]


#: A counted response as the core's dataset pass lists it: (the envelope id of the line
#: it is counted at, its response id or None, input, output, cache_read, cache_write).
Response = Tuple[str, Optional[str], Optional[int], Optional[int], Optional[int], Optional[int]]
