"""Secrets in transcripts: find them (``scan``), keep them off disk (``Policy``), mask them
in anything carried out (``redact``), clean an old history (``scrub``). docs/secrets.md
is the guide.

* :class:`Redactor`: what an outward surface (an export, the dataset, OTLP, the viewer)
  masks with: ``value``, ``text`` and envelope ``line`` s masked, the same objects where
  there is nothing to mask, and ``counts``/``masked`` to report.
* :func:`redact` ``(value, rules=None, fingerprints=None) -> (masked, findings)``: one JSON
  value (a string, a message, a payload) and what was found in it.
* :class:`Policy`: a write-time redaction policy for ``Session.create``/``load``, the
  importers and the adapters.
* :func:`scan_file`, :func:`histories`: which files hold secrets, and where.
* :func:`scrub_file`: a transcript rewritten with its secrets masked.
* :func:`load_rules`: the built-in rules and the user's configuration file.
"""

from __future__ import annotations

from typing import Any, List, Optional, Tuple

from .config import ConfigError, Fingerprints, config_dir, default_rules, load_rules
from .match import MARKER, Rules
from .policy import Policy
from .redact import Finding, marker
from .redact import redact as _redact
from .rules import BUILTIN, FAMILIES
from .scan import FileScan, Located, histories, scan_file
from .scrub import ScrubReport, scrub_file
from .surface import Redactor

__all__ = ["redact", "Policy", "Rules", "Finding", "Fingerprints", "FileScan", "Located", "MARKER", "BUILTIN",
           "FAMILIES", "ConfigError", "config_dir", "histories", "load_rules", "marker", "scan_file", "default_rules",
           "scrub_file", "ScrubReport", "Redactor"]

def redact(value: Any, rules: Optional[Rules] = None, fingerprints: Optional[Fingerprints] = None
           ) -> Tuple[Any, List[Finding]]:
    """`value` (any JSON value: a string, a message dict, a payload, an envelope) with
    every secret masked as ``«redacted:RULE:FINGERPRINT»``, and the findings (never the
    secrets). `value` itself comes back where nothing is masked; it is never changed.
    Rules default to :func:`default_rules`, fingerprints to the account's key."""
    return _redact(value, rules if rules is not None else default_rules(),
                   fingerprints if fingerprints is not None else Fingerprints.default())
