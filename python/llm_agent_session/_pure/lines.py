"""One line of a transcript, in pure Python: is it whole, and which envelope is it.

The reading contract both cores follow (the native one in rust/ mirrors this file):

* A line is blank when it holds only space, tab and CR.
* ``classify`` answers the tail check's question, "is this one whole JSON value?",
  on grammar alone (RFC 8259, UTF-8): a lone surrogate escape or a huge number is
  whole, so a complete line is never cut off as if it were torn.
* ``parse_envelope`` is stricter, for replay and peek: it also refuses lone
  surrogate escapes and a float literal that overflows to infinity (integers of
  any length are read exactly), then checks the envelope shape.
* Nesting deeper than ``MAX_READ_DEPTH`` is its own verdict ("too deep"), never
  "torn": it is refused wherever it stands, and never cut off.
"""

from __future__ import annotations

import json
import re
from typing import Any, Dict, Optional, Tuple

from ..canonical import NotJSON, refuse_constant, str_to_int

MAX_READ_DEPTH = 512
BLANK_BYTES = b" \t\r"

WHOLE, TORN, TOO_DEEP = "whole", "torn", "too-deep"

# What `nesting_depth` stops at: outside a string, a quote or a bracket; inside one, a
# quote or a backslash. Searched for one at a time, so its memory is constant: a single
# regex for a whole string (`"(?:[^"\\]|\\.)*"`) keeps a backtracking frame per character
# and reached a MemoryError at 2.8 GB on a 30 MB line.
_OUTSIDE_STRING = re.compile(rb'["\[\]{}]')
_INSIDE_STRING = re.compile(rb'["\\]')
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")

ENVELOPE_KEYS = frozenset(("id", "payload", "ts", "type", "v"))


# A power loss (or OS crash) leaves the pages the OS had not written as zeros, which no
# writer of JSON produces: say so, rather than blame an edit.
POWER_LOSS_LINE = (
    "not a JSON value: it holds zero bytes, the mark of a probable power loss "
    "(data the OS had not yet written to disk)"
)
POWER_LOSS_TOO = (
    ", and it holds zero bytes, the mark of a probable power loss (data the OS had not yet written to disk)"
)


class LineProblem(Exception):
    """Why a line is not an envelope. ``kind`` is ``corrupt`` or ``version``."""

    def __init__(self, kind: str, reason: str) -> None:
        super().__init__(kind, reason)
        self.kind = kind
        self.reason = reason


def is_blank(raw: bytes) -> bool:
    return not raw.strip(BLANK_BYTES)


def nesting_depth(raw: bytes) -> int:
    """The deepest count of open containers, brackets inside strings not counted."""
    # Cheap filter first: a line with few brackets cannot be deep.
    if raw.count(b"[") + raw.count(b"{") <= MAX_READ_DEPTH:
        return 0
    depth = deepest = 0
    pos, end = 0, len(raw)
    outside, inside = _OUTSIDE_STRING.search, _INSIDE_STRING.search
    while pos < end:
        m = outside(raw, pos)
        if m is None:
            break
        c = raw[m.start()]
        pos = m.end()
        if c == 0x22:  # '"': skip the string (a torn line may stop inside it)
            while True:
                q = inside(raw, pos)
                if q is None:
                    return deepest
                if raw[q.start()] == 0x5C:  # a backslash escapes the next byte
                    pos = q.end() + 1
                else:
                    pos = q.end()
                    break
        elif c == 0x5B or c == 0x7B:  # '[' or '{'
            depth += 1
            if depth > deepest:
                deepest = depth
        else:
            depth -= 1
    return deepest


def too_deep_reason() -> str:
    return f"nested deeper than {MAX_READ_DEPTH} levels"


def _zero(_: str) -> int:
    return 0


