//! The side index's bytes (docs/FORMAT.md, "The side index"): [`IndexData`] to bytes
//! and back. `_pure/index.py` writes and reads the same bytes.
//!
//! The file is untrusted input like a transcript: [`decode`] checks the checksum, every
//! count against the bytes that hold it and every index against the envelopes, and
//! answers why it refuses as data ([`Invalid`]); it never panics, never loops past the
//! bytes it was given, and never allocates more than a small multiple of them.

use std::sync::Arc;

use crate::index::hash::{seal, SipKey};
pub use crate::index::invalid::Invalid;
pub use crate::index::lines::Gap;
use crate::index::lines::{Lines, Packed};
use crate::index::slab::Slab;
use crate::index::times::blocks_of;

/// The first 8 bytes of every index file.
pub const MAGIC: &[u8; 8] = b"LASINDEX";
/// Bumped whenever the bytes of an index change meaning; another version is ignored.
pub const VERSION: u32 = 3;
/// Kinds a table holds at most; an envelope of any other kind is [`OTHER_KIND`].
pub const MAX_KINDS: usize = 255;
/// The code of an envelope whose kind is not in the table (read its line).
pub const OTHER_KIND: u8 = 255;
/// A type or role longer than this is not put in the kind table.
pub const MAX_KIND_TEXT: usize = 128;
/// Lines sampled for the content check.
pub const SAMPLES: u64 = 64;
/// Bytes of the transcript's head whose CRC the index keeps.
pub const HEAD_BYTES: u64 = 64 << 10;

/// The transcript an index describes, as `fstat` saw it when the index was written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Identity {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime_ns: i64,
    pub ctime_ns: i64,
}

/// An envelope's kind: its type, and a message's role.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Kind {
    pub type_: String,
    pub role: Option<String>,
}

/// What replay's fold holds after the last indexed envelope, by envelope index.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Checkpoint {
    /// The last `grants` envelope.
    pub grants: Option<u64>,
    /// Each live message: the envelope it comes from (a `message`, or the `compaction`
    /// whose summary it is) and the `elision` whose stub is its content now.
    pub live: Vec<(u64, Option<u64>)>,
    /// Each pending operation's `tool-dispatched` envelope, and whether a `tool`
    /// message answers it (`result-recorded`), in file order.
    pub pending: Vec<(u64, bool)>,
    /// The `tool-dispatched` envelopes of the settled operations: a bitmap, a bit an
    /// envelope (bit `e % 8` of byte `e / 8`).
    pub settled: Slab,
    /// Each run-context section text: its digest's fingerprint and the envelope that
    /// carries it first, in the order they first appear.
    pub sections: Vec<(u32, u64)>,
    /// Each message (or summary) a rewind cut: (its envelope, the rewind's), in the
    /// order they were cut (`peek(survey=True)["rewound"]`).
    pub rewound: Vec<(u64, u64)>,
}

/// One index, decoded.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IndexData {
    pub key: SipKey,
    pub identity: Identity,
    /// Bytes `[0, end)` are indexed; `end` is just past a `\n` (or 0).
    pub end: u64,
    /// Lines in `[0, end)` (every `\n`, blank lines included).
    pub lines: u64,
    /// CRC-32 of bytes `[0, min(end, HEAD_BYTES))`.
    pub head_crc: u32,
    /// CRC-32 of bytes `[last envelope's offset, end)`.
    pub last_crc: u32,
    pub kind_table: Vec<Kind>,
    /// Each envelope's kind, a byte: an index into `kind_table`; any other value
    /// ([`OTHER_KIND`]) says "read the line".
    pub kinds: Slab,
    /// Each envelope's line (offset, length without its `\n`).
    pub events: Lines,
    pub gaps: Vec<Gap>,
    /// Each envelope id's fingerprint (`hash::fingerprint` of its SipHash under `key`),
    /// four bytes little-endian apiece.
    pub fingerprints: Slab,
    /// (envelope, CRC-32 of its line and `\n`) for the sampled envelopes.
    pub samples: Vec<(u64, u32)>,
    pub fold: Checkpoint,
    /// The largest time key (`times::time_key`) of each block of `times::TIME_BLOCK`
    /// envelopes, eight bytes little-endian apiece.
    pub times: Slab,
    /// The `tool-dispatched` envelopes whose operation was settled as failed: a bitmap
    /// as `settled` is.
    pub failed: Slab,
}

