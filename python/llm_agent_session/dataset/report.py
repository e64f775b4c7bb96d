"""What an export did: a ``FileResult`` per file, and the ``Report`` of the run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional

from .schema import TABLE_NAMES

EXPORTED, UNCHANGED, REMOVED, FAILED, SKIPPED = "exported", "unchanged", "removed", "failed", "skipped"


@dataclass
class FileResult:
    """What became of one file: ``exported`` (its rows written; `verdict` says whether it
    loads; `grown`: only the bytes it grew by were read, their rows added), ``unchanged``,
    ``removed`` (gone from SRC: its rows deleted), ``skipped`` (not a transcript) or
    ``failed`` (it could not be read, or its name is not UTF-8; its earlier rows, if any,
    stay). `path` is the name as found, to open (a name that is not UTF-8 holds lone
    surrogates, as ``os.fsdecode`` makes them; the command line writes it with
    ``_files.name_as_text``)."""

    path: str
    status: str
    reason: Optional[str] = None
    verdict: Optional[str] = None
    rows: Dict[str, int] = field(default_factory=dict)
    bytes: int = 0
    grown: bool = False
    masked: int = 0  # secrets masked in its rows (docs/secrets.md)


@dataclass
class Report:
    files: List[FileResult]
    seconds: float
    out: str
    redacted: bool = True  # whether the run masked what the secret rules find

    def count(self, status: str) -> int:
        return sum(1 for f in self.files if f.status == status)

    @property
    def rows(self) -> Dict[str, int]:
        """Rows written this run, per table (for the transcripts exported)."""
        return {t: sum(f.rows.get(t, 0) for f in self.files) for t in TABLE_NAMES}

    @property
    def masked(self) -> int:
        """Secrets masked in the rows written this run."""
        return sum(f.masked for f in self.files)

    @property
    def bytes_read(self) -> int:
        return sum(f.bytes for f in self.files if f.status == EXPORTED)

    @property
    def would_fail(self) -> int:
        return sum(1 for f in self.files if f.verdict == "would-fail")

    def summary(self) -> str:
        """The final line: files by what became of them, rows per table, MB/s, and (when it
        masked) how many secrets it masked."""
        files = ", ".join(f"{self.count(s)} {s}" for s in (EXPORTED, UNCHANGED, REMOVED, FAILED, SKIPPED))
        rows = ", ".join(f"{n:,} {t}" for t, n in self.rows.items())
        rate = self.bytes_read / 1e6 / self.seconds if self.seconds > 0 else 0.0
        note = f" ({self.would_fail} would not load: see sessions.verdict)" if self.would_fail else ""
        grown = sum(1 for f in self.files if f.grown)
        if grown:
            note += f" ({grown} read only where {'it' if grown == 1 else 'they'} grew)"
        masked = f"; {self.masked:,} secret{'' if self.masked == 1 else 's'} masked" if self.redacted else ""
        return (f"{files}{note}; rows written: {rows}; {self.bytes_read / 1e6:,.1f} MB read in "
                f"{self.seconds:.2f} s ({rate:,.0f} MB/s){masked}")
