//! Bytes of an index, shared without a copy: a decoded index keeps the file's bytes
//! once, and its big sections (kinds, lengths, fingerprints, settled operations) are
//! ranges of them, read where they lie.

use std::fmt;
use std::sync::Arc;

#[derive(Clone, Default)]
pub struct Slab {
    raw: Arc<Vec<u8>>,
    start: usize,
    end: usize,
}

impl Slab {
    /// Bytes of their own.
    pub fn owned(bytes: Vec<u8>) -> Self {
        let end = bytes.len();
        Slab {
            raw: Arc::new(bytes),
            start: 0,
            end,
        }
    }

    /// The part of `raw` that `part` (a slice of it) is; empty if it is not one.
    pub fn of(raw: &Arc<Vec<u8>>, part: &[u8]) -> Self {
        let base = raw.as_ptr() as usize;
        let at = (part.as_ptr() as usize).wrapping_sub(base);
        let end = at.wrapping_add(part.len());
        if at > raw.len() || end > raw.len() || end < at {
            return Slab::default();
        }
        Slab {
            raw: raw.clone(),
            start: at,
            end,
        }
    }

    #[inline]
    pub fn bytes(&self) -> &[u8] {
        self.raw.get(self.start..self.end).unwrap_or_default()
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.end - self.start
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `i`-th little-endian `u32` of the bytes (fingerprints).
    #[inline]
    pub fn u32_at(&self, i: usize) -> Option<u32> {
        let at = i.checked_mul(4)?;
        let b = self.bytes().get(at..at + 4)?;
        Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// Every little-endian `u32` of the bytes, in order.
    pub fn u32s(&self) -> impl Iterator<Item = u32> + '_ {
        le_u32s(self.bytes())
    }

    /// Whether bit `i` is set (bit `i % 8` of byte `i / 8`: a bitmap).
    #[inline]
    pub fn bit(&self, i: usize) -> bool {
        self.bytes()
            .get(i / 8)
            .is_some_and(|b| b & (1 << (i % 8)) != 0)
    }
}

impl PartialEq for Slab {
    fn eq(&self, other: &Self) -> bool {
        self.bytes() == other.bytes()
    }
}

impl Eq for Slab {}

impl fmt::Debug for Slab {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Slab({} bytes)", self.len())
    }
}

/// A bitmap of `n` bits with the bits `set` set (each below `n`).
pub fn bitmap(n: usize, set: impl Iterator<Item = usize>) -> Vec<u8> {
    let mut out = vec![0u8; n.div_ceil(8)];
    for i in set {
        if let Some(b) = out.get_mut(i / 8) {
            *b |= 1 << (i % 8);
        }
    }
    out
}

/// Every little-endian `u32` of `bytes`, in order (a trailing part of one left out).
pub fn le_u32s(bytes: &[u8]) -> impl Iterator<Item = u32> + '_ {
    bytes
        .chunks_exact(4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}