def classify(raw: bytes) -> str:
    """WHOLE, TORN or TOO_DEEP: the tail check's verdict on one non-blank line."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return TORN
    if nesting_depth(raw) > MAX_READ_DEPTH:
        return TOO_DEEP
    try:
        # parse_int/parse_float stubs: grammar only, no value limits.
        json.loads(text, parse_int=_zero, parse_float=_zero, parse_constant=refuse_constant)
    except (ValueError, RecursionError):
        return TORN
    return WHOLE


def _checked_float(s: str) -> float:
    f = float(s)
    if f in (float("inf"), float("-inf")):
        raise OverflowError(s)
    return f


def _has_lone_surrogate(value: Any) -> bool:
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            if not v.isascii():
                try:
                    v.encode("utf-8")
                except UnicodeEncodeError:
                    return True
        elif isinstance(v, dict):
            for k, item in v.items():
                stack.append(k)
                stack.append(item)
        elif isinstance(v, list):
            stack.extend(v)
    return False


def decode_json(raw: bytes, line_offset: int) -> Any:
    """The JSON value of a non-blank line, under the strict reading contract."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        also = POWER_LOSS_TOO if b"\0" in raw else ""
        raise LineProblem("corrupt", f"invalid UTF-8 at byte {line_offset + e.start}{also}") from None
    if nesting_depth(raw) > MAX_READ_DEPTH:
        raise LineProblem("corrupt", too_deep_reason())
    try:
        try:
            value = json.loads(text, parse_float=_checked_float, parse_constant=refuse_constant)
        except ValueError as e:
            if type(e) is not ValueError:  # JSONDecodeError, NotJSON
                raise
            # An int past CPython's 4300-digit limit: parse again, exact digits (rare, slower).
            value = json.loads(
                text, parse_int=str_to_int, parse_float=_checked_float, parse_constant=refuse_constant
            )
    except (json.JSONDecodeError, NotJSON):
        if b"\0" in raw:
            raise LineProblem("corrupt", POWER_LOSS_LINE) from None
        raise LineProblem("corrupt", "not a JSON value (malformed or cut short)") from None
    except OverflowError:
        raise LineProblem("corrupt", "a number too large to represent") from None
    except RecursionError:
        raise LineProblem("corrupt", too_deep_reason()) from None
    if "\\u" in text and _SURROGATE_ESCAPE.search(text) and _has_lone_surrogate(value):
        raise LineProblem("corrupt", "a string holds a lone UTF-16 surrogate escape")
    return value


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


Envelope = Tuple[str, str, str, Dict[str, Any]]  # id, type, ts, payload (v is always 1)


def check_envelope(value: Any) -> Envelope:
    """The envelope a decoded line holds, or LineProblem saying what it lacks."""
    if not isinstance(value, dict):
        raise LineProblem("corrupt", f"not an envelope: a JSON {_type_name(value)}, not an object")
    if "v" in value:
        v = value["v"]
        if type(v) is not int or v != 1:
            raise LineProblem(
                "version",
                f"envelope version is not the integer 1 (v is a JSON {_type_name(v)}); "
                "this version reads v=1 only",
            )
    if len(value) != 5 or value.keys() != ENVELOPE_KEYS:
        missing = sorted(ENVELOPE_KEYS - value.keys())
        extra = sorted(value.keys() - ENVELOPE_KEYS)
        parts = []
        if missing:
            parts.append("missing " + ", ".join(missing))
        if extra:
            parts.append("unexpected " + ", ".join(k[:40] for k in extra[:5]))
        raise LineProblem("corrupt", "not an envelope: " + "; ".join(parts))
    id_ = value["id"]
    if not isinstance(id_, str) or not id_:
        raise LineProblem("corrupt", "not an envelope: id is not a non-empty string")
    payload = value["payload"]
    if not isinstance(payload, dict):
        raise LineProblem("corrupt", "not an envelope: payload is not an object")
    ts = value["ts"]
    if not isinstance(ts, str):
        raise LineProblem("corrupt", "not an envelope: ts is not a string")
    type_ = value["type"]
    if not isinstance(type_, str):
        raise LineProblem("corrupt", "not an envelope: type is not a string")
    return id_, type_, ts, payload


def parse_envelope(raw: bytes, line_offset: int) -> Envelope:
    return check_envelope(decode_json(raw, line_offset))


def excerpt(raw: bytes, limit: int = 60) -> bytes:
    return raw[:limit]


def first_line_span(buf: Any, size: int) -> Optional[Tuple[int, int, bool]]:
    """(start, end, terminated) of the first non-blank line, or None if there is none."""
    pos = 0
    while pos < size:
        nl = buf.find(b"\n", pos)
        end = size if nl == -1 else nl
        if not is_blank(buf[pos:end]):
            return pos, end, nl != -1
        if nl == -1:
            return None
        pos = nl + 1
    return None