/// The envelopes to sample: `min(n, SAMPLES)` spread evenly, from the first.
pub fn sample_events(n: u64) -> impl Iterator<Item = u64> {
    let k = n.min(SAMPLES);
    (0..k).map(move |j| j * n / k)
}

impl IndexData {
    /// The 1-based line number of each envelope.
    pub fn line_numbers(&self) -> Vec<u64> {
        let mut out = Vec::with_capacity(self.kinds.len());
        let mut gaps = self.gaps.iter().peekable();
        let mut line = 0u64;
        for e in 0..self.kinds.len() as u64 {
            line += 1;
            if let Some(g) = gaps.next_if(|g| g.event == e) {
                line += g.lines;
            }
            out.push(line);
        }
        out
    }

    /// The line number of the last envelope (0 when there is none); from the kinds,
    /// which stay when a resumed fold takes the events.
    pub fn last_line(&self) -> u64 {
        self.kinds.len() as u64 + self.gaps.iter().map(|g| g.lines).sum::<u64>()
    }
}

// --- writing ---------------------------------------------------------------------------

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_text(out: &mut Vec<u8>, text: &str) {
    put_varint(out, text.len() as u64);
    out.extend_from_slice(text.as_bytes());
}

fn section(out: &mut Vec<u8>, tag: &[u8; 4], body: &[u8]) {
    out.extend_from_slice(tag);
    out.extend_from_slice(&(body.len() as u64).to_le_bytes());
    out.extend_from_slice(body);
}

/// The bytes of `index` (docs/FORMAT.md), sealed with `secret`.
pub fn encode(index: &IndexData, secret: SipKey) -> Vec<u8> {
    encode_parts(index, &index.events, secret)
}

/// The bytes of `index` whose envelopes are `events` (its own `events` unread),
/// sealed with `secret`.
pub fn encode_parts(index: &IndexData, events: &Lines, secret: SipKey) -> Vec<u8> {
    let n = events.len();
    let mut out = Vec::with_capacity(128 + n * 8);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&index.key.k0.to_le_bytes());
    out.extend_from_slice(&index.key.k1.to_le_bytes());
    let id = index.identity;
    for v in [id.dev, id.ino, id.size] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(&id.mtime_ns.to_le_bytes());
    out.extend_from_slice(&id.ctime_ns.to_le_bytes());
    for v in [index.end, index.lines, n as u64] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out.extend_from_slice(&index.head_crc.to_le_bytes());
    out.extend_from_slice(&index.last_crc.to_le_bytes());

    let mut body = Vec::new();
    put_varint(&mut body, index.kind_table.len() as u64);
    for k in &index.kind_table {
        put_text(&mut body, &k.type_);
        match &k.role {
            None => body.push(0),
            Some(role) => {
                body.push(1);
                put_text(&mut body, role);
            }
        }
    }
    section(&mut out, b"KTAB", &body);
    section(&mut out, b"KIND", index.kinds.bytes());

    body.clear();
    if let Some(packed) = events.indexed() {
        body.extend_from_slice(packed.lens());
    }
    for e in events.read() {
        put_varint(&mut body, e.len);
    }
    section(&mut out, b"LENS", &body);

    body.clear();
    put_varint(&mut body, index.gaps.len() as u64);
    let mut last = 0;
    for g in &index.gaps {
        put_varint(&mut body, g.event.saturating_sub(last));
        put_varint(&mut body, g.bytes);
        put_varint(&mut body, g.lines);
        last = g.event;
    }
    section(&mut out, b"GAPS", &body);

    section(&mut out, b"FPRS", index.fingerprints.bytes());

    body.clear();
    put_varint(&mut body, index.samples.len() as u64);
    for &(e, crc) in &index.samples {
        put_varint(&mut body, e);
        body.extend_from_slice(&crc.to_le_bytes());
    }
    section(&mut out, b"SMPL", &body);
    section(&mut out, b"STLD", index.fold.settled.bytes());

    body.clear();
    let f = &index.fold;
    put_varint(&mut body, f.grants.map_or(0, |g| g + 1));
    put_varint(&mut body, f.live.len() as u64);
    for &(source, stub) in &f.live {
        put_varint(&mut body, source);
        put_varint(&mut body, stub.map_or(0, |s| s + 1));
    }
    put_varint(&mut body, f.pending.len() as u64);
    for &(e, recorded) in &f.pending {
        put_varint(&mut body, e);
        body.push(u8::from(recorded));
    }
    put_varint(&mut body, f.sections.len() as u64);
    for &(fp, e) in &f.sections {
        body.extend_from_slice(&fp.to_le_bytes());
        put_varint(&mut body, e);
    }
    put_varint(&mut body, f.rewound.len() as u64);
    for &(m, r) in &f.rewound {
        put_varint(&mut body, m);
        put_varint(&mut body, r);
    }
    section(&mut out, b"FOLD", &body);
    section(&mut out, b"TIME", index.times.bytes());
    section(&mut out, b"FAIL", index.failed.bytes());

    let sum = seal(secret, &out);
    out.extend_from_slice(&sum.to_le_bytes());
    out
}

