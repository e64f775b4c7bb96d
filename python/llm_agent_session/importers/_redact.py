"""An import under a write-time redaction policy (``secrets.Policy``): the plan's records
masked before anything is written or compared.

Masking the plan, not the lines, keeps an import that resumes right: the plan of what an
earlier import read is made again and compared with the plan of the whole source
(``_reconcile``), and both are masked alike (a secret's marker depends on the secret
alone), so the masked messages OUT holds are found equal, never written again. The
digests come out right by themselves: the writer computes a dispatch's and a section's
digest from the masked arguments and text.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Tuple

from ..secrets import Policy
from ..secrets.redact import EnvelopeMasker, apply, structural
from ..secrets.walk import sites
from ._plan import COMPACTION, DISPATCHED, MESSAGE, RUN_CONTEXT, SETTLED, Record


class _Masker:
    def __init__(self, policy: Policy) -> None:
        self.rules, self.fingerprints = policy.rules, policy.fingerprints
        self.message = EnvelopeMasker(policy.rules, policy.fingerprints)

    def value(self, value: Any) -> Any:
        return apply(value, sites(value, self.rules), self.rules, self.fingerprints)

    def arguments(self, text: Any) -> Any:
        """A dispatch's arguments (JSON text): masked as the value they parse to, so that a
        secret written with escapes is found and the text stays JSON."""
        if not isinstance(text, str):
            return self.value(text)
        try:
            parsed = json.loads(text)
        except ValueError:
            return self.value(text)
        masked = self.value(parsed)
        return text if masked is parsed else json.dumps(masked, ensure_ascii=False)

    def record(self, record: Record) -> Record:
        kind, body = record.type, record.body
        if kind == MESSAGE:
            new = apply(body, sites(body, self.rules, structural(MESSAGE)), self.rules, self.fingerprints)
        elif kind == DISPATCHED:
            new = (body[0], body[1], self.arguments(body[2]))
        elif kind == SETTLED:
            new = (body[0], body[1], self.value(body[2]))
        elif kind == COMPACTION:
            new = (self.value(body[0]),) + tuple(body[1:])
        elif kind == RUN_CONTEXT:
            sections: List[Tuple[str, str]] = [(name, self.value(text)) for name, text in body[0]]
            facts = [(name, self.value(value)) for name, value in body[1]]
            new = (sections, facts)
        else:
            return record
        return record if new == body else record._replace(body=new)


def masked(plan: Any, policy: Policy) -> Any:
    """`plan` (``_driver.Plan``) whose jobs' meta and records are masked by `policy`."""
    masker = _Masker(policy)

    def run(lines: Any, report: Any, first: bool) -> Any:
        job = plan(lines, report, first)
        meta: Dict[str, Any] = masker.value(job.meta)
        job.meta = meta
        job.records = [masker.record(r) for r in job.records]
        return job

    run.masked = True  # type: ignore[attr-defined]
    return run


def is_masked(plan: Any) -> bool:
    """Whether `plan` is one :func:`masked` made."""
    return getattr(plan, "masked", False) is True
