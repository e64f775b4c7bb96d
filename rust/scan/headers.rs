//! The `id`, `type` and `ts` of every envelope a scan found, kept in memory so
//! that iterating a peek builds its Events without reading every line of the file
//! a second time.
//!
//! The scan validated each line and decoded these three strings already; keeping
//! them costs their bytes plus 8 an envelope, and types (few distinct ones) are
//! kept once. The common shapes are kept packed (the project's ids, canonical
//! lowercase UUIDs, in 16 bytes instead of 36; timestamps, made of digits and
//! `-:.TZ+`, at two characters a byte): 38 bytes an envelope instead of 71. An
//! envelope whose header does not fit (a string of 32 KiB or more) is marked as not
//! kept, and the reader reads its line as before.

/// Distinct types kept by index; a type seen after these is kept in the arena.
const MAX_TYPES: usize = 64;

/// `Mark::type_` of a type kept in the text arena after the envelope's strings.
const INLINE: u16 = u16::MAX;

/// `Mark::type_` of an envelope whose header was not kept.
const NOT_KEPT: u16 = u16::MAX - 1;

/// Set in `Mark::id` or `Mark::ts` when that string is packed; the other bits
/// are its length.
const PACKED: u16 = 0x8000;

/// Strings this long or longer are not kept.
const TOO_LONG: usize = PACKED as usize;

const NOT_KEPT_MARK: Mark = Mark {
    id: 0,
    ts: 0,
    type_: NOT_KEPT,
    type_len: 0,
};

/// One envelope's header: its id and ts follow the previous envelope's in
/// `Headers::packed` (when packed) or `Headers::text` (as they are), then its type
/// in `text` when `type_` is `INLINE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Mark {
    id: u16,
    ts: u16,
    type_: u16,
    type_len: u16,
}

/// The headers of a scan's envelopes, in the order it found them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Headers {
    text: String,
    packed: Vec<u8>,
    marks: Vec<Mark>,
    types: Vec<Box<str>>,
}

/// One envelope's header, as the scan decoded it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header<'a> {
    pub id: &'a str,
    pub ts: &'a str,
    pub type_: TypeName<'a>,
}

/// An envelope's type: an index into `Headers::types`, or its text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TypeName<'a> {
    Known(usize),
    Other(&'a str),
}

/// A reading position in a `Headers`: the next envelope and where its strings start.
#[derive(Clone, Copy, Debug, Default)]
pub struct Cursor {
    next: usize,
    text_at: usize,
    packed_at: usize,
}

/// What a packed id's nibbles stand for (lowercase hex digits).
const HEX_ALPHABET: &[u8; 16] = b"0123456789abcdef";

/// What a packed timestamp's nibbles stand for.
const TS_ALPHABET: &[u8; 16] = b"0123456789-:.TZ+";

/// Each byte's nibble in `alphabet`, or `NO_NIBBLE`.
const fn nibbles(alphabet: &[u8; 16]) -> [u8; 256] {
    let mut table = [NO_NIBBLE; 256];
    let mut i = 0;
    while i < 16 {
        table[alphabet[i] as usize] = i as u8;
        i += 1;
    }
    table
}

/// The two characters each byte packs, in `alphabet`.
const fn pairs(alphabet: &[u8; 16]) -> [[u8; 2]; 256] {
    let mut table = [[0u8; 2]; 256];
    let mut i = 0;
    while i < 256 {
        table[i] = [alphabet[i >> 4], alphabet[i & 15]];
        i += 1;
    }
    table
}

const NO_NIBBLE: u8 = 0xff;
const HEX_NIBBLES: [u8; 256] = nibbles(HEX_ALPHABET);
const TS_NIBBLES: [u8; 256] = nibbles(TS_ALPHABET);
const HEX_PAIRS: [[u8; 2]; 256] = pairs(HEX_ALPHABET);
const TS_PAIRS: [[u8; 2]; 256] = pairs(TS_ALPHABET);