// --- reading ---------------------------------------------------------------------------

/// Bytes read front to back, every read bounded by what is left.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Reader { bytes, at: 0 }
    }

    fn left(&self) -> usize {
        self.bytes.len().saturating_sub(self.at)
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], Invalid> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.bytes.len())
            .ok_or_else(|| Invalid::new("it ends early (truncated)"))?;
        let out = self.bytes.get(self.at..end).unwrap_or_default();
        self.at = end;
        Ok(out)
    }

    fn u8(&mut self) -> Result<u8, Invalid> {
        Ok(self.take(1)?.first().copied().unwrap_or(0))
    }

    fn u32(&mut self) -> Result<u32, Invalid> {
        let mut b = [0u8; 4];
        b.copy_from_slice(self.take(4)?);
        Ok(u32::from_le_bytes(b))
    }

    fn u64(&mut self) -> Result<u64, Invalid> {
        let mut b = [0u8; 8];
        b.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(b))
    }

    fn varint(&mut self) -> Result<u64, Invalid> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.u8()?;
            let bits = u64::from(b & 0x7f);
            if shift == 63 && bits > 1 {
                return Err(Invalid::new("a number overflows 64 bits"));
            }
            v |= bits << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(Invalid::new("a number overflows 64 bits"))
    }

    /// A count of items that each take at least `min_bytes` of what is left: a count
    /// the bytes cannot hold is refused before anything is allocated for it.
    fn count(&mut self, min_bytes: usize) -> Result<usize, Invalid> {
        let n = self.varint()?;
        usize::try_from(n)
            .ok()
            .filter(|&n| n.saturating_mul(min_bytes.max(1)) <= self.left())
            .ok_or_else(|| Invalid::new("a count is larger than its bytes can hold"))
    }

    fn text(&mut self) -> Result<String, Invalid> {
        let len = self.count(1)?;
        if len > MAX_KIND_TEXT {
            return Err(Invalid::new("a kind name is too long"));
        }
        String::from_utf8(self.take(len)?.to_vec())
            .map_err(|_| Invalid::new("a kind name is not UTF-8"))
    }

    fn section(&mut self, tag: &[u8; 4]) -> Result<Reader<'a>, Invalid> {
        if self.take(4)? != tag {
            return Err(Invalid::new(format!(
                "section {} is missing",
                String::from_utf8_lossy(tag)
            )));
        }
        let len = usize::try_from(self.u64()?).unwrap_or(usize::MAX);
        Ok(Reader::new(self.take(len)?))
    }

    fn done(&self, what: &str) -> Result<(), Invalid> {
        if self.left() == 0 {
            Ok(())
        } else {
            Err(Invalid::new(format!("{what} has bytes after its end")))
        }
    }
}

/// An event index read from the file, below `n`.
fn event(r: &mut Reader<'_>, n: u64) -> Result<u64, Invalid> {
    let e = r.varint()?;
    if e < n {
        Ok(e)
    } else {
        Err(Invalid::new("an envelope index is past the last envelope"))
    }
}

/// [`decode`] of a copy of `bytes`.
pub fn decode_bytes(bytes: &[u8], secret: SipKey) -> Result<IndexData, Invalid> {
    decode(bytes.to_vec(), secret)
}

