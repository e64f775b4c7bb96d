"""The lines of a buffer worth reading for secrets: the reference of ``rust/secrets/``.

A line (a run of bytes up to ``\\n``; the last one may lack it; a blank one is never
kept) is kept when

1. it holds an escape that could spell a keyword or a secret's character otherwise than
   the bytes do: ``\\u00`` followed by ``2``-``7`` and a hex digit (printable ASCII),
   ``\\/``, or, when the spec says so, any ``\\u``;
2. or a trigger's keyword (its first three bytes found ignoring ASCII case, then the
   whole keyword as the trigger says) passes the trigger's test at that place (see
   ``quick``);
3. or it holds two or more JSON strings under a ``"text":`` key and the concatenation of
   their bodies (as written) passes 2 or 4: a secret split between text parts;
4. or a base64 run in it (at least ``BASE64_MIN`` of ``A-Za-z0-9+/_-``) decodes to bytes
   that pass 2; where a backslash is just before the run, also the run without its first
   byte or five (a JSON string's value has the escape's character, or ``\\uXXXX``, apart).

The tests are loose on purpose: whatever ``secrets/match.py`` finds in a decoded string,
these find in the bytes that wrote it.
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Tuple

from .._core import BASE64_MIN, TRIGGER_ALWAYS as ALWAYS, TRIGGER_ASSIGN as ASSIGN, TRIGGER_TOKEN as TOKEN
from .._core import TRIGGER_URL as URL, SecretSpec as Spec, SecretTrigger as Trigger

_NAME = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_CLOSERS = frozenset(b"\"'`\\]")
_OPENERS = frozenset(b"\"'`\\")
_URL_STOP = frozenset(b" \t\r\n\x0c\x0b\"'\\<>?#/@")
_B64 = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_-")
_B64_VALUE = {c: i for i, c in enumerate(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")}
_B64_VALUE[ord("-")] = 62
_B64_VALUE[ord("_")] = 63
_PRINTABLE_ESCAPE = re.compile(rb"\\u00[2-7][0-9a-fA-F]")
_RUN = re.compile(rb"[A-Za-z0-9+/_-]{%d,}" % BASE64_MIN)
_TEXT_KEY = b'"text":'
_LOWER = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ", b"abcdefghijklmnopqrstuvwxyz")


class Prefilter:
    """A spec made ready: the triggers by their keyword's stem (first three bytes, lowered)."""

    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        groups: Dict[bytes, List[Trigger]] = {}
        for t in spec.triggers:
            groups.setdefault(t.keyword[:3].translate(_LOWER), []).append(t)
        self._groups = groups
        self._sets = {t: (frozenset(t.chars), frozenset(t.left)) for t in spec.triggers}

    def lines(self, buf: bytes) -> List[Tuple[int, int]]:
        """``(start, end)`` of every line of `buf` worth reading (``end`` before its ``\\n``)."""
        out = []
        pos, n = 0, len(buf)
        while pos < n:
            nl = buf.find(b"\n", pos)
            end = n if nl == -1 else nl
            if self.keeps(buf[pos:end]):
                out.append((pos, end))
            pos = end + 1
        return out

    def keeps(self, line: bytes) -> bool:
        if not line.strip(b" \t\r"):
            return False
        if b"\\" in line:
            if self.spec.unicode_escapes and b"\\u" in line:
                return True
            if b"\\/" in line or _PRINTABLE_ESCAPE.search(line):
                return True
        if self._check(line, True):
            return True
        bodies = _text_bodies(line) if _TEXT_KEY in line else []
        return len(bodies) >= 2 and self._check(b"".join(bodies), True)

    def _check(self, buf: bytes, runs: bool) -> bool:
        lowered = buf.translate(_LOWER)
        for stem, triggers in self._groups.items():
            i = lowered.find(stem)
            while i != -1:
                for t in triggers:
                    end = i + len(t.keyword)
                    got = buf[i:end]
                    if got != t.keyword and not (t.ignore_case and lowered[i:end] == t.keyword.translate(_LOWER)):
                        continue
                    if self._quick(t, buf, i, end):
                        return True
                i = lowered.find(stem, i + 1)
        if runs:
            for s, e in base64_runs(buf):
                for a, b in decodings(buf, s, e):
                    if self._check(b64decode(buf[a:b]), False):
                        return True
        return False

    def _quick(self, t: Trigger, buf: bytes, i: int, end: int) -> bool:
        kind = t.kind
        if kind == ALWAYS:
            return True
        chars, left = self._sets[t]
        if kind == TOKEN:
            return _token(buf, i, end, chars, t.least, t.gap, left, t.left_least)
        if kind == ASSIGN:
            return _assign(buf, end, chars, t.least)
        return kind == URL and _url(buf, end)


