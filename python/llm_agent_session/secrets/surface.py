"""What an outward surface masks with (an export, the dataset, OTLP, the viewer): one
:class:`Redactor` per run, which masks values, texts and envelope lines and counts what
it masked, so the surface can say so.

A value is first serialised (``json.dumps``, at C speed) and read by the core's byte
scan; only where the scan keeps it is it walked and matched, so a clean transcript costs
little more than one pass over its bytes, and comes out as the very same objects.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional

from ..canonical import dumps, envelope_line
from .config import Fingerprints
from .match import Rules
from .redact import EnvelopeMasker, Finding, apply, findings
from .walk import sites


class Redactor:
    """Masks what `rules` find (default: ``secrets.default_rules()``), with `fingerprints`
    (default: the account's key). ``enabled=False`` (``--no-redact``) passes everything
    through unchanged and counts nothing."""

    def __init__(self, rules: Optional[Rules] = None, fingerprints: Optional[Fingerprints] = None, *,
                 enabled: bool = True) -> None:
        from . import default_rules
        from .scan import prefilter

        self.enabled = enabled
        self.rules = rules if rules is not None else default_rules()
        self.fingerprints = fingerprints if fingerprints is not None else Fingerprints.default()
        self._keep = prefilter(self.rules)
        self._envelopes = EnvelopeMasker(self.rules, self.fingerprints)
        self.counts: Dict[str, int] = {}  # secrets masked, per rule

    @property
    def masked(self) -> int:
        """How many secrets this redactor masked."""
        return sum(self.counts.values())

    def _count(self, found: List[Finding]) -> None:
        for f in found:
            self.counts[f.rule] = self.counts.get(f.rule, 0) + 1

    def value(self, value: Any) -> Any:
        """`value` (any JSON value: a string, a message dict, a list of parts) masked; the
        very same object where there is nothing to mask."""
        if not self.enabled or value is None or isinstance(value, (bool, int, float)):
            return value
        try:
            text: Optional[bytes] = json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")
        except (TypeError, ValueError):
            text = None  # not plain JSON values: walked without the byte scan's look first
        if text is not None and not self._keep.keeps(text):
            return value
        found = sites(value, self.rules)
        if not found:
            return value
        self._count(findings(found, self.rules, self.fingerprints))
        return apply(value, found, self.rules, self.fingerprints)

    def text(self, text: str) -> str:
        """A string masked (``value`` for a string)."""
        masked: str = self.value(text)
        return masked

    def line(self, raw: bytes) -> bytes:
        """One envelope line of a transcript (with or without its ``\\n``), masked: the
        same bytes where there is nothing to mask; its digests kept true (lines of one
        transcript given in file order). A line that is not an envelope is masked as JSON,
        or as text where it is not JSON."""
        if not self.enabled:
            return raw
        body = raw[:-1] if raw.endswith(b"\n") else raw
        end = raw[len(body):]
        masker = self._envelopes
        if not (self._keep.keeps(body) or (masker.results and b'"tool-settled"' in body)
                or (masker.sections and b'"run-context"' in body)):
            return raw
        try:
            value = json.loads(body)
        except ValueError:
            return self.text(body.decode("utf-8", "replace")).encode("utf-8") + end
        if type(value) is dict and type(value.get("payload")) is dict and type(value.get("type")) is str \
                and type(value.get("id")) is str and type(value.get("ts")) is str:
            before = dict(masker.counts)
            new = masker.payload(value["type"], value["payload"])
            for rule, n in masker.counts.items():
                self.counts[rule] = self.counts.get(rule, 0) + n - before.get(rule, 0)
            if new is None:
                return raw
            return envelope_line(value["id"], value["type"], value["ts"], dumps(new))[:-1] + end
        masked = self.value(value)
        return raw if masked is value else json.dumps(masked, ensure_ascii=False).encode("utf-8") + end