/// Where a canonical UUID's dashes are (`8-4-4-4-12` hex digits), and its length.
const UUID_DASHES: [usize; 4] = [8, 13, 18, 23];
const UUID_LEN: usize = 36;

/// Longest timestamp kept packed (longer ones are kept as they are).
const MAX_PACKED_TS: usize = 64;

/// The 16 bytes of a canonical lowercase UUID.
fn pack_uuid(id: &str) -> Option<[u8; 16]> {
    let text: &[u8; UUID_LEN] = id.as_bytes().try_into().ok()?;
    if UUID_DASHES.iter().any(|&i| text[i] != b'-') {
        return None;
    }
    let mut hex = [0u8; 32];
    hex[..8].copy_from_slice(&text[..8]);
    hex[8..12].copy_from_slice(&text[9..13]);
    hex[12..16].copy_from_slice(&text[14..18]);
    hex[16..20].copy_from_slice(&text[19..23]);
    hex[20..].copy_from_slice(&text[24..]);
    let mut out = [0u8; 16];
    let mut bad = 0;
    for (byte, pair) in out.iter_mut().zip(hex.chunks_exact(2)) {
        let (high, low) = (nibble(&HEX_NIBBLES, pair, 0), nibble(&HEX_NIBBLES, pair, 1));
        bad |= high | low;
        *byte = high << 4 | (low & 15);
    }
    (bad & 0xf0 == 0).then_some(out)
}

/// The nibble of `pair[k]` in `table` (`NO_NIBBLE` if it has none; 0 past the end).
fn nibble(table: &[u8; 256], pair: &[u8], k: usize) -> u8 {
    pair.get(k).map_or(0, |&c| table[usize::from(c)])
}

/// The canonical text of a packed UUID (`packed`: its 16 bytes) into `out`.
fn unpack_uuid(packed: &[u8], out: &mut [u8; UUID_LEN]) {
    let mut hex = [0u8; 32];
    for (pair, &byte) in hex.chunks_exact_mut(2).zip(packed) {
        pair.copy_from_slice(&HEX_PAIRS[usize::from(byte)]);
    }
    out[..8].copy_from_slice(&hex[..8]);
    out[9..13].copy_from_slice(&hex[8..12]);
    out[14..18].copy_from_slice(&hex[12..16]);
    out[19..23].copy_from_slice(&hex[16..20]);
    out[24..].copy_from_slice(&hex[20..]);
    for dash in UUID_DASHES {
        out[dash] = b'-';
    }
}

/// `ts` two characters a byte, and how many bytes that takes, when it is not longer
/// than `MAX_PACKED_TS` and every byte is one of `TS_ALPHABET`.
fn pack_ts(ts: &str) -> Option<([u8; MAX_PACKED_TS / 2], usize)> {
    let text = ts.as_bytes();
    if text.len() > MAX_PACKED_TS {
        return None;
    }
    let mut out = [0u8; MAX_PACKED_TS / 2];
    let mut bad = 0;
    for (byte, pair) in out.iter_mut().zip(text.chunks(2)) {
        let (high, low) = (nibble(&TS_NIBBLES, pair, 0), nibble(&TS_NIBBLES, pair, 1));
        bad |= high | low;
        *byte = high << 4 | (low & 15);
    }
    (bad & 0xf0 == 0).then_some((out, text.len().div_ceil(2)))
}

/// The characters of a timestamp packed in `packed` into `out` (two a byte; an odd
/// count's last is padding).
fn unpack_ts(packed: &[u8], out: &mut [u8; MAX_PACKED_TS]) {
    for (pair, &byte) in out.chunks_exact_mut(2).zip(packed) {
        pair.copy_from_slice(&TS_PAIRS[usize::from(byte)]);
    }
}

/// Where `Headers::next` unpacks a packed id and timestamp.
#[derive(Clone, Debug)]
pub struct Unpacked {
    id: [u8; UUID_LEN],
    ts: [u8; MAX_PACKED_TS],
}

