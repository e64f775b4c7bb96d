"""The side index's bytes (docs/FORMAT.md, "The side index") and its two hashes, in
pure Python: the twin of ``rust/index/format.rs`` and ``rust/index/hash.rs``, byte for
byte (``tests/test_index_differential.py``).

The file is untrusted input: ``decode`` checks the checksum, every count against the
bytes that hold it and every index against the envelopes, and raises ``Invalid``
saying why; it allocates no more than a small multiple of the bytes it is given.
"""

from __future__ import annotations

import os
import struct
import zlib
from array import array
from dataclasses import dataclass, field
from typing import Iterable, Iterator, List, Optional, Tuple

from .._times import blocks_of

MAGIC = b"LASINDEX"
VERSION = 3
MAX_KINDS = 255
OTHER_KIND = 255
MAX_KIND_TEXT = 128
SAMPLES = 64
HEAD_BYTES = 64 << 10

_M64 = (1 << 64) - 1

# An envelope's line: (offset, length without its \n).
LineRef = Tuple[int, int]
# A kind: (type, a message's role or None).
Kind = Tuple[str, Optional[str]]


def crc32(data: bytes, crc: int = 0) -> int:
    """CRC-32 as zlib computes it (and ``rust/index/hash.rs``)."""
    return zlib.crc32(data, crc)


def _rotl(x: int, b: int) -> int:
    return ((x << b) | (x >> (64 - b))) & _M64


State = Tuple[int, int, int, int]


def _initial(key: Tuple[int, int]) -> State:
    k0, k1 = key
    return (k0 ^ 0x736F6D6570736575, k1 ^ 0x646F72616E646F6D, k0 ^ 0x6C7967656E657261, k1 ^ 0x7465646279746573)


def _absorb(v: State, words: Iterable[int], c: int) -> State:
    """`words` compressed into the SipHash state `v`, `c` rounds each."""
    v0, v1, v2, v3 = v
    for m in words:
        v3 ^= m
        for _ in range(c):  # one SipRound each
            v0 = (v0 + v1) & _M64; v1 = _rotl(v1, 13); v1 ^= v0; v0 = _rotl(v0, 32)  # noqa: E702
            v2 = (v2 + v3) & _M64; v3 = _rotl(v3, 16); v3 ^= v2  # noqa: E702
            v0 = (v0 + v3) & _M64; v3 = _rotl(v3, 21); v3 ^= v0  # noqa: E702
            v2 = (v2 + v1) & _M64; v1 = _rotl(v1, 17); v1 ^= v2; v2 = _rotl(v2, 32)  # noqa: E702
        v0 ^= m
    return v0, v1, v2, v3


def _finish(v: State, d: int) -> int:
    """The value of the SipHash state `v`: `d` rounds (``hash::finish``)."""
    v0, v1, v2, v3 = v
    v2 ^= 0xFF
    for _ in range(d):
        v0 = (v0 + v1) & _M64; v1 = _rotl(v1, 13); v1 ^= v0; v0 = _rotl(v0, 32)  # noqa: E702
        v2 = (v2 + v3) & _M64; v3 = _rotl(v3, 16); v3 ^= v2  # noqa: E702
        v0 = (v0 + v3) & _M64; v3 = _rotl(v3, 21); v3 ^= v0  # noqa: E702
        v2 = (v2 + v1) & _M64; v1 = _rotl(v1, 17); v1 ^= v2; v2 = _rotl(v2, 32)  # noqa: E702
    return v0 ^ v1 ^ v2 ^ v3


def _words(data: bytes, end: int) -> Iterator[Tuple[int, ...]]:
    """The little-endian 8-byte words of ``data[:end]`` (`end` a multiple of 8), 8,192 at a time."""
    for at in range(0, end, 1 << 16):
        yield struct.unpack_from(f"<{min(end - at, 1 << 16) // 8}Q", data, at)


def _siphash(key: Tuple[int, int], data: bytes, c: int, d: int) -> int:
    """SipHash-c-d of `data` under `key` (k0, k1): ``hash::siphash`` of the native core."""
    n = len(data)
    whole = n - n % 8
    v = _initial(key)
    for words in _words(data, whole):
        v = _absorb(v, words, c)
    v = _absorb(v, [int.from_bytes(data[whole:], "little") | ((n & 0xFF) << 56)], c)
    return _finish(v, d)


