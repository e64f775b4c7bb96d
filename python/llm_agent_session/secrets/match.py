"""Where the rules find secrets in one text (a decoded string): keywords first, then each
rule that listens for the keyword decides at that spot (``rules.py``).

This is the reference for every core: the byte scan of a file (``_pure/secrets.py``,
``rust/secrets/``) only picks the lines worth reading, and each line it picks is read and
matched here. ``Rules`` is a rule table made ready for matching: the keywords' first three
letters, lowered, in one pattern, and per such stem the keywords and rules behind it.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from typing import Dict, Iterable, List, NamedTuple, Optional, Sequence, Tuple

from .rules import ALNUM, NAME_CHARS, Assignment, Literal, PrivateKey, Rule, Token, UrlPassword, RULE_NAME

#: What a masked secret becomes: ``«redacted:RULE:FINGERPRINT»`` (docs/FORMAT.md).
MARKER = re.compile(r"«redacted:[a-z0-9]+(?:-[a-z0-9]+)*:[0-9a-f]{12}»")

#: A run of base64 (standard or URL-safe) at least this long is decoded and read again.
from .._core import BASE64_MIN  # noqa: E402  (the byte scan reads the same runs)
BASE64_RUN = re.compile(r"[A-Za-z0-9+/_-]{%d,}={0,2}" % BASE64_MIN)

_ASCII_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}
_DIGITS = frozenset("0123456789")
_LETTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
_CLOSERS = frozenset("\"'`\\]")
_OPENERS = frozenset("\"'`\\")
_BLANK = frozenset(" \t")
_SCHEME = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+.-")
_URL_STOP = frozenset(" \t\r\n\f\v\"'\\<>?#/@")
_PEM_BODY = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/= \t\r\n\\:,.-")
_PEM_LABEL = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 ")
_B64_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
# Values people write where a real secret would go.
_PLACEHOLDERS = frozenset({
    "password", "passwd", "changeme", "changeit", "secret", "example", "xxxxxx", "redacted", "hidden",
    "none", "null", "undefined", "true", "false", "todo", "placeholder", "your_password", "mypassword",
    "pass", "pwd", "user", "username", "test", "dummy", "sample",
})

#: A well-known documentation key (AWS's own examples end in EXAMPLE or EXAMPLEKEY).
_DOC_EXAMPLE = "EXAMPLE"


def ascii_lower(text: str) -> str:
    # str.lower of ASCII text is ASCII lowering, and many times faster than translate.
    return text.lower() if text.isascii() else text.translate(_ASCII_LOWER)


def entropy(text: str) -> float:
    """Shannon entropy of `text`, bits per character."""
    if not text:
        return 0.0
    counts: Dict[str, int] = {}
    for c in text:
        counts[c] = counts.get(c, 0) + 1
    n = len(text)
    return -sum(k / n * math.log2(k / n) for k in counts.values())


def b64decode(run: str) -> bytes:
    """A base64 run decoded, both alphabets at once (``-``/``_`` as ``+``/``/``), padding
    ignored, a trailing lone character dropped: what ``rust/secrets`` decodes too."""
    body = run.rstrip("=").replace("-", "+").replace("_", "/")
    if len(body) % 4 == 1:
        body = body[:-1]
    body += "=" * (-len(body) % 4)
    try:
        return base64.b64decode(body)
    except (binascii.Error, ValueError):  # pragma: no cover - the run holds alphabet characters only
        return b""


class Hit(NamedTuple):
    """One secret in a text: ``[start, end)``, the rule (its index in ``Rules.rules``), and
    for a secret inside a base64 run (``start``/``end`` the run) its decoded text and where
    in it."""

    start: int
    end: int
    rule: int
    secret: str
    base64: bool = False


class Rules:
    """A rule table ready for matching, with what is allowed: ``allow`` (secrets that are
    not, as they are written) and ``allow_fingerprints``. Built once and shared."""

    def __init__(self, rules: Sequence[Rule], allow: Iterable[str] = (), allow_fingerprints: Iterable[str] = ()
                 ) -> None:
        named = set()
        for rule in rules:
            if not RULE_NAME.match(rule.name):
                raise ValueError(f"rule name {rule.name!r}: lowercase letters and digits in dash-separated words")
            if rule.name in named and not isinstance(rule, Literal):
                raise ValueError(f"two rules are named {rule.name!r}")
            named.add(rule.name)
            for kw in rule.keywords:
                if len(kw.encode("utf-8")) < 3:
                    raise ValueError(f"rule {rule.name!r}: keyword {kw!r} is shorter than 3 bytes")
        self.rules: Tuple[Rule, ...] = tuple(rules)
        self.allow = frozenset(allow)
        self.allow_fingerprints = frozenset(allow_fingerprints)
        groups: Dict[str, List[Tuple[str, bool, int]]] = {}
        for index, rule in enumerate(self.rules):
            for kw in _keywords(rule):
                ignore_case = isinstance(rule, Assignment) or (isinstance(rule, Token) and rule.ignore_case)
                groups.setdefault(ascii_lower(kw[:3]), []).append((kw, ignore_case, index))
        self._groups = groups
        # Searched in the text lowered once, case-sensitively: an alternation compiled with
        # IGNORECASE loses the regex engine's literal-prefix scan (a 16 MB escape-heavy
        # transcript's scan: 2.8 -> 1.1 s; the 256 MB one: 40 -> 19 s).
        self._stems = re.compile("|".join(re.escape(s) for s in sorted(groups)))

    def names(self) -> List[str]:
        return [r.name for r in self.rules]

    def __getstate__(self) -> Dict[str, object]:
        # A core's byte scan (``scan.prefilter``) is made again where the rules go (a
        # worker process of an import): the native one cannot be pickled.
        state = dict(self.__dict__)
        state.pop("_prefilters", None)
        return state

    # -- one text --------------------------------------------------------------------------

    def find(self, text: str, *, in_base64: bool = True) -> List[Hit]:
        """Every secret in `text`, in order, none overlapping (where two rules find the
        same span the earlier rule names it); inside base64 runs too unless told not to."""
        hits = self._plain(text)
        if in_base64 and len(text) >= BASE64_MIN:
            for m in BASE64_RUN.finditer(text):
                decoded = b64decode(m.group()).decode("latin-1")
                for h in self._plain(decoded):
                    hits.append(Hit(m.start(), m.end(), h.rule, decoded[h.start:h.end], True))
        return resolve(hits)

    def _plain(self, text: str) -> List[Hit]:
        out: List[Hit] = []
        lowered = ascii_lower(text)  # the same length: ASCII letters only
        search = self._stems.search
        m = search(lowered)
        if m is None:
            return out
        markers: Optional[List[Tuple[int, int]]] = None
        groups, rules = self._groups, self.rules
        while m is not None:
            i = m.start()
            for kw, ignore_case, index in groups[m.group()]:
                got = text[i:i + len(kw)]
                if got != kw and not (ignore_case and ascii_lower(got) == ascii_lower(kw)):
                    continue
                span = match_at(rules[index], text, i, kw)
                if span is None:
                    continue
                start, end = span
                if markers is None:
                    markers = [(x.start(), x.end()) for x in MARKER.finditer(text)] if "«" in text else []
                if any(s < end and start < e for s, e in markers):
                    continue  # a marker a redaction left, never a secret
                secret = text[start:end]
                if secret in self.allow or _DOC_EXAMPLE in secret:
                    continue
                out.append(Hit(start, end, index, secret))
            m = search(lowered, i + 1)
        return out

    def member(self, key: str, value: str) -> List[Hit]:
        """A JSON object member ``key: value`` that is an assignment: the whole value."""
        out: List[Hit] = []
        lowered = None
        for index, rule in enumerate(self.rules):
            if not isinstance(rule, Assignment):
                continue
            if lowered is None:
                if not key or len(key) > 64 or not all(c in NAME_CHARS for c in key):
                    return out
                lowered = ascii_lower(key)
            if any(kw in lowered for kw in rule.keywords) and all(c in rule.value for c in value) \
                    and _value_ok(rule, value) and value not in self.allow and _DOC_EXAMPLE not in value:
                out.append(Hit(0, len(value), index, value))
                break
        return out


def _keywords(rule: Rule) -> Tuple[str, ...]:
    if isinstance(rule, Literal):
        mojibake = rule.value.encode("utf-8").decode("latin-1")  # as it reads inside a base64 run
        return (rule.value,) if mojibake == rule.value else (rule.value, mojibake)
    return rule.keywords


def resolve(hits: List[Hit]) -> List[Hit]:
    """The hits that do not overlap: by start, the longest first, plain text before a
    base64 run, then rule order; the secrets of one base64 run are kept together."""
    hits.sort(key=lambda h: (h.start, -h.end, h.base64, h.rule))
    out: List[Hit] = []
    end = -1
    for h in hits:
        if h.start >= end:
            out.append(h)
            end = h.end
        elif h.base64 and out and out[-1].base64 and (out[-1].start, out[-1].end) == (h.start, h.end) \
                and h.secret != out[-1].secret:
            out.append(h)
    return out


def match_at(rule: Rule, text: str, i: int, kw: str) -> Optional[Tuple[int, int]]:
    """Where `rule`, whose keyword `kw` is at `i`, finds a secret: its span, or None."""
    if isinstance(rule, Token):
        return _token(rule, text, i, kw)
    if isinstance(rule, Assignment):
        return _assignment(rule, text, i, kw)
    if isinstance(rule, UrlPassword):
        return _url(rule, text, i)
    if isinstance(rule, PrivateKey):
        return _private_key(text, i, kw)
    return i, i + len(kw)  # a literal


def _token(rule: Token, text: str, i: int, kw: str) -> Optional[Tuple[int, int]]:
    n = len(text)
    start = i
    if rule.left_min:
        j = i
        while j > 0 and i - j < rule.left_max and text[j - 1] in rule.left:
            j -= 1
        if i - j < rule.left_min or (j > 0 and text[j - 1] in rule.left):
            return None
        start = j
    elif i > 0 and text[i - 1] in ALNUM:
        return None  # inside a longer word or run
    j = i + len(kw)
    if rule.gap:
        g = 0
        while j < n and g < rule.gap and text[j] in _BLANK:
            j += 1
            g += 1
        if g == 0:
            return None
    b = j
    body = rule.body
    while j < n and text[j] in body:
        j += 1
    if rule.shape == "jwt":
        while j > b and text[j - 1] == ".":
            j -= 1  # a sentence's full stop
    value = text[b:j]
    if not rule.min <= len(value) <= rule.max:
        return None
    if rule.digit and not any(c in _DIGITS for c in value):
        return None
    if rule.letter and not any(c in _LETTERS for c in value):
        return None
    if rule.contains and rule.contains not in value:
        return None
    if rule.entropy and entropy(value) < rule.entropy:
        return None
    if rule.shape == "jwt" and not _jwt_shape(kw + value):
        return None
    if rule.secret_is_body and _placeholder(value):
        return None
    return (b, j) if rule.secret_is_body else (start, j)


def _jwt_shape(token: str) -> bool:
    parts = token.split(".")
    return (len(parts) == 3 and len(parts[0]) >= 10 and parts[1].startswith("eyJ") and len(parts[1]) >= 10
            and len(parts[2]) >= 16)


def _assignment(rule: Assignment, text: str, i: int, kw: str) -> Optional[Tuple[int, int]]:
    n = len(text)
    s = i
    while s > 0 and text[s - 1] in NAME_CHARS:
        s -= 1
    p = i + len(kw)
    while p < n and text[p] in NAME_CHARS:
        p += 1
    if p - s > 64:
        return None
    p = _skip(text, p, _CLOSERS)
    p = _skip(text, p, _BLANK)
    if p >= n:
        return None
    c = text[p]
    if c == ":":
        p += 1
        if p < n and text[p] == "=":
            p += 1
        elif p < n and text[p] == ":":
            return None
    elif c == "=":
        p += 1
        if p < n and text[p] == ">":
            p += 1
        elif p < n and text[p] in "=~":
            return None  # a comparison
    else:
        return None
    p = _skip(text, p, _BLANK)
    p = _skip(text, p, _OPENERS)
    v = p
    chars = rule.value
    while p < n and text[p] in chars:
        p += 1
    while p > v and text[p - 1] in ".:":
        p -= 1  # a sentence's punctuation
    value = text[v:p]
    if not _value_ok(rule, value):
        return None
    return v, p


def _skip(text: str, p: int, chars: frozenset, most: int = 4) -> int:  # type: ignore[type-arg]
    end = min(len(text), p + most)
    while p < end and text[p] in chars:
        p += 1
    return p


def _value_ok(rule: Assignment, value: str) -> bool:
    if not rule.min <= len(value) <= rule.max:
        return False
    if rule.digit and not any(c in _DIGITS for c in value):
        return False
    if rule.letter and not any(c in _LETTERS for c in value):
        return False
    if _placeholder(value) or "://" in value or value.startswith(("/", "./", "../", "~/")):
        return False
    return not rule.entropy or entropy(value) >= rule.entropy


def _placeholder(value: str) -> bool:
    lowered = ascii_lower(value)
    return (value[:1] in ("$", "%", "<", "{", "*", "&") or lowered in _PLACEHOLDERS or "xxxx" in lowered
            or "****" in value or "...." in value or len(set(value)) == 1)


def _url(rule: UrlPassword, text: str, i: int) -> Optional[Tuple[int, int]]:
    n = len(text)
    s = i
    while s > 0 and text[s - 1] in _SCHEME:
        s -= 1
    while s < i and text[s] not in _LETTERS:
        s += 1
    scheme = ascii_lower(text[s:i])
    if len(scheme) < 2:
        return None
    if rule.schemes and scheme not in rule.schemes and scheme.split("+")[0] not in rule.schemes:
        return None
    p = i + 3
    u = p
    while p < n and p - u <= 128 and text[p] not in _URL_STOP and text[p] != ":" and " " < text[p] < "\x7f":
        p += 1
    if p >= n or text[p] != ":":
        return None
    p += 1
    w = p
    while p < n and p - w <= 128 and text[p] not in _URL_STOP and " " < text[p] < "\x7f":
        p += 1
    if p >= n or text[p] != "@" or p == w or p + 1 >= n or not (text[p + 1] in ALNUM or text[p + 1] == "["):
        return None
    password = text[w:p]
    if len(password) < 3 or _placeholder(password):
        return None
    return w, p


def _private_key(text: str, i: int, kw: str) -> Optional[Tuple[int, int]]:
    n = len(text)
    p = i + len(kw)
    q = p
    while q < n and q - p <= 40 and text[q] in _PEM_LABEL:
        q += 1
    label = text[p:q].rstrip()
    if not (label.endswith("PRIVATE KEY") or label.endswith("PRIVATE KEY BLOCK")) or text[q:q + 5] != "-----":
        return None
    body = q + 5
    end_marker = f"-----END {label}-----"
    e = text.find(end_marker, body)
    if e != -1 and all(c in _PEM_BODY for c in text[body:e]):
        stop = e + len(end_marker)
        content = text[body:e]
    else:
        stop = body
        while stop < n and text[stop] in _PEM_BODY and text[stop] != "-":
            stop += 1
        while stop > body and text[stop - 1] in " \t\r\n\\":
            stop -= 1
        content = text[body:stop]
    if sum(1 for c in content if c in _B64_CHARS) < 64:
        return None
    return i, stop