impl Default for Unpacked {
    fn default() -> Self {
        Unpacked {
            id: [0; UUID_LEN],
            ts: [0; MAX_PACKED_TS],
        }
    }
}

/// Unpacked bytes as text: they all come from the ASCII alphabets above (or are
/// the zeros an `Unpacked` starts with).
fn ascii(bytes: &[u8]) -> &str {
    debug_assert!(bytes.is_ascii());
    // SAFETY: every byte written to an `Unpacked` is one of `HEX_ALPHABET`,
    // `TS_ALPHABET` or `-` (`unpack_uuid`, `unpack_ts`), and it starts zeroed: all
    // ASCII, so any slice of it is UTF-8.
    unsafe { std::str::from_utf8_unchecked(bytes) }
}

/// The bytes a string of `mark` (`Mark::id` or `Mark::ts`) takes in its arena.
fn stored_len(mark: u16, is_id: bool) -> usize {
    let len = usize::from(mark & !PACKED);
    match (mark & PACKED != 0, is_id) {
        (false, _) => len,
        (true, true) => 16,
        (true, false) => len.div_ceil(2),
    }
}

impl Headers {
    /// Keep the next envelope's header.
    pub fn push(&mut self, id: &str, type_: &str, ts: &str) {
        let known = self.types.iter().position(|t| **t == *type_).or_else(|| {
            (self.types.len() < MAX_TYPES).then(|| {
                self.types.push(type_.into());
                self.types.len() - 1
            })
        });
        let inline_len = if known.is_some() { 0 } else { type_.len() };
        if id.len() >= TOO_LONG || ts.len() >= TOO_LONG || inline_len >= TOO_LONG {
            self.marks.push(NOT_KEPT_MARK);
            return;
        }
        // Each length is below `TOO_LONG` (2^15): the casts keep it whole.
        let mut mark = Mark {
            id: id.len() as u16,
            ts: ts.len() as u16,
            // `known` < MAX_TYPES, far below `NOT_KEPT`.
            type_: known.map_or(INLINE, |i| i as u16),
            type_len: inline_len as u16,
        };
        match pack_uuid(id) {
            Some(bytes) => {
                self.packed.extend_from_slice(&bytes);
                mark.id |= PACKED;
            }
            None => self.text.push_str(id),
        }
        match pack_ts(ts) {
            Some((bytes, len)) => {
                self.packed
                    .extend_from_slice(bytes.get(..len).unwrap_or_default());
                mark.ts |= PACKED;
            }
            None => self.text.push_str(ts),
        }
        if known.is_none() {
            self.text.push_str(type_);
        }
        self.marks.push(mark);
    }

    /// Envelopes (kept or not) so far.
    pub fn len(&self) -> usize {
        self.marks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.marks.is_empty()
    }

    /// The distinct types that `TypeName::Known` indexes.
    pub fn types(&self) -> &[Box<str>] {
        &self.types
    }

    /// `later`'s envelopes after these (the second half of a two-thread scan).
    pub fn append(&mut self, later: &Headers) {
        // Usually each of `later`'s types is one of these or fits beside them: the
        // arenas go over in one copy each and only the type indices change.
        let mut remap = Vec::with_capacity(later.types.len());
        for type_ in &later.types {
            match self.types.iter().position(|t| t == type_) {
                Some(i) => remap.push(i as u16),
                None if self.types.len() < MAX_TYPES => {
                    self.types.push(type_.clone());
                    remap.push((self.types.len() - 1) as u16);
                }
                None => break,
            }
        }
        if remap.len() == later.types.len() {
            self.text.push_str(&later.text);
            self.packed.extend_from_slice(&later.packed);
            self.marks.extend(later.marks.iter().map(|&mark| Mark {
                type_: match mark.type_ {
                    INLINE | NOT_KEPT => mark.type_,
                    known => remap.get(usize::from(known)).copied().unwrap_or(NOT_KEPT),
                },
                ..mark
            }));
            return;
        }
        let (mut cursor, mut scratch) = (Cursor::default(), Unpacked::default());
        for _ in 0..later.len() {
            match later.next(&mut cursor, &mut scratch) {
                Some(h) => self.push(h.id, later.type_text(h.type_), h.ts),
                None => self.marks.push(NOT_KEPT_MARK),
            }
        }
    }