/// `bytes` as an index, if sealed with `secret`, or why they are none (its big sections
/// stay in the bytes): sealed, then parsed, on this thread.
pub fn decode(bytes: Vec<u8>, secret: SipKey) -> Result<IndexData, Invalid> {
    let body = bytes
        .get(..bytes.len().saturating_sub(8))
        .unwrap_or_default();
    let sum = seal(secret, body);
    unsealed(Arc::new(bytes))?.sealed(sum)
}

/// An index file's bytes read before their seal is known: their header's verdict was
/// good (an error there is the answer, whatever the seal), and the rest was parsed (an
/// error there counts only once the seal is right).
pub struct Unsealed {
    /// The seal the bytes hold in their last 8.
    want: u64,
    parsed: Result<IndexData, Invalid>,
}

impl Unsealed {
    /// The index, if `seal` (that of all but the bytes' last 8, under the cache's
    /// secret key) is the one they hold.
    pub fn sealed(self, seal: u64) -> Result<IndexData, Invalid> {
        if seal != self.want {
            return Err(Invalid::new(
                "its seal does not match: damaged, or not written with this cache's key",
            ));
        }
        self.parsed
    }
}

/// The bytes of an index file, parsed (untrusted: every read bounded; its big sections
/// stay in `raw`), their seal not yet checked.
pub fn unsealed(raw: Arc<Vec<u8>>) -> Result<Unsealed, Invalid> {
    let bytes: &[u8] = &raw;
    if bytes.len() < 8 || bytes.get(..8) != Some(&MAGIC[..]) {
        return Err(Invalid::new("not an index file"));
    }
    let (body, sum) = bytes.split_at(bytes.len().saturating_sub(8).max(8));
    let mut want = [0u8; 8];
    want.copy_from_slice(
        sum.get(..8)
            .ok_or_else(|| Invalid::new("it ends early (truncated)"))?,
    );
    let mut r = Reader::new(body);
    r.take(8)?;
    let version = r.u32()?;
    if version != VERSION {
        return Err(Invalid::new(format!(
            "it is of format version {version}, this version reads {VERSION}"
        )));
    }
    Ok(Unsealed {
        want: u64::from_le_bytes(want),
        parsed: parse(&raw, r),
    })
}