def _token(buf: bytes, i: int, p: int, chars: frozenset, least: int, gap: int,  # type: ignore[type-arg]
           left: frozenset, left_least: int) -> bool:  # type: ignore[type-arg]
    n = len(buf)
    if left_least:
        j = i
        while j > 0 and i - j < 64 and buf[j - 1] in left:
            j -= 1
        if i - j < left_least:
            return False
    if gap:
        g = 0
        while p < n and g < gap:
            c = buf[p]
            if c == 0x20 or c == 0x09:
                p += 1
            elif c == 0x5C and p + 1 < n and buf[p + 1] == 0x74:  # \t as written
                p += 2
            else:
                break
            g += 1
        if g == 0:
            return False
    start = p
    while p < n and buf[p] in chars:
        p += 1
    return p - start >= least


def _blanks(buf: bytes, p: int, most: int = 8) -> int:
    n = len(buf)
    g = 0
    while p < n and g < most:
        c = buf[p]
        if c == 0x20 or c == 0x09:
            p += 1
        elif c == 0x5C and p + 1 < n and buf[p + 1] == 0x74:
            p += 2
        else:
            break
        g += 1
    return p


def _skip(buf: bytes, p: int, chars: frozenset, most: int = 12) -> int:  # type: ignore[type-arg]
    stop = min(len(buf), p + most)
    while p < stop and buf[p] in chars:
        p += 1
    return p


def _assign(buf: bytes, p: int, chars: frozenset, least: int) -> bool:  # type: ignore[type-arg]
    n = len(buf)
    while p < n and buf[p] in _NAME:
        p += 1
    p = _blanks(buf, _skip(buf, p, _CLOSERS))
    if p >= n or buf[p] not in b"=:":
        return False
    p += 1
    if p < n and buf[p] in b"=>:~":
        p += 1
    p = _skip(buf, _blanks(buf, p), _OPENERS)
    start = p
    while p < n and buf[p] in chars:
        p += 1
    return p - start >= least


def _url(buf: bytes, p: int) -> bool:
    n = len(buf)
    while p < n and buf[p] not in _URL_STOP and buf[p] != 0x3A:
        p += 1
    if p >= n or buf[p] != 0x3A:
        return False
    p += 1
    start = p
    while p < n and buf[p] not in _URL_STOP:
        p += 1
    return p > start and p < n and buf[p] == 0x40


def _text_bodies(line: bytes) -> List[bytes]:
    """The bodies (as written) of the JSON strings that follow a ``"text":`` key."""
    out = []
    n = len(line)
    at = line.find(_TEXT_KEY)
    while at != -1:
        p = at + len(_TEXT_KEY)
        g = 0
        while p < n and g < 4 and line[p] == 0x20:
            p += 1
            g += 1
        if p < n and line[p] == 0x22:
            p += 1
            start = p
            while p < n and line[p] != 0x22:
                p += 2 if line[p] == 0x5C else 1
            out.append(line[start:min(p, n)])
        at = line.find(_TEXT_KEY, p if p > at else at + 1)
    return out


def base64_runs(buf: bytes) -> List[Tuple[int, int]]:
    """``(start, end)`` of every maximal run of at least ``BASE64_MIN`` base64 characters."""
    return [m.span() for m in _RUN.finditer(buf)]


def decodings(buf: bytes, s: int, e: int) -> List[Tuple[int, int]]:
    """The runs to decode for the run ``(s, e)``: itself, and where an escape's backslash
    comes just before it, the run as a JSON string's value has it (after the escaped
    character, or after ``\\u`` and four digits), when still long enough."""
    out = [(s, e)]
    if s > 0 and buf[s - 1] == 0x5C:
        out.extend((s + k, e) for k in (1, 5) if e - (s + k) >= BASE64_MIN)
    return out


def b64decode(run: bytes) -> bytes:
    """As ``secrets.match.b64decode``: both alphabets, a trailing lone character dropped."""
    values = [_B64_VALUE[c] for c in run]
    if len(values) % 4 == 1:
        values.pop()
    out = bytearray()
    for k in range(0, len(values), 4):
        group = values[k:k + 4]
        acc = 0
        for v in group:
            acc = acc << 6 | v
        bits = 6 * len(group)
        acc <<= 24 - bits
        out += acc.to_bytes(3, "big")[: (bits // 8)]
    return bytes(out)