    /// Every envelope's `(id, type, ts)` (None where not kept), for checks.
    pub fn entries(&self) -> Vec<Option<(String, String, String)>> {
        let (mut cursor, mut scratch) = (Cursor::default(), Unpacked::default());
        (0..self.len())
            .map(|_| {
                let h = self.next(&mut cursor, &mut scratch)?;
                let type_ = self.type_text(h.type_).to_string();
                Some((h.id.to_string(), type_, h.ts.to_string()))
            })
            .collect()
    }

    /// The text of `type_` (empty for an index that is not one of `types`).
    pub fn type_text<'a>(&'a self, type_: TypeName<'a>) -> &'a str {
        match type_ {
            TypeName::Known(i) => self.types.get(i).map_or("", |t| t),
            TypeName::Other(t) => t,
        }
    }

    /// The header of the envelope at `cursor` (None when it was not kept, or past
    /// the last), and the cursor moved to the next envelope. Packed strings are
    /// unpacked into `scratch`.
    pub fn next<'a>(
        &'a self,
        cursor: &mut Cursor,
        scratch: &'a mut Unpacked,
    ) -> Option<Header<'a>> {
        let mark = *self.marks.get(cursor.next)?;
        let (id_len, ts_len) = (stored_len(mark.id, true), stored_len(mark.ts, false));
        let (id_packed, ts_packed) = (mark.id & PACKED != 0, mark.ts & PACKED != 0);
        let (mut text_at, mut packed_at) = (cursor.text_at, cursor.packed_at);
        let mut take = |packed: bool, len: usize| {
            let at = if packed { &mut packed_at } else { &mut text_at };
            let span = (*at, *at + len);
            *at += len;
            span
        };
        let id_span = take(id_packed, id_len);
        let ts_span = take(ts_packed, ts_len);
        let type_span = take(false, usize::from(mark.type_len));
        cursor.next += 1;
        cursor.text_at = text_at;
        cursor.packed_at = packed_at;
        if mark.type_ == NOT_KEPT {
            return None;
        }
        let id = match id_packed {
            true => {
                unpack_uuid(self.packed.get(id_span.0..id_span.1)?, &mut scratch.id);
                ascii(&scratch.id)
            }
            false => self.text.get(id_span.0..id_span.1)?,
        };
        let ts = match ts_packed {
            true => {
                unpack_ts(self.packed.get(ts_span.0..ts_span.1)?, &mut scratch.ts);
                let chars = usize::from(mark.ts & !PACKED);
                ascii(scratch.ts.get(..chars)?)
            }
            false => self.text.get(ts_span.0..ts_span.1)?,
        };
        let type_ = match mark.type_ {
            INLINE => TypeName::Other(self.text.get(type_span.0..type_span.1)?),
            known => TypeName::Known(usize::from(known)),
        };
        Some(Header { id, ts, type_ })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(h: &Headers) -> Vec<Option<(String, String, String)>> {
        h.entries()
    }

    fn entry(id: &str, type_: &str, ts: &str) -> Option<(String, String, String)> {
        Some((id.into(), type_.into(), ts.into()))
    }

    #[test]
    fn keeps_what_it_was_given_in_order() {
        let mut h = Headers::default();
        let long = "x".repeat(TOO_LONG);
        let mut want = Vec::new();
        for i in 0..MAX_TYPES + 5 {
            let (id, type_, ts) = (format!("é{i}"), format!("t{}", i % (MAX_TYPES + 3)), "🕐");
            let id = if i % 3 == 0 {
                format!("019fe695-bc7d-7950-84ff-6ad931c5{i:04}")
            } else {
                id
            };
            let ts = if i % 2 == 0 {
                "2026-08-09T13:00:55.654276Z"
            } else {
                ts
            };
            h.push(&id, &type_, ts);
            want.push(entry(&id, &type_, ts));
            if i % 10 == 0 {
                h.push(&long, "t0", "ts");
                want.push(None);
                h.push("a", "t1", "");
                want.push(entry("a", "t1", ""));
            }
        }
        h.push("b", &long, "ts");
        want.push(None);
        assert_eq!(h.types().len(), MAX_TYPES);
        assert_eq!(all(&h), want);
        let (mut cursor, mut scratch) = (Cursor::default(), Unpacked::default());
        for _ in 0..h.len() {
            h.next(&mut cursor, &mut scratch);
        }
        assert_eq!(h.next(&mut cursor, &mut scratch), None);
    }

    #[test]
    fn packed_strings_come_back_as_they_were() {
        let ids = [
            "019fe695-bc7d-7950-84ff-6ad931c5330f",
            "00000000-0000-0000-0000-000000000000",
            "ffffffff-ffff-ffff-ffff-ffffffffffff",
            "019FE695-bc7d-7950-84ff-6ad931c5330f",
            "019fe695-bc7d-7950-84ff-6ad931c5330g",
            "019fe695bc7d-7950-84ff-6ad931c5330f-",
            "019fe695-bc7d-7950-84ff-6ad931c5330",
            "019fe695-bc7d-7950-84ff-6ad931c5330ff",
            "019fe695-bc7d-7950-84ff-6ad931c5330\u{e9}",
            "",
            "x",
        ];
        let stamps = [
            "2026-08-09T13:00:55.654276Z",
            "2026-08-09T13:00:55.65427Z",
            "2026-08-09T13:00:55+00:00",
            "",
            "7",
            "2026-08-09 13:00:55",
            "2026-08-09t13:00:55z",
            "\u{1f550}",
        ];
        let (at_most, past) = ("1".repeat(MAX_PACKED_TS), "2".repeat(MAX_PACKED_TS + 1));
        let mut h = Headers::default();
        let mut want = Vec::new();
        for id in ids {
            for ts in stamps.into_iter().chain([&*at_most, &*past]) {
                h.push(id, "message", ts);
                want.push(entry(id, "message", ts));
            }
        }
        assert_eq!(all(&h), want);
        let mut small = Headers::default();
        small.push(ids[0], "message", stamps[0]);
        assert_eq!((small.packed.len(), small.text.len()), (16 + 14, 0));
    }

    #[test]
    fn appended_halves_read_as_one() {
        let long = "y".repeat(40_000);
        // Types in common, new ones in the second half, more than are kept by index
        // in either or both halves.
        for (kinds, stride) in [(3, 1), (10, 7), (70, 1), (90, 7), (200, 3)] {
            for split in [0, 1, 80, 150, 200] {
                let mut one = Headers::default();
                let (mut first, mut second) = (Headers::default(), Headers::default());
                for i in 0..200 {
                    let (id, type_) = (format!("id{i}"), format!("type{}", (i * stride) % kinds));
                    let id = match i % 3 {
                        _ if i % 33 == 0 => long.clone(),
                        0 => format!("019fe695-bc7d-7950-84ff-6ad931c5{i:04}"),
                        _ => id,
                    };
                    let ts = if i % 2 == 0 {
                        "2026-08-09T13:00:55.5Z"
                    } else {
                        "ts"
                    };
                    one.push(&id, &type_, ts);
                    let half = if i < split { &mut first } else { &mut second };
                    half.push(&id, &type_, ts);
                }
                first.append(&second);
                assert_eq!(all(&first), all(&one), "{kinds} {stride} {split}");
            }
        }
    }
}