/// Everything after the header's version (every read bounded).
fn parse(raw: &Arc<Vec<u8>>, mut r: Reader<'_>) -> Result<IndexData, Invalid> {
    let _flags = r.u32()?;
    let key = SipKey {
        k0: r.u64()?,
        k1: r.u64()?,
    };
    let identity = Identity {
        dev: r.u64()?,
        ino: r.u64()?,
        size: r.u64()?,
        mtime_ns: r.u64()? as i64,
        ctime_ns: r.u64()? as i64,
    };
    let end = r.u64()?;
    let lines = r.u64()?;
    let n64 = r.u64()?;
    let head_crc = r.u32()?;
    let last_crc = r.u32()?;
    if end > identity.size || lines > end {
        return Err(Invalid::new("its sizes do not add up"));
    }

    let mut s = r.section(b"KTAB")?;
    let kinds_in_table = s.count(2)?;
    if kinds_in_table > MAX_KINDS {
        return Err(Invalid::new("its kind table is too long"));
    }
    let mut kind_table = Vec::with_capacity(kinds_in_table);
    for _ in 0..kinds_in_table {
        let type_ = s.text()?;
        let role = match s.u8()? {
            0 => None,
            1 => Some(s.text()?),
            _ => return Err(Invalid::new("a kind has a bad role flag")),
        };
        kind_table.push(Kind { type_, role });
    }
    s.done("KTAB")?;

    let kinds = Slab::of(raw, r.section(b"KIND")?.bytes);
    let n = kinds.len();
    if n as u64 != n64 || (n == 0 && end > 0) {
        return Err(Invalid::new("its envelope count does not match its kinds"));
    }

    let lens = r.section(b"LENS")?;
    let mut gaps_in = r.section(b"GAPS")?;
    let gap_count = gaps_in.count(3)?;
    let mut gaps = Vec::with_capacity(gap_count);
    let mut at = 0u64;
    for i in 0..gap_count {
        let delta = gaps_in.varint()?;
        if i > 0 && delta == 0 {
            return Err(Invalid::new("two gaps at one envelope"));
        }
        at = at
            .checked_add(delta)
            .filter(|&e| e < n as u64)
            .ok_or_else(|| Invalid::new("a gap is past the last envelope"))?;
        gaps.push(Gap {
            event: at,
            bytes: gaps_in.varint()?,
            lines: gaps_in.varint()?,
        });
    }
    gaps_in.done("GAPS")?;
    let packed = Packed::new(Slab::of(raw, lens.bytes), n, gaps.clone(), end)?;
    let last_line = packed.last_line();
    let events = Lines::packed(packed);
    if last_line > lines {
        return Err(Invalid::new("its line count is short of its envelopes'"));
    }

    let fprs = r.section(b"FPRS")?;
    if fprs.bytes.len() != n.saturating_mul(4) {
        return Err(Invalid::new(
            "FPRS does not hold one fingerprint an envelope",
        ));
    }
    let fingerprints = Slab::of(raw, fprs.bytes);

    let mut s = r.section(b"SMPL")?;
    let sample_count = s.count(5)?;
    let mut samples = Vec::with_capacity(sample_count);
    for _ in 0..sample_count {
        samples.push((event(&mut s, n as u64)?, s.u32()?));
    }
    s.done("SMPL")?;
    if !samples.iter().map(|s| s.0).eq(sample_events(n as u64)) {
        return Err(Invalid::new("its samples are not the ones it must hold"));
    }
    let settled = bitmap_section(raw, &mut r, b"STLD", n)?;

    let mut s = r.section(b"FOLD")?;
    let n64 = n as u64;
    let grants = match s.varint()? {
        0 => None,
        g if g <= n64 => Some(g - 1),
        _ => return Err(Invalid::new("an envelope index is past the last envelope")),
    };
    let count = s.count(2)?;
    let mut live = Vec::with_capacity(count);
    for _ in 0..count {
        let source = event(&mut s, n64)?;
        let stub = match s.varint()? {
            0 => None,
            g if g <= n64 => Some(g - 1),
            _ => return Err(Invalid::new("an envelope index is past the last envelope")),
        };
        live.push((source, stub));
    }
    let count = s.count(2)?;
    let mut pending = Vec::with_capacity(count);
    for _ in 0..count {
        let e = event(&mut s, n64)?;
        let recorded = match s.u8()? {
            0 => false,
            1 => true,
            _ => return Err(Invalid::new("a pending operation has a bad state")),
        };
        pending.push((e, recorded));
    }
    let count = s.count(5)?;
    let mut sections = Vec::with_capacity(count);
    for _ in 0..count {
        let fp = s.u32()?;
        sections.push((fp, event(&mut s, n64)?));
    }
    let count = s.count(2)?;
    let mut rewound = Vec::with_capacity(count);
    for _ in 0..count {
        rewound.push((event(&mut s, n64)?, event(&mut s, n64)?));
    }
    s.done("FOLD")?;
    let time = r.section(b"TIME")?;
    if time.bytes.len() as u64 != blocks_of(n as u64).saturating_mul(8) {
        return Err(Invalid::new("TIME does not hold one time a block"));
    }
    let times = Slab::of(raw, time.bytes);
    let failed = bitmap_section(raw, &mut r, b"FAIL", n)?;
    r.done("the index")?;
    Ok(IndexData {
        key,
        identity,
        end,
        lines,
        head_crc,
        last_crc,
        kind_table,
        kinds,
        events,
        gaps,
        fingerprints,
        samples,
        fold: Checkpoint {
            grants,
            live,
            pending,
            settled,
            sections,
            rewound,
        },
        times,
        failed,
    })
}

