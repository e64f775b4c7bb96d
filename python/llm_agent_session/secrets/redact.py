"""Masking: each secret replaced by a marker that names its rule and fingerprint,
``«redacted:aws-access-key-id:3f9a1c2b7d4e»`` (docs/FORMAT.md, "Redaction"), in a JSON
value or in an envelope's payload, whose digests are then made to verify again.

* :func:`redact` is the one call every outward surface makes: any JSON value (a string,
  a message, a whole envelope) in, the masked copy and what was found out.
* :class:`EnvelopeMasker` masks the payloads of one transcript in file order (a writer
  under a policy, a scrub): it leaves ids, references and digests alone as strings, and
  keeps the digests true to what is written: a dispatched call's ``arguments-digest``
  over its masked arguments, a run-context section's ``digest`` over its masked text
  (and every later ``rendered-in`` of it), a settle's ``result-digest`` over its tool
  message's masked text (where it was that text's digest).
"""

from __future__ import annotations

import hashlib
from typing import Any, Dict, FrozenSet, Iterable, List, NamedTuple, Optional, Sequence, Tuple

from ..canonical import dumps, sha256_digest
from .config import Fingerprints
from .match import Hit, Rules
from .walk import Path, PathPart, Site, sites


def marker(rule: str, fingerprint: str) -> str:
    """The text written in place of a secret."""
    return f"«redacted:{rule}:{fingerprint}»"


class Finding(NamedTuple):
    """One secret, never the secret itself: its rule, where it is (the path of the string
    it starts in, its start there, its end in the last string it reaches, how many
    strings: more than 1 for a secret split between text parts), whether it was inside a
    base64 run (then ``start``/``end`` are the run's), and its fingerprint."""

    rule: str
    path: Path
    start: int
    end: int
    parts: int
    base64: bool
    fingerprint: str

    def where(self) -> str:
        """The path and span as a report shows them: ``payload.content[1].text@12-52``."""
        text = path_text(self.path) + f"@{self.start}-{self.end}"
        if self.parts > 1:
            text += f" (across {self.parts} text parts)"
        if self.base64:
            text += " (inside base64)"
        return text


def path_text(path: Sequence[PathPart]) -> str:
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part.replace("_", "a").replace("-", "a").isalnum() and part.isascii():
            out += ("." if out else "") + part
        else:
            out += "[" + dumps(part) + "]"
    return out


def secret_bytes(hit: Hit) -> bytes:
    """What a fingerprint is of: the secret's bytes (a base64 run's decoded ones)."""
    return hit.secret.encode("latin-1" if hit.base64 else "utf-8", "surrogatepass")


def findings(found: List[Site], rules: Rules, fingerprints: Fingerprints) -> List[Finding]:
    """The findings of a walk's sites, allowed fingerprints left out."""
    out = []
    for site in found:
        for hit in site.hits:
            fp = fingerprints(secret_bytes(hit))
            if fp in rules.allow_fingerprints:
                continue
            path, start, end, parts = site.spans(hit)
            out.append(Finding(rules.rules[hit.rule].name, path, start, end, parts, hit.base64, fp))
    return out


def _masked_text(text: str, hits: List[Hit], names: Sequence[str], fingerprints: Fingerprints,
                 allowed: FrozenSet[str]) -> str:
    out, last = [], 0
    for hit in hits:
        if hit.start < last:  # a base64 run's other secrets: the run is masked once
            continue
        fp = fingerprints(secret_bytes(hit))
        if fp in allowed:
            continue
        out.append(text[last:hit.start])
        out.append(marker(names[hit.rule], fp))
        last = hit.end
    out.append(text[last:])
    return "".join(out)


def _masked_parts(texts: List[str], site: Site, names: Sequence[str], fingerprints: Fingerprints,
                  allowed: FrozenSet[str]) -> List[str]:
    """The texts of a run of text parts with the site's secrets masked: each secret's
    marker where it starts, the rest of it cut from the parts it reaches."""
    new = list(texts)
    bounds = []
    at = 0
    for t in texts:
        bounds.append(at)
        at += len(t)
    last_run = None
    for hit in reversed(site.hits):
        if hit.base64 and last_run == (hit.start, hit.end):
            continue
        last_run = (hit.start, hit.end) if hit.base64 else None
        fp = fingerprints(secret_bytes(hit))
        if fp in allowed:
            continue
        a = max(k for k, b in enumerate(bounds) if b <= hit.start and (texts[k] or k == len(texts) - 1))
        z = max(k for k, b in enumerate(bounds) if b < hit.end)
        sa, ez = hit.start - bounds[a], hit.end - bounds[z]
        mark = marker(names[hit.rule], fp)
        if a == z:
            new[a] = new[a][:sa] + mark + new[a][ez:]
        else:
            new[a] = new[a][:sa] + mark
            for k in range(a + 1, z):
                new[k] = ""
            new[z] = new[z][ez:]
    return new


