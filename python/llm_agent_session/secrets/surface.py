"""What an outward surface masks with (an export, the dataset, OTLP, the viewer): one
:class:`Redactor` per run, which masks values, texts, envelope lines and whole
transcripts, and counts what it masked, so the surface can say so.

A value is first serialised (``json.dumps``, at C speed) and read by the core's byte
scan; only where the scan keeps it is it walked and matched, so a clean transcript costs
little more than one pass over its bytes, and comes out as the very same objects.

A surface that reads a transcript by its path (an export, OTLP, the dataset) reads it
through :meth:`Redactor.read`: the core's byte scan reads the file once; where it keeps
no line the surface reads the file itself, untouched; otherwise it reads a private copy
whose lines are masked as ``scrub`` masks them (its digests kept true, so it loads and
replays as the original does), removed afterwards.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import threading
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple, TypeVar

from .. import _platform
from .._files import open_to_read, write_all

from ..canonical import dumps, envelope_line
from .config import Fingerprints, default_rules
from .match import Rules
from .redact import EnvelopeMasker, Finding, apply, findings, secret_bytes, structural
from .walk import sites

T = TypeVar("T")
#: How much of a transcript is read at once (whole lines: a longer line is read whole).
BLOCK = 8 << 20


def _plain(value: Any, text: bytes) -> Any:
    """`value` as plain dicts, lists and strings (what the walk reads: a ``FrozenDict`` of a
    message, a tuple, are subclasses or other types), read back from its JSON `text`."""
    if type(value) is str:
        return value
    return json.loads(text)


def _lines_with(block: bytes, word: bytes) -> List[Tuple[int, int]]:
    """``(start, end)`` of each line of `block` that holds `word` (``end`` before its ``\n``)."""
    spans = []
    at = block.find(word)
    while at >= 0:
        a = block.rfind(b"\n", 0, at) + 1
        z = block.find(b"\n", at)
        z = len(block) if z < 0 else z
        spans.append((a, z))
        at = block.find(word, z)
    return spans


def _blocks(fd: int, start: int, end: int) -> Iterator[bytes]:
    """The bytes ``[start, end)`` of `fd` in blocks of whole lines (the last block may end
    without its ``\n``: a writer's unfinished line, or a bound in mid line)."""
    carry = b""
    at = start
    while at < end:
        data = _platform.pread(fd, min(BLOCK, end - at), at)
        if not data:
            break
        at += len(data)
        buf = carry + data if carry else data
        cut = buf.rfind(b"\n") + 1
        if cut == 0:
            carry = buf
            continue
        carry = buf[cut:]
        yield buf[:cut]
    if carry:
        yield carry


class Redactor:
    """Masks what `rules` find (default: ``secrets.default_rules()``), with `fingerprints`
    (default: the account's key). ``enabled=False`` (``--no-redact``) passes everything
    through unchanged and counts nothing."""

    def __init__(self, rules: Optional[Rules] = None, fingerprints: Optional[Fingerprints] = None, *,
                 enabled: bool = True) -> None:
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
        walked = value
        if text is not None:
            if not self._keep.keeps(text):
                return value
            walked = _plain(value, text)
        found = sites(walked, self.rules)
        if not found:
            return value
        self._count(findings(found, self.rules, self.fingerprints))
        return apply(walked, found, self.rules, self.fingerprints)

    def payload(self, type_: str, payload: Any) -> Any:
        """An envelope's payload masked as ``value`` masks, its ids, references and digests
        left alone (as a scrub leaves them); the very same object where nothing is masked."""
        if not self.enabled or type(payload) is not dict:
            return payload
        try:
            text: Optional[bytes] = json.dumps(payload, ensure_ascii=False).encode("utf-8", "surrogatepass")
        except (TypeError, ValueError):
            text = None
        walked = payload
        if text is not None:
            if not self._keep.keeps(text):
                return payload
            walked = _plain(payload, text)
        found = sites(walked, self.rules, structural(type_))
        if not found:
            return payload
        self._count(findings(found, self.rules, self.fingerprints))
        return apply(walked, found, self.rules, self.fingerprints)

    def reveal(self, type_: str, payload: Any, fingerprint: str) -> Optional[Tuple[str, str]]:
        """(rule, secret) of the finding in an envelope's payload whose marker carries
        `fingerprint` (what ``payload`` masked there), or None where there is none. For a
        secret found inside base64, the decoded secret."""
        if type(payload) is not dict:
            return None
        payload = json.loads(json.dumps(payload, ensure_ascii=False))  # plain dicts and lists, as the walk reads
        for site in sites(payload, self.rules, structural(type_)):
            for hit in site.hits:
                if self.fingerprints(secret_bytes(hit)) == fingerprint:
                    return self.rules.rules[hit.rule].name, hit.secret
        return None

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

    # -- whole transcripts ------------------------------------------------------------------

    def clean(self, fd: int, start: int, end: int) -> bool:
        """Whether the bytes ``[start, end)`` of `fd` hold nothing to mask: the byte scan
        keeps no line (it never drops one that holds a secret:
        ``tests/secrets/test_prefilter.py``), or the rules find nothing in those it keeps."""
        from .scan import TRANSCRIPT, line_findings

        keep = self._keep
        for block in _blocks(fd, start, end):
            for a, z in keep.lines(block):
                if line_findings(block[a:z], TRANSCRIPT, self.rules, self.fingerprints)[2]:
                    return False
        return True

    def holds(self, line: bytes) -> bool:
        """Whether one line of a transcript holds something to mask (False when not enabled)."""
        from .scan import TRANSCRIPT, line_findings

        return self.enabled and self._keep.keeps(line) and bool(
            line_findings(line, TRANSCRIPT, self.rules, self.fingerprints)[2])

    def holds_at(self, path: str, offset: int) -> bool:
        """Whether the line at byte `offset` of the file at `path` holds something to mask
        (True where it can no longer be read: nothing of it should be shown then)."""
        from ..search_many import _line_at

        if not self.enabled:
            return False
        try:
            fd = open_to_read(path)
        except OSError:
            return True
        try:
            return self.holds(_line_at(fd, offset))
        except OSError:
            return True
        finally:
            os.close(fd)

    def copy(self, fd: int, size: int, out: int) -> None:
        """The first `size` bytes of `fd` written to `out`, each line masked as ``line``
        masks it (the byte scan picks the lines to read; the rest are copied as they are),
        as a transcript of its own: its digests kept true from its first line on."""
        self._envelopes = EnvelopeMasker(self.rules, self.fingerprints)
        for block in _blocks(fd, 0, size):
            write_all(out, self._masked_block(block))

    def _masked_block(self, block: bytes) -> bytes:
        """A block of whole lines masked: the lines the byte scan keeps read by ``line``,
        and so are those whose digests may follow a masked text (a settle, a run context)."""
        masker = self._envelopes
        spans = self._keep.lines(block)
        follow = [b'"tool-settled"'] if masker.results else []
        if masker.sections:
            follow.append(b'"run-context"')
        if follow:
            spans = sorted(set(spans) | {span for word in follow for span in _lines_with(block, word)})
        if not spans:
            return block
        out, at = [], 0
        for a, z in spans:
            out.append(block[at:a])
            out.append(self.line(block[a:z]))
            at = z
        out.append(block[at:])
        return b"".join(out)

    @contextlib.contextmanager
    def source(self, path: str) -> Iterator[Tuple[str, int]]:
        """What to read for the transcript at `path` as it is now: `path` itself where
        nothing in it is masked (or redaction is off), else a private masked copy (in a
        new directory of mode 0700, removed on exit); and the size that was checked. A
        reader that may read past that size (a live transcript grows) checks what it
        read with :meth:`still_clean`; :meth:`read` does both."""
        if not self.enabled:
            yield path, -1
            return
        fd = open_to_read(path)
        try:
            size = os.fstat(fd).st_size
            if self.clean(fd, 0, size):
                os.close(fd)
                fd = -1
                yield path, size
                return
            directory = tempfile.mkdtemp(prefix="llm-agent-session-redacted-")
            try:
                copy = os.path.join(directory, os.path.basename(path) or "transcript.jsonl")
                out = os.open(copy, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _platform.O_CLOEXEC | _platform.O_BINARY,
                              0o600)
                try:
                    self.copy(fd, size, out)
                finally:
                    os.close(out)
                os.close(fd)
                fd = -1
                yield copy, -1
            finally:
                shutil.rmtree(directory, ignore_errors=True)
        finally:
            if fd >= 0:
                os.close(fd)

    def still_clean(self, path: str, size: int) -> bool:
        """Whether what `path` grew by since `size` bytes were found clean is clean too
        (True where nothing was checked: a masked copy, or redaction off)."""
        if size < 0:
            return True
        try:
            fd = open_to_read(path)
        except OSError:
            return True  # gone: what was read was read before it went, from checked bytes or a copy
        try:
            now = os.fstat(fd).st_size
            return now <= size or self.clean(fd, size, now)
        finally:
            os.close(fd)

    def read(self, path: str, reader: Callable[[str], T]) -> T:
        """``reader(p)`` of the transcript at `path` with what the rules find masked: `p`
        is `path` itself where its bytes hold nothing to mask, else a masked copy (see
        :meth:`source`). `reader` reads what it needs before it returns (the copy is
        removed then), and may be called twice: the file is checked on a thread of its
        own while `reader` reads it (the core's scan lets go of the GIL), so a clean one
        costs about nothing more where a core is free; where the check finds something
        to mask (or the file grew meanwhile by a line that holds some), what was read is
        dropped and the masked copy read instead."""
        if not self.enabled:
            return reader(path)
        fd = open_to_read(path)
        size = os.fstat(fd).st_size
        checked: List[bool] = []

        def check() -> None:
            try:
                checked.append(self.clean(fd, 0, size))
            except Exception:  # noqa: BLE001 - unreadable now: the copy below says why
                checked.append(False)

        checking = threading.Thread(target=check, name="redactor-check", daemon=True)
        checking.start()
        try:
            got = reader(path)
        finally:
            checking.join()
            os.close(fd)
        if checked == [True] and self.still_clean(path, size):
            return got
        with self.source(path) as (readable, _):
            return reader(readable)
