//! Where every envelope's line is, as a load through a side index holds it: the indexed
//! envelopes as the index stores them (a varint length each, and the gaps), decoded on
//! access; the envelopes read since as plain [`LineRef`]s.
//!
//! A 10 GB transcript has 5.3 million envelopes: decoding them all into `LineRef`s took
//! a load 50 ms and 85 MB of fresh pages, where a load needs a few hundred of them and
//! `events` a few at a time. A mark every [`STEP`] envelopes (one pass over the lengths,
//! which also checks them) makes any one a decode of at most `STEP` lengths.

use std::fmt;
use std::sync::Arc;

use crate::file_io::LineRef;
use crate::index::invalid::Invalid;
use crate::index::slab::Slab;

/// Envelopes between two marks.
const STEP: usize = 64;

/// Where an envelope does not start right after the line before it: the bytes and
/// lines (blank ones) between.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Gap {
    pub event: u64,
    pub bytes: u64,
    pub lines: u64,
}

/// The indexed envelopes' lines, packed.
#[derive(Debug, Default)]
pub struct Packed {
    /// The LENS section: a varint length a line.
    lens: Slab,
    n: usize,
    gaps: Vec<Gap>,
    /// For envelope `k * STEP`: where its length starts in `lens`, where its line starts
    /// if no gap comes before it, and the first gap at or after it.
    marks: Vec<(usize, u64, usize)>,
    last: Option<LineRef>,
    /// The last envelope's line number.
    last_line: u64,
}

/// Decode one varint at `lens[*at..]`.
#[inline]
fn varint(lens: &[u8], at: &mut usize) -> Result<u64, Invalid> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *lens
            .get(*at)
            .ok_or_else(|| Invalid("LENS holds fewer lengths than envelopes".into()))?;
        *at += 1;
        let bits = u64::from(b & 0x7f);
        if shift == 63 && bits > 1 {
            return Err(Invalid("a number overflows 64 bits".into()));
        }
        v |= bits << shift;
        if b & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err(Invalid("a number overflows 64 bits".into()))
}

impl Packed {
    /// The `n` lines of `lens` and `gaps`, every line and its `\n` inside `[0, end)`.
    pub fn new(slab: Slab, n: usize, gaps: Vec<Gap>, end: u64) -> Result<Self, Invalid> {
        let lens = slab.bytes();
        // A length takes a byte at least: `n` of them fit in the section or it is
        // refused before anything is allocated.
        if n > lens.len() {
            return Err(Invalid("LENS holds fewer lengths than envelopes".into()));
        }
        let mut marks = Vec::with_capacity(n / STEP + 1);
        let (mut at, mut pos, mut line, mut g) = (0usize, 0u64, 0u64, 0usize);
        let mut next_gap = gaps.first().map_or(u64::MAX, |x| x.event);
        let mut last = None;
        for e in 0..n {
            if e % STEP == 0 {
                marks.push((at, pos, g));
            }
            // Lines of 128 bytes to 16 KiB (most of them) take two bytes: read here, not
            // by `varint`'s loop: the pass over 5.3 million at 10 GB took 15 ms, now 10.
            let len = match (lens.get(at), lens.get(at + 1)) {
                (Some(&b), _) if b < 0x80 => {
                    at += 1;
                    u64::from(b)
                }
                (Some(&b0), Some(&b1)) if b1 < 0x80 => {
                    at += 2;
                    u64::from(b0 & 0x7f) | u64::from(b1) << 7
                }
                _ => varint(lens, &mut at)?,
            };
            line += 1;
            if e as u64 == next_gap {
                if let Some(gap) = gaps.get(g) {
                    pos = pos.saturating_add(gap.bytes);
                    line = line.saturating_add(gap.lines);
                }
                g += 1;
                next_gap = gaps.get(g).map_or(u64::MAX, |x| x.event);
            }
            last = Some(LineRef { offset: pos, len });
            pos = pos
                .checked_add(len)
                .and_then(|p| p.checked_add(1))
                .filter(|&p| p <= end)
                .ok_or_else(|| Invalid("a line ends past the indexed end".into()))?;
        }
        if at != lens.len() {
            return Err(Invalid("LENS has bytes after its end".into()));
        }
        Ok(Packed {
            lens: slab.clone(),
            n,
            gaps,
            marks,
            last,
            last_line: line,
        })
    }

    fn get(&self, e: usize) -> Option<LineRef> {
        if e >= self.n {
            return None;
        }
        let &(mut at, mut pos, mut g) = self.marks.get(e / STEP)?;
        for k in (e / STEP * STEP)..=e {
            let len = varint(self.lens.bytes(), &mut at).ok()?;
            if let Some(gap) = self.gaps.get(g).filter(|gap| gap.event == k as u64) {
                pos = pos.saturating_add(gap.bytes);
                g += 1;
            }
            if k == e {
                return Some(LineRef { offset: pos, len });
            }
            pos = pos.saturating_add(len).saturating_add(1);
        }
        None
    }

    /// The LENS section's bytes, as the index holds them.
    pub fn lens(&self) -> &[u8] {
        self.lens.bytes()
    }

    pub fn gaps(&self) -> &[Gap] {
        &self.gaps
    }

    pub fn last_line(&self) -> u64 {
        self.last_line
    }
}

/// Every envelope's line, in file order: the indexed ones (packed), then the others.
#[derive(Clone, Default)]
pub struct Lines {
    indexed: Option<Arc<Packed>>,
    read: Vec<LineRef>,
}

impl Lines {
    pub fn with_capacity(n: usize) -> Self {
        Lines {
            indexed: None,
            read: Vec::with_capacity(n),
        }
    }

