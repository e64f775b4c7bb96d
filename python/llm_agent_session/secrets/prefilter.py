"""The byte scan's rules (``_core.SecretSpec``): for each keyword, the quick test a core makes where
it finds it in a line's bytes, before anything is decoded.

The scan of a file is in two steps. The core reads the bytes and keeps a line only where
a keyword is followed by what could be a secret (a body long enough, an operator and a
value, ``user:password@``), or where the line's escapes, text parts or base64 runs could
hide one (``_pure/secrets.py`` says exactly when, ``rust/secrets/`` does the same). Each
line kept is then parsed and matched in full (``match.py``). The first step may keep
lines the second finds nothing in; it never drops a line the second would find a secret
in (``tests/secrets/test_prefilter.py`` holds it to that), so the result is the second
step's alone, the same on both cores.
"""

from __future__ import annotations

import json

from .._core import TRIGGER_ALWAYS, TRIGGER_ASSIGN, TRIGGER_TOKEN, TRIGGER_URL, SecretSpec, SecretTrigger
from .match import Rules
from .rules import Assignment, Literal, PrivateKey, Token, UrlPassword

ALWAYS, TOKEN, ASSIGN, URL = TRIGGER_ALWAYS, TRIGGER_TOKEN, TRIGGER_ASSIGN, TRIGGER_URL
Trigger = SecretTrigger


def _bytes(chars: frozenset) -> bytes:  # type: ignore[type-arg]
    return "".join(sorted(chars)).encode("ascii")


def spec_of(rules: Rules) -> SecretSpec:
    triggers = []
    unicode_escapes = False
    for rule in rules.rules:
        if isinstance(rule, Token):
            for kw in rule.prefixes:
                triggers.append(Trigger(kw.encode("utf-8"), rule.ignore_case, TOKEN, _bytes(rule.body), rule.min,
                                        rule.gap, _bytes(rule.left) if rule.left else b"", rule.left_min))
        elif isinstance(rule, Assignment):
            for kw in rule.keywords:
                triggers.append(Trigger(kw.encode("utf-8"), True, ASSIGN, _bytes(rule.value), rule.min))
        elif isinstance(rule, UrlPassword):
            triggers.append(Trigger(b"://", False, URL))
        elif isinstance(rule, PrivateKey):
            triggers.append(Trigger(rule.keywords[0].encode("ascii"), False, ALWAYS))
        elif isinstance(rule, Literal):
            raw = rule.value.encode("utf-8")
            triggers.append(Trigger(raw, False, ALWAYS))
            written = json.dumps(rule.value, ensure_ascii=False)[1:-1].encode("utf-8", "surrogatepass")
            if written != raw:
                triggers.append(Trigger(written, False, ALWAYS))
            if not rule.value.isascii() or any(c < " " or c == "\x7f" for c in rule.value):
                unicode_escapes = True
    return SecretSpec(tuple(triggers), unicode_escapes)