def siphash13(key: Tuple[int, int], data: bytes) -> int:
    """SipHash-1-3: ids' and digests' fingerprints (``hash::siphash13``)."""
    return _siphash(key, data, 1, 3)


_LANES = 4


def seal(key: Tuple[int, int], data: bytes) -> int:
    """An index's seal under the cache's secret key: SipHash-1-3 in four lanes (``hash::seal``;
    docs/FORMAT.md): word ``i`` to lane ``i % 4``, then the lanes' values, the length and
    the bytes after the last whole word hashed together."""
    n = len(data)
    whole = n - n % 8
    lanes = [_initial(key)] * _LANES
    for words in _words(data, whole):  # 8,192 words a chunk: lane k's are words[k::4]
        lanes = [_absorb(lane, words[k::_LANES], 1) for k, lane in enumerate(lanes)]
    last = struct.pack(f"<{_LANES}QQ", *(_finish(lane, 3) for lane in lanes), n) + data[whole:]
    return _siphash(key, last, 1, 3)


def fingerprint(key: Tuple[int, int], text: str) -> int:
    """The fingerprint an index keeps of an id or a digest: its hash's top 32 bits."""
    return siphash13(key, text.encode("utf-8", "surrogatepass")) >> 32


def random_key() -> Tuple[int, int]:
    raw = os.urandom(16)
    return int.from_bytes(raw[:8], "little"), int.from_bytes(raw[8:], "little")


class Invalid(Exception):
    """Why bytes are not a usable index."""


class Identity:
    """The transcript an index describes, as ``fstat`` saw it."""

    __slots__ = ("dev", "ino", "size", "mtime_ns", "ctime_ns")

    def __init__(self, dev: int, ino: int, size: int, mtime_ns: int, ctime_ns: int) -> None:
        self.dev, self.ino, self.size, self.mtime_ns, self.ctime_ns = dev, ino, size, mtime_ns, ctime_ns

    def as_tuple(self) -> Tuple[int, int, int, int, int]:
        return (self.dev, self.ino, self.size, self.mtime_ns, self.ctime_ns)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Identity) and self.as_tuple() == other.as_tuple()

    __hash__ = None  # type: ignore[assignment]


@dataclass
class Checkpoint:
    """What replay's fold holds after the last indexed envelope, by envelope index."""

    grants: Optional[int] = None
    live: List[Tuple[int, Optional[int]]] = field(default_factory=list)
    pending: List[Tuple[int, bool]] = field(default_factory=list)
    # The settled operations' dispatches: a bit an envelope (bit e % 8 of byte e // 8).
    settled: bytes = b""
    sections: List[Tuple[int, int]] = field(default_factory=list)
    rewound: List[Tuple[int, int]] = field(default_factory=list)


@dataclass
class IndexData:
    key: Tuple[int, int] = (0, 0)
    identity: Identity = field(default_factory=lambda: Identity(0, 0, 0, 0, 0))
    end: int = 0
    lines: int = 0
    head_crc: int = 0
    last_crc: int = 0
    kind_table: List[Kind] = field(default_factory=list)
    kinds: bytearray = field(default_factory=bytearray)
    events: List[LineRef] = field(default_factory=list)
    gaps: List[Tuple[int, int, int]] = field(default_factory=list)  # (envelope, bytes, lines)
    fingerprints: "array[int]" = field(default_factory=lambda: array("I"))
    samples: List[Tuple[int, int]] = field(default_factory=list)
    fold: Checkpoint = field(default_factory=Checkpoint)
    # The largest time key (``_times.time_key``) of each block of ``TIME_BLOCK`` envelopes.
    times: List[int] = field(default_factory=list)
    # The dispatches whose operation was settled as failed: a bitmap as ``settled`` is.
    failed: bytes = b""

    def line_numbers(self) -> List[int]:
        """The 1-based line number of each envelope."""
        out: List[int] = []
        extra = dict((g[0], g[2]) for g in self.gaps)
        line = 0
        for e in range(len(self.events)):
            line += 1 + extra.get(e, 0)
            out.append(line)
        return out

    def last_line(self) -> int:
        return len(self.events) + sum(g[2] for g in self.gaps)