def apply(value: Any, found: List[Site], rules: Rules, fingerprints: Fingerprints) -> Any:
    """`value` with every site's secrets masked: a new value where anything changed (the
    containers on the way copied), `value` itself where nothing did."""
    if not found:
        return value
    names = rules.names()
    allowed = rules.allow_fingerprints
    if found[0].path == () and type(value) is str:
        return _masked_text(value, found[0].hits, names, fingerprints, allowed)
    root: List[Any] = [value]
    copied = set()  # ids of the containers already copied

    def container(path: Path) -> Any:
        """The container at `path` in the copy, it and those on the way copied once."""
        holder: Any = root
        key: PathPart = 0
        node = root[0]
        for depth in range(len(path) + 1):
            if depth:
                holder, key = node, path[depth - 1]
                node = node[key]
            if id(node) not in copied:
                node = dict(node) if type(node) is dict else list(node)
                holder[key] = node
                copied.add(id(node))
        return node

    for site in found:
        if site.parts is None:
            parent = container(site.path[:-1])
            key = site.path[-1]
            parent[key] = _masked_text(parent[key], site.hits, names, fingerprints, allowed)
        else:
            parent = container(site.path[:-1])
            first = site.path[-1]
            assert isinstance(first, int)
            count = len(site.parts)
            texts = [parent[first + k]["text"] for k in range(count)]
            for k, text in enumerate(_masked_parts(texts, site, names, fingerprints, allowed)):
                part = dict(parent[first + k])
                part["text"] = text
                parent[first + k] = part
    return root[0]


def redact(value: Any, rules: Rules, fingerprints: Fingerprints) -> Tuple[Any, List[Finding]]:
    """`value` (any JSON value) with every secret the rules find masked, and the findings.
    `value` itself is returned where there is nothing to mask (it is never changed)."""
    found = sites(value, rules)
    return apply(value, found, rules, fingerprints), findings(found, rules, fingerprints)


# -- envelopes --------------------------------------------------------------------------------

# What in each envelope type is an id, a reference or a digest: never read for secrets
# (replay needs them as they are; none is content). ``*`` is any list index.
_STRUCTURAL: Dict[str, FrozenSet[Tuple[str, ...]]] = {
    "message": frozenset({("role",), ("tool_call_id",), ("tool_calls", "*", "id"), ("tool_calls", "*", "type")}),
    "compaction": frozenset({("replaces-through-id",)}),
    "elision": frozenset({("items", "*", "id")}),
    "rewind": frozenset({("to-id",)}),
    "tool-dispatched": frozenset({("call-id",), ("arguments-digest",)}),
    "tool-settled": frozenset({("op-id",), ("outcome",), ("result-digest",), ("artifact", "file"),
                               ("artifact", "digest")}),
    "run-context": frozenset({("sections", "*", "digest"), ("sections", "*", "rendered-in")}),
    "import-checkpoint": frozenset({("digest",)}),
}


def structural(type_: str) -> Any:
    """The skip test of `type_`'s payload (for ``walk.sites``)."""
    shapes = _STRUCTURAL.get(type_)
    if shapes is None:
        return None

    def skip(path: Path) -> bool:
        return tuple("*" if isinstance(p, int) else p for p in path) in shapes

    return skip


class EnvelopeMasker:
    """Masks one transcript's payloads in file order, keeping its digests true (see the
    module's docstring), and counts what it did."""

    def __init__(self, rules: Rules, fingerprints: Fingerprints) -> None:
        self.rules = rules
        self.fingerprints = fingerprints
        self.sections: Dict[str, str] = {}  # a section's digest as given -> as written
        self.results: Dict[str, str] = {}  # a tool result's digest as given -> as written
        self.counts: Dict[str, int] = {}  # secrets masked, per rule
        self.digests = 0  # digests written anew

    def payload(self, type_: str, payload: Dict[str, Any]) -> Optional[Dict[str, Any]]:
        """`payload` masked (a new dict), or None where nothing in it changes."""
        found = sites(payload, self.rules, structural(type_))
        new = apply(payload, found, self.rules, self.fingerprints)
        for f in findings(found, self.rules, self.fingerprints):
            self.counts[f.rule] = self.counts.get(f.rule, 0) + 1
        if type_ == "tool-dispatched" and new is not payload and new.get("arguments") is not payload.get("arguments"):
            new["arguments-digest"] = sha256_digest(dumps(new["arguments"]).encode("utf-8"))
            self.digests += 1
        elif type_ == "run-context":
            new = self._sections(payload, new)
        elif type_ == "message" and new is not payload and payload.get("role") == "tool":
            old, now = payload.get("content"), new.get("content")
            if type(old) is str and type(now) is str and old != now:
                self.results[_digest(old)] = _digest(now)
        elif type_ == "tool-settled" and payload.get("result-digest") in self.results:
            new = dict(new)
            new["result-digest"] = self.results[payload["result-digest"]]
            self.digests += 1
        return None if new is payload else new

    def _sections(self, given: Dict[str, Any], new: Dict[str, Any]) -> Dict[str, Any]:
        """Each section whose text was masked gets the digest of its masked text; each
        later reference to its old digest (``rendered-in``) the new one."""
        sections, before = new.get("sections"), given.get("sections")
        if type(sections) is not list or type(before) is not list or len(before) != len(sections):
            return new
        out, changed = [], False
        for old, section in zip(before, sections):
            if type(section) is dict and type(section.get("digest")) is str:
                digest = section["digest"]
                if type(section.get("text")) is str:
                    written = digest
                    if section["text"] != old.get("text"):
                        written = _digest(section["text"])
                        self.sections[digest] = written
                else:
                    written = self.sections.get(digest, digest)
                if written != digest:
                    section = dict(section, digest=written)
                    changed = True
                    self.digests += 1
            out.append(section)
        if not changed:
            return new
        new = dict(new)
        new["sections"] = out
        return new


def _digest(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def count_rules(found: Iterable[Finding]) -> Dict[str, int]:
    counts: Dict[str, int] = {}
    for f in found:
        counts[f.rule] = counts.get(f.rule, 0) + 1
    return counts