/// The section `tag`, a bitmap of one bit an envelope (`n` of them, no bit past them).
fn bitmap_section(
    raw: &Arc<Vec<u8>>,
    r: &mut Reader<'_>,
    tag: &[u8; 4],
    n: usize,
) -> Result<Slab, Invalid> {
    let bits = Slab::of(raw, r.section(tag)?.bytes);
    let past_n = bits
        .bytes()
        .last()
        .map_or(0, |&b| if n.is_multiple_of(8) { 0 } else { b >> (n % 8) });
    if bits.len() != n.div_ceil(8) || past_n != 0 {
        return Err(Invalid::new(format!(
            "{} does not hold one bit an envelope",
            String::from_utf8_lossy(tag)
        )));
    }
    Ok(bits)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::file_io::LineRef;

    const SECRET: SipKey = SipKey { k0: 41, k1: 42 };

    fn example() -> IndexData {
        IndexData {
            key: SipKey { k0: 7, k1: 9 },
            identity: Identity {
                dev: 1,
                ino: 2,
                size: 100,
                mtime_ns: -3,
                ctime_ns: 4,
            },
            end: 90,
            lines: 5,
            head_crc: 11,
            last_crc: 12,
            kind_table: vec![
                Kind {
                    type_: "session-meta".into(),
                    role: None,
                },
                Kind {
                    type_: "message".into(),
                    role: Some("user".into()),
                },
            ],
            kinds: Slab::owned(vec![0, 1, OTHER_KIND]),
            events: Lines::from(vec![
                LineRef { offset: 0, len: 20 },
                LineRef {
                    offset: 22,
                    len: 30,
                },
                LineRef {
                    offset: 53,
                    len: 36,
                },
            ]),
            gaps: vec![Gap {
                event: 1,
                bytes: 1,
                lines: 1,
            }],
            fingerprints: Slab::owned([1u32, 2, 3].iter().flat_map(|f| f.to_le_bytes()).collect()),
            samples: vec![(0, 5), (1, 6), (2, 7)],
            fold: Checkpoint {
                grants: Some(2),
                live: vec![(1, None), (2, Some(2))],
                pending: vec![(2, true)],
                settled: Slab::owned(crate::index::slab::bitmap(3, [0, 2].into_iter())),
                sections: vec![(77, 1)],
                rewound: vec![(1, 2)],
            },
            times: Slab::owned((-1i64).to_le_bytes().to_vec()),
            failed: Slab::owned(crate::index::slab::bitmap(3, [2].into_iter())),
        }
    }

    #[test]
    fn bytes_read_back_as_they_were_written() {
        let index = example();
        let bytes = encode(&index, SECRET);
        assert_eq!(decode_bytes(&bytes, SECRET), Ok(index.clone()));
        assert_eq!(index.line_numbers(), vec![1, 3, 4]);
        assert_eq!(index.last_line(), 4);
    }

    #[test]
    fn every_damage_is_refused_without_a_panic() {
        let bytes = encode(&example(), SECRET);
        for cut in 0..bytes.len() {
            assert!(decode_bytes(&bytes[..cut], SECRET).is_err(), "cut at {cut}");
        }
        for i in 0..bytes.len() {
            for bit in 0..8 {
                let mut bad = bytes.clone();
                bad[i] ^= 1 << bit;
                assert!(decode_bytes(&bad, SECRET).is_err(), "flip at {i}.{bit}");
            }
        }
    }

    /// Sealed again with the key (as only its owner can), a forged body is still
    /// refused where it does not add up, and never panics or over-allocates; sealed
    /// with another key, it is refused.
    #[test]
    fn forged_bodies_with_a_good_checksum_never_panic() {
        let bytes = encode(&example(), SECRET);
        let body = &bytes[..bytes.len() - 8];
        let mut state = 0x1234_5678_u64;
        for _ in 0..20000 {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let mut bad = body.to_vec();
            let at = (state >> 33) as usize % bad.len();
            bad[at] = (state >> 13) as u8;
            if state & 1 == 0 {
                bad.truncate(((state >> 40) as usize) % bad.len());
            }
            let sum = seal(SECRET, &bad);
            let mut other = bad.clone();
            bad.extend_from_slice(&sum.to_le_bytes());
            let _ = decode_bytes(&bad, SECRET);
            other.extend_from_slice(&seal(SipKey { k0: 1, k1: 1 }, &other).to_le_bytes());
            assert!(decode_bytes(&other, SECRET).is_err());
        }
    }

    #[test]
    fn another_version_is_refused_by_name() {
        let mut bytes = encode(&example(), SECRET);
        bytes[8] = 1;
        assert_eq!(
            decode_bytes(&bytes, SECRET),
            Err(Invalid(format!(
                "it is of format version 1, this version reads {VERSION}"
            )))
        );
    }

    #[test]
    fn samples_spread_from_the_first() {
        assert_eq!(sample_events(3).collect::<Vec<_>>(), vec![0, 1, 2]);
        let many: Vec<u64> = sample_events(1000).collect();
        assert_eq!(many.len(), 64);
        assert_eq!(many[0], 0);
        assert_eq!(many[1], 15);
        assert_eq!(*many.last().unwrap(), 984);
    }
}
