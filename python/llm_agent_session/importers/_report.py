"""What an import did, per source record type: imported, kept as extras, skipped and why."""

from __future__ import annotations

from typing import Any, Dict, cast


class ImportReport(dict):  # type: ignore[type-arg]
    """A plain dict (JSON-ready) with attribute access to its main keys.

    Keys: ``source``, ``out``, ``format``, ``status`` ("imported", "appended",
    "unchanged" or "failed"), ``types`` ({record type: {"imported": n, "extras": n,
    "skipped": {reason: n}}}), ``malformed`` ([{"line", "offset", "reason"}]),
    ``written`` (envelopes appended to ``out``), ``lines`` (source lines read this time),
    ``bytes`` (source bytes read this time), ``pending_tail`` (bytes of an unfinished last
    line left for the next import), ``warnings`` and ``transcripts`` (the reports of
    transcripts made beside this one: sidechains, subagents).
    """

    def __init__(self, source: str, out: str, format: str) -> None:
        super().__init__(
            source=source,
            out=out,
            format=format,
            status="imported",
            error=None,
            types={},
            malformed=[],
            written=0,
            lines=0,
            bytes=0,
            pending_tail=0,
            warnings=[],
            transcripts=[],
        )

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def _type(self, kind: str) -> Dict[str, Any]:
        entry = self["types"].get(kind)
        if entry is None:
            entry = self["types"][kind] = {"imported": 0, "extras": 0, "skipped": {}}
        return cast(Dict[str, Any], entry)

    def imported(self, kind: str) -> None:
        self._type(kind)["imported"] += 1

    def extras(self, kind: str) -> None:
        self._type(kind)["extras"] += 1

    def skipped(self, kind: str, reason: str) -> None:
        skipped = self._type(kind)["skipped"]
        skipped[reason] = skipped.get(reason, 0) + 1

    def malformed_line(self, line: int, offset: int, reason: str) -> None:
        self["malformed"].append({"line": line, "offset": offset, "reason": reason})

    def warn(self, text: str) -> None:
        self["warnings"].append(text)

    def summary(self) -> str:
        """One line: how many records were imported, kept, skipped, and malformed lines."""
        imported = sum(t["imported"] for t in self["types"].values())
        extras = sum(t["extras"] for t in self["types"].values())
        skipped = sum(sum(t["skipped"].values()) for t in self["types"].values())
        text = f"{imported} imported, {extras} kept as extras, {skipped} skipped"
        if self["malformed"]:
            lines = ", ".join(str(m["line"]) for m in self["malformed"][:5])
            more = "" if len(self["malformed"]) <= 5 else ", ..."
            text += f", {len(self['malformed'])} malformed line(s) ({lines}{more})"
        if self["pending_tail"]:
            text += f", an unfinished last line of {self['pending_tail']} bytes left for the next import"
        return text

    def count_new(self, now: "ImportReport", was: "ImportReport", old_lines: int, old_bytes: int) -> None:
        """Count what this import read for the first time: ``now`` is the report of the
        whole source, ``was`` that of the part an earlier import read (both planned
        again); the record counts and warnings are the difference (a record whose fate
        changed shows as its new fate), the malformed lines those past ``old_bytes``."""
        for kind, entry in now["types"].items():
            old = was["types"].get(kind, {"imported": 0, "extras": 0, "skipped": {}})
            mine = self._type(kind)
            for key in ("imported", "extras"):
                mine[key] += max(0, entry[key] - old[key])
            for reason, n in entry["skipped"].items():
                if n > old["skipped"].get(reason, 0):
                    mine["skipped"][reason] = mine["skipped"].get(reason, 0) + n - old["skipped"].get(reason, 0)
            if not (mine["imported"] or mine["extras"] or mine["skipped"]):
                del self["types"][kind]
        seen: Dict[str, int] = {}
        for text in was["warnings"]:
            seen[text] = seen.get(text, 0) + 1
        for text in now["warnings"]:
            if seen.get(text):
                seen[text] -= 1
            else:
                self.warn(text)
        self["malformed"].extend(m for m in now["malformed"] if m["offset"] >= old_bytes)
        self["lines"] = now["lines"] - old_lines
        self["bytes"] = now["bytes"] - old_bytes
        self["pending_tail"] = now["pending_tail"]
        for key, value in now.items():
            if key.startswith("_"):  # a format's own notes (the sidechains found)
                self[key] = value

    def failed(self, error: str) -> "ImportReport":
        self["status"] = "failed"
        self["error"] = error
        return self


def reason_of(e: BaseException) -> str:
    text = str(e)
    return text if len(text) <= 200 else text[:200] + "..."


__all__ = ["ImportReport", "reason_of"]