    /// The lines of an index, packed.
    pub fn packed(packed: Packed) -> Self {
        Lines {
            indexed: Some(Arc::new(packed)),
            read: Vec::new(),
        }
    }

    /// How many of the lines are the index's.
    pub fn indexed_count(&self) -> usize {
        self.indexed.as_ref().map_or(0, |p| p.n)
    }

    /// The index's lines, packed (None: all were read).
    pub fn indexed(&self) -> Option<&Packed> {
        self.indexed.as_deref()
    }

    /// The lines read after the index's.
    pub fn read(&self) -> &[LineRef] {
        &self.read
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.indexed_count() + self.read.len()
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    #[inline]
    pub fn push(&mut self, line: LineRef) {
        self.read.push(line);
    }

    pub fn get(&self, e: usize) -> Option<LineRef> {
        match &self.indexed {
            Some(p) if e < p.n => p.get(e),
            Some(p) => self.read.get(e - p.n).copied(),
            None => self.read.get(e).copied(),
        }
    }

    pub fn last(&self) -> Option<LineRef> {
        match self.read.last() {
            Some(&l) => Some(l),
            None => self.indexed.as_ref().and_then(|p| p.last),
        }
    }

    /// The lines from the `e`th on, in order: decoding starts at the mark before it.
    pub fn iter_from(&self, e: usize) -> impl Iterator<Item = LineRef> + '_ {
        let packed = self.indexed.as_deref().filter(|p| e < p.n).map(|p| {
            let first = e / STEP * STEP;
            // A mark is kept for every STEP-th envelope below `n` (Packed::new); without
            // one, `at` past the lengths ends the decode at once.
            let (at, pos, g) = p.marks.get(e / STEP).copied().unwrap_or((usize::MAX, 0, 0));
            PackedIter {
                p,
                e: first,
                at,
                pos,
                g,
            }
            .skip(e - first)
        });
        let read_from = e.saturating_sub(self.indexed_count());
        packed
            .into_iter()
            .flatten()
            .chain(self.read.iter().copied().skip(read_from))
    }

    /// Every line in order (the packed ones decoded as they come, in one pass).
    pub fn iter(&self) -> impl Iterator<Item = LineRef> + '_ {
        let packed = self.indexed.as_deref().map(|p| PackedIter {
            p,
            e: 0,
            at: 0,
            pos: 0,
            g: 0,
        });
        packed
            .into_iter()
            .flatten()
            .chain(self.read.iter().copied())
    }
}

/// The packed lines in order, each length decoded once.
struct PackedIter<'a> {
    p: &'a Packed,
    e: usize,
    at: usize,
    pos: u64,
    g: usize,
}

impl Iterator for PackedIter<'_> {
    type Item = LineRef;

    fn next(&mut self) -> Option<LineRef> {
        if self.e >= self.p.n {
            return None;
        }
        let len = varint(self.p.lens.bytes(), &mut self.at).ok()?;
        if let Some(gap) = self.p.gaps.get(self.g).filter(|g| g.event == self.e as u64) {
            self.pos = self.pos.saturating_add(gap.bytes);
            self.g += 1;
        }
        let line = LineRef {
            offset: self.pos,
            len,
        };
        self.pos = self.pos.saturating_add(len).saturating_add(1);
        self.e += 1;
        Some(line)
    }
}

impl From<Vec<LineRef>> for Lines {
    fn from(read: Vec<LineRef>) -> Self {
        Lines {
            indexed: None,
            read,
        }
    }
}

impl fmt::Debug for Lines {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl PartialEq for Lines {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for Lines {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_lines_read_back_at_random_and_in_order() {
        // 300 lines of varied lengths (some past one varint byte), blank lines between
        // some of them.
        let mut want = Vec::new();
        let mut lens = Vec::new();
        let mut gaps = Vec::new();
        let mut pos = 0u64;
        for e in 0..300u64 {
            let len = (e * 37) % 400;
            if e % 17 == 3 {
                gaps.push(Gap {
                    event: e,
                    bytes: e % 5 + 1,
                    lines: 1,
                });
                pos += e % 5 + 1;
            }
            want.push(LineRef { offset: pos, len });
            pos += len + 1;
            let mut v = len;
            while v >= 0x80 {
                lens.push((v as u8) | 0x80);
                v >>= 7;
            }
            lens.push(v as u8);
        }
        let slab = |b: &[u8]| Slab::owned(b.to_vec());
        let packed = Packed::new(slab(&lens), 300, gaps.clone(), pos).unwrap();
        assert_eq!(packed.last_line(), 300 + gaps.len() as u64);
        let lines = Lines::packed(packed);
        assert_eq!(lines.iter().collect::<Vec<_>>(), want);
        for e in [299, 0, 64, 63, 150, 3, 20] {
            assert_eq!(lines.get(e), Some(want[e]));
        }
        assert_eq!(lines.get(300), None);
        assert_eq!(lines.last(), want.last().copied());
        // Lines past the end, or too few lengths, are refused.
        assert!(Packed::new(slab(&lens), 300, gaps.clone(), pos - 1).is_err());
        assert!(Packed::new(slab(&lens), 301, gaps.clone(), pos).is_err());
        assert!(Packed::new(slab(&lens[..lens.len() - 1]), 300, gaps, pos).is_err());
        let mut more = Lines::packed(Packed::new(slab(&[]), 0, Vec::new(), 0).unwrap());
        more.push(LineRef { offset: 3, len: 4 });
        assert_eq!(more.len(), 1);
        assert_eq!(more.get(0), Some(LineRef { offset: 3, len: 4 }));
    }
}