def bitmap(n: int, bits: Iterator[int]) -> bytes:
    """`n` bits, those of `bits` set (bit i % 8 of byte i // 8)."""
    out = bytearray((n + 7) // 8)
    for i in bits:
        out[i // 8] |= 1 << (i % 8)
    return bytes(out)


def bits_of(data: bytes) -> Iterator[int]:
    """The bits set in a bitmap, ascending."""
    for at, byte in enumerate(data):
        while byte:
            low = byte & -byte
            yield at * 8 + low.bit_length() - 1
            byte ^= low


def sample_events(n: int) -> Iterator[int]:
    """The envelopes to sample: ``min(n, SAMPLES)`` spread evenly, from the first."""
    k = min(n, SAMPLES)
    return (j * n // k for j in range(k))


# --- writing -------------------------------------------------------------------------


def _varint(out: bytearray, v: int) -> None:
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


def _text(out: bytearray, text: str) -> None:
    raw = text.encode("utf-8")
    _varint(out, len(raw))
    out += raw


def _section(out: bytearray, tag: bytes, body: bytes) -> None:
    out += tag
    out += struct.pack("<Q", len(body))
    out += body


def encode(index: IndexData, secret: Tuple[int, int]) -> bytes:
    """The bytes of `index` (docs/FORMAT.md), sealed with `secret`."""
    out = bytearray(MAGIC)
    i = index.identity
    out += struct.pack(
        "<IIQQQQQqqQQQII", VERSION, 0, index.key[0], index.key[1], i.dev, i.ino, i.size, i.mtime_ns,
        i.ctime_ns, index.end, index.lines, len(index.events), index.head_crc, index.last_crc,
    )
    body = bytearray()
    _varint(body, len(index.kind_table))
    for type_, role in index.kind_table:
        _text(body, type_)
        if role is None:
            body.append(0)
        else:
            body.append(1)
            _text(body, role)
    _section(out, b"KTAB", bytes(body))
    _section(out, b"KIND", bytes(index.kinds))
    body = bytearray()
    for _, length in index.events:
        _varint(body, length)
    _section(out, b"LENS", bytes(body))
    body = bytearray()
    _varint(body, len(index.gaps))
    last = 0
    for e, nbytes, nlines in index.gaps:
        _varint(body, e - last)
        _varint(body, nbytes)
        _varint(body, nlines)
        last = e
    _section(out, b"GAPS", bytes(body))
    fps = array("I", index.fingerprints)
    if fps.itemsize != 4:  # pragma: no cover - every platform this runs on has 4-byte "I"
        raise RuntimeError("array('I') is not 4 bytes here")
    if struct.pack("=I", 1) != struct.pack("<I", 1):  # pragma: no cover - big-endian hosts
        fps.byteswap()
    _section(out, b"FPRS", fps.tobytes())
    body = bytearray()
    _varint(body, len(index.samples))
    for e, crc in index.samples:
        _varint(body, e)
        body += struct.pack("<I", crc)
    _section(out, b"SMPL", bytes(body))
    _section(out, b"STLD", bytes(index.fold.settled))
    f = index.fold
    body = bytearray()
    _varint(body, 0 if f.grants is None else f.grants + 1)
    _varint(body, len(f.live))
    for source, stub in f.live:
        _varint(body, source)
        _varint(body, 0 if stub is None else stub + 1)
    _varint(body, len(f.pending))
    for e, recorded in f.pending:
        _varint(body, e)
        body.append(1 if recorded else 0)
    _varint(body, len(f.sections))
    for fp, e in f.sections:
        body += struct.pack("<I", fp)
        _varint(body, e)
    _varint(body, len(f.rewound))
    for m, r in f.rewound:
        _varint(body, m)
        _varint(body, r)
    _section(out, b"FOLD", bytes(body))
    _section(out, b"TIME", struct.pack(f"<{len(index.times)}q", *index.times))
    _section(out, b"FAIL", bytes(index.failed))
    out += struct.pack("<Q", seal(secret, bytes(out)))
    return bytes(out)


# --- reading -------------------------------------------------------------------------


class _Reader:
    """Bytes read front to back, every read bounded by what is left."""

    __slots__ = ("data", "at", "end")

    def __init__(self, data: bytes, at: int = 0, end: Optional[int] = None) -> None:
        self.data = data
        self.at = at
        self.end = len(data) if end is None else end

    def left(self) -> int:
        return self.end - self.at

    def take(self, n: int) -> bytes:
        if n < 0 or n > self.left():
            raise Invalid("it ends early (truncated)")
        out = self.data[self.at : self.at + n]
        self.at += n
        return out

    def u8(self) -> int:
        if self.left() < 1:
            raise Invalid("it ends early (truncated)")
        b = self.data[self.at]
        self.at += 1
        return b

    def u32(self) -> int:
        return int(struct.unpack("<I", self.take(4))[0])

    def u64(self) -> int:
        return int(struct.unpack("<Q", self.take(8))[0])

    def varint(self) -> int:
        v = 0
        for shift in range(0, 64, 7):
            b = self.u8()
            bits = b & 0x7F
            if shift == 63 and bits > 1:
                raise Invalid("a number overflows 64 bits")
            v |= bits << shift
            if not b & 0x80:
                return v
        raise Invalid("a number overflows 64 bits")

    def count(self, min_bytes: int) -> int:
        n = self.varint()
        if n * max(min_bytes, 1) > self.left():
            raise Invalid("a count is larger than its bytes can hold")
        return n

    def text(self) -> str:
        n = self.count(1)
        if n > MAX_KIND_TEXT:
            raise Invalid("a kind name is too long")
        try:
            return self.take(n).decode("utf-8")
        except UnicodeDecodeError:
            raise Invalid("a kind name is not UTF-8") from None

    def section(self, tag: bytes) -> "_Reader":
        if self.take(4) != tag:
            raise Invalid(f"section {tag.decode()} is missing")
        n = self.u64()
        if n > self.left():
            raise Invalid("it ends early (truncated)")
        inner = _Reader(self.data, self.at, self.at + n)
        self.at += n
        return inner

    def done(self, what: str) -> None:
        if self.left():
            raise Invalid(f"{what} has bytes after its end")


def _event(r: _Reader, n: int) -> int:
    e = r.varint()
    if e >= n:
        raise Invalid("an envelope index is past the last envelope")
    return e


def _optional_event(r: _Reader, n: int) -> Optional[int]:
    v = r.varint()
    if v == 0:
        return None
    if v > n:
        raise Invalid("an envelope index is past the last envelope")
    return v - 1


def decode(data: bytes, secret: Tuple[int, int]) -> IndexData:
    """`data` as an index sealed with `secret`, or ``Invalid`` saying why they are none."""
    if len(data) < 8 or data[:8] != MAGIC:
        raise Invalid("not an index file")
    body_end = max(len(data) - 8, 8)
    if len(data) - body_end < 8:
        raise Invalid("it ends early (truncated)")
    want = int(struct.unpack("<Q", data[body_end : body_end + 8])[0])
    r = _Reader(data, 8, body_end)
    version = r.u32()
    if version != VERSION:
        raise Invalid(f"it is of format version {version}, this version reads {VERSION}")
    if seal(secret, data[:body_end]) != want:
        raise Invalid("its seal does not match: damaged, or not written with this cache's key")
    r.u32()  # flags
    key = (r.u64(), r.u64())
    dev, ino, size = r.u64(), r.u64(), r.u64()
    mtime, ctime = struct.unpack("<qq", r.take(16))
    identity = Identity(dev, ino, size, mtime, ctime)
    end, lines, n_header = r.u64(), r.u64(), r.u64()
    head_crc, last_crc = r.u32(), r.u32()
    if end > size or lines > end:
        raise Invalid("its sizes do not add up")

    s = r.section(b"KTAB")
    count = s.count(2)
    if count > MAX_KINDS:
        raise Invalid("its kind table is too long")
    kind_table: List[Kind] = []
    for _ in range(count):
        type_ = s.text()
        flag = s.u8()
        if flag == 0:
            role: Optional[str] = None
        elif flag == 1:
            role = s.text()
        else:
            raise Invalid("a kind has a bad role flag")
        kind_table.append((type_, role))
    s.done("KTAB")

    s = r.section(b"KIND")
    kinds = bytearray(s.take(s.left()))
    n = len(kinds)
    if n != n_header or (n == 0 and end > 0):
        raise Invalid("its envelope count does not match its kinds")

    lens = r.section(b"LENS")
    g = r.section(b"GAPS")
    gap_count = g.count(3)
    gaps: List[Tuple[int, int, int]] = []
    at = 0
    for i in range(gap_count):
        delta = g.varint()
        if i > 0 and delta == 0:
            raise Invalid("two gaps at one envelope")
        at += delta
        if at >= n:
            raise Invalid("a gap is past the last envelope")
        gaps.append((at, g.varint(), g.varint()))
    g.done("GAPS")
    if n > lens.left():
        raise Invalid("LENS holds fewer lengths than envelopes")
    events: List[LineRef] = []
    gap_at = {e: (b, ln) for e, b, ln in gaps}
    pos = line = 0
    for e in range(n):
        length = lens.varint()
        line += 1
        gap = gap_at.get(e)
        if gap is not None:
            pos += gap[0]
            line += gap[1]
        events.append((pos, length))
        pos += length + 1
        if pos > end:
            raise Invalid("a line ends past the indexed end")
    lens.done("LENS")
    if line > lines:
        raise Invalid("its line count is short of its envelopes'")

    s = r.section(b"FPRS")
    raw = s.take(s.left())
    if len(raw) != 4 * n:
        raise Invalid("FPRS does not hold one fingerprint an envelope")
    fingerprints = array("I")
    fingerprints.frombytes(raw)
    if struct.pack("=I", 1) != struct.pack("<I", 1):  # pragma: no cover - big-endian hosts
        fingerprints.byteswap()

    s = r.section(b"SMPL")
    samples = [(_event(s, n), s.u32()) for _ in range(s.count(5))]
    s.done("SMPL")
    if [e for e, _ in samples] != list(sample_events(n)):
        raise Invalid("its samples are not the ones it must hold")
    settled = _bitmap_section(r, b"STLD", n)

    s = r.section(b"FOLD")
    fold = Checkpoint()
    fold.grants = _optional_event(s, n)
    fold.live = [(_event(s, n), _optional_event(s, n)) for _ in range(s.count(2))]
    for _ in range(s.count(2)):
        e = _event(s, n)
        flag = s.u8()
        if flag > 1:
            raise Invalid("a pending operation has a bad state")
        fold.pending.append((e, flag == 1))
    fold.settled = settled
    for _ in range(s.count(5)):
        fp = s.u32()
        fold.sections.append((fp, _event(s, n)))
    fold.rewound = [(_event(s, n), _event(s, n)) for _ in range(s.count(2))]
    s.done("FOLD")
    s = r.section(b"TIME")
    blocks = blocks_of(n)
    if s.left() != 8 * blocks:
        raise Invalid("TIME does not hold one time a block")
    times = list(struct.unpack(f"<{blocks}q", s.take(s.left())))
    failed = _bitmap_section(r, b"FAIL", n)
    r.done("the index")
    return IndexData(
        key=key, identity=identity, end=end, lines=lines, head_crc=head_crc, last_crc=last_crc,
        kind_table=kind_table, kinds=kinds, events=events, gaps=gaps, fingerprints=fingerprints,
        samples=samples, fold=fold, times=times, failed=failed,
    )


def _bitmap_section(r: _Reader, tag: bytes, n: int) -> bytes:
    """The section `tag`, a bitmap of one bit an envelope (`n` of them, no bit past them)."""
    s = r.section(tag)
    bits = s.take(s.left())
    past_n = bits[-1] >> (n % 8) if bits and n % 8 else 0
    if len(bits) != (n + 7) // 8 or past_n:
        raise Invalid(f"{tag.decode()} does not hold one bit an envelope")
    return bits
