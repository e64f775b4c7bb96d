"""A write-time redaction policy: the rules, plus the values the process knows are secret
(named environment variables, explicit strings), applied to every line a writer puts on
disk (``Session.create(..., redaction=Policy())``, ``Session.load``, the importers, the
adapters). What the caller holds in memory is not touched: the session's own state keeps
what was appended; only the bytes written carry markers (docs/secrets.md).
"""

from __future__ import annotations

import os
import re
from typing import Any, Dict, Iterable, List, Optional, Tuple

from ..canonical import dumps, envelope_line
from .config import Fingerprints, load_rules
from .match import Rules
from .redact import EnvelopeMasker, Finding, redact
from .rules import Literal, Rule

#: A known secret shorter than this would mask ordinary words wherever they appear.
LITERAL_MIN = 8


def _env_rule_name(name: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    return "env-" + slug if slug else "env"


class Policy:
    """What a writer masks before a line reaches the disk.

    `rules`: a rule table (default: the built-in rules and the user's configuration
    file, ``secrets.config.load_rules()``). `env`: names of environment variables whose
    values are secret (read now; an unset one is skipped). `values`: strings that are
    secret. Each known value is masked wherever it is, as the rule ``known-secret`` (or
    ``env-<name>``). ValueError for a known value shorter than 8 characters (it would mask
    ordinary text; the message names the variable, never the value)."""

    def __init__(self, rules: Optional[Rules] = None, *, env: Iterable[str] = (), values: Iterable[str] = (),
                 fingerprints: Optional[Fingerprints] = None) -> None:
        base = rules if rules is not None else load_rules()
        literals: List[Rule] = []
        for name in env:
            value = os.environ.get(name)
            if not value:
                continue
            if len(value) < LITERAL_MIN:
                raise ValueError(f"the value of ${name} is shorter than {LITERAL_MIN} characters; masking it "
                                 "would mask ordinary text wherever it appears (leave it out of env=)")
            literals.append(Literal(_env_rule_name(name), "known", value))
        for n, value in enumerate(values):
            if not isinstance(value, str):
                raise TypeError(f"values[{n}] must be a str, not {type(value).__name__}")
            if len(value) < LITERAL_MIN:
                raise ValueError(f"values[{n}] is shorter than {LITERAL_MIN} characters; masking it would mask "
                                 "ordinary text wherever it appears")
            literals.append(Literal("known-secret", "known", value))
        # Known values first: where one is also what a rule finds, it is named as known.
        self.rules = Rules(tuple(literals) + base.rules, base.allow, base.allow_fingerprints) if literals else base
        self.fingerprints = fingerprints if fingerprints is not None else Fingerprints.default()

    def redact(self, value: Any) -> Tuple[Any, List[Finding]]:
        """`value` with its secrets masked, and what was found (``secrets.redact``)."""
        return redact(value, self.rules, self.fingerprints)

    def writer(self) -> "LineMasker":
        """The state one transcript's writer keeps (its digests' new values)."""
        return LineMasker(self)


class LineMasker:
    """One writer's masking: each envelope line it is about to write, masked."""

    def __init__(self, policy: Policy) -> None:
        from .scan import prefilter

        self.policy = policy
        self.masker = EnvelopeMasker(policy.rules, policy.fingerprints)
        self._keep = prefilter(policy.rules)

    def may_change(self, line: bytes, type_: Optional[str] = None) -> bool:
        """Whether the envelope `line` (without its ``\\n``) may be written otherwise: the
        byte scan keeps it, or it is a settle or a run-context line and a digest it may
        name was written anew. `type_`: the envelope's type, where known."""
        masker = self.masker
        if self._keep.keeps(line):
            return True
        if masker.results and (type_ == "tool-settled" if type_ else b'"tool-settled"' in line):
            return True
        return bool(masker.sections) and (type_ == "run-context" if type_ else b'"run-context"' in line)

    def line(self, type_: str, payload: Dict[str, Any], id_: str, ts: str, line: bytes) -> bytes:
        """`line` (the envelope `id_` of `type_` at `ts` whose payload is `payload`, as
        plain JSON values), or the line of its masked payload."""
        if not self.may_change(line.rstrip(b"\n"), type_):
            return line
        new = self.masker.payload(type_, payload)
        return line if new is None else envelope_line(id_, type_, ts, dumps(new))

    def payload(self, type_: str, payload: Dict[str, Any]) -> Dict[str, Any]:
        """`payload` masked (itself where nothing is): for a writer that serialises later."""
        new = self.masker.payload(type_, payload)
        return payload if new is None else new

    @property
    def counts(self) -> Dict[str, int]:
        return self.masker.counts
