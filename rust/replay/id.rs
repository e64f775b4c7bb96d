//! Envelope ids: [`Id`], one without a heap allocation when it is short (the ids this
//! library writes are 36-byte UUIDs), and [`IdTable`], every envelope's id by its
//! place in the file (the duplicate-id check, the fold's references and
//! `Session.message_extra`'s lookups).

use std::borrow::Borrow;
use std::collections::hash_map::{Entry, RandomState};
use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasher, BuildHasherDefault, Hash, Hasher};

/// Longest id kept inline (the enum stays 40 bytes).
const INLINE: usize = 38;

#[derive(Clone)]
pub enum Id {
    Inline { len: u8, bytes: [u8; INLINE] },
    Heap(Box<str>),
}

impl Id {
    pub fn as_str(&self) -> &str {
        match self {
            Id::Inline { len, bytes } => {
                let used = bytes.get(..usize::from(*len)).unwrap_or_default();
                // SAFETY: `used` is a copy of a whole `&str` (see `From<&str>`), so it is
                // valid UTF-8.
                unsafe { std::str::from_utf8_unchecked(used) }
            }
            Id::Heap(s) => s,
        }
    }
}

impl Default for Id {
    fn default() -> Self {
        Id::Inline {
            len: 0,
            bytes: [0; INLINE],
        }
    }
}

impl From<&str> for Id {
    fn from(s: &str) -> Self {
        match u8::try_from(s.len()) {
            Ok(len) if s.len() <= INLINE => {
                let mut bytes = [0; INLINE];
                if let Some(dst) = bytes.get_mut(..s.len()) {
                    dst.copy_from_slice(s.as_bytes());
                }
                Id::Inline { len, bytes }
            }
            _ => Id::Heap(s.into()),
        }
    }
}

impl std::ops::Deref for Id {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

/// Hashed and compared as its text, so that a map keyed by `Id` is asked with a `&str`.
impl Hash for Id {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_str().hash(state)
    }
}

impl PartialEq for Id {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Id {}

impl Borrow<str> for Id {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

/// Every envelope's id, by its index in the fold's `events`.
///
/// The table a lookup probes holds an id's keyed hash (SipHash with this table's own
/// random keys: ids come from files, so their hashes cannot be chosen to collide)
/// and the index, 16 bytes a slot; the ids themselves are in one buffer, in file
/// order, read only to confirm a hit. A map keyed by the ids (48 bytes a slot) missed
/// the cache on most inserts once it outgrew it (1 GB: ~530,000 ids).
#[derive(Debug, Default)]
pub struct IdTable {
    keys: RandomState,
    /// Keyed hash -> the first envelope whose id has it.
    first: HashMap<u64, usize, BuildHasherDefault<Prehashed>>,
    /// Every id's bytes, one after another; `ends[i]` is where the i-th ends.
    bytes: Vec<u8>,
    ends: Vec<usize>,
    /// Ids whose hash an earlier, different id has (exact, however rare).
    collided: HashMap<Id, usize>,
}

impl IdTable {
    /// A table for about `n` ids.
    pub fn with_capacity(n: usize) -> Self {
        IdTable {
            first: HashMap::with_capacity_and_hasher(n, Default::default()),
            bytes: Vec::with_capacity(n.saturating_mul(36)),
            ends: Vec::with_capacity(n),
            ..Default::default()
        }
    }

    /// How many ids it holds.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Add the id of the next envelope (index `len()`), or answer the index of the
    /// earlier envelope that has it (nothing is added then).
    pub fn push(&mut self, id: &str) -> Result<(), usize> {
        self.push_hashed(id, self.keys.hash_one(id))
    }

    /// The index of the envelope with this id.
    pub fn get(&self, id: &str) -> Option<usize> {
        self.get_hashed(id, self.keys.hash_one(id))
    }

    fn push_hashed(&mut self, id: &str, hash: u64) -> Result<(), usize> {
        let next = self.ends.len();
        match self.first.entry(hash) {
            Entry::Vacant(slot) => {
                slot.insert(next);
            }
            Entry::Occupied(hit) => {
                let earlier = *hit.get();
                if id_in(&self.bytes, &self.ends, earlier) == Some(id.as_bytes()) {
                    return Err(earlier);
                }
                match self.collided.entry(Id::from(id)) {
                    Entry::Occupied(hit) => return Err(*hit.get()),
                    Entry::Vacant(slot) => {
                        slot.insert(next);
                    }
                }
            }
        }
        self.bytes.extend_from_slice(id.as_bytes());
        self.ends.push(self.bytes.len());
        Ok(())
    }

    fn get_hashed(&self, id: &str, hash: u64) -> Option<usize> {
        let at = *self.first.get(&hash)?;
        if id_in(&self.bytes, &self.ends, at) == Some(id.as_bytes()) {
            Some(at)
        } else {
            self.collided.get(id).copied()
        }
    }
}

/// The bytes of the `at`-th id of an [`IdTable`]'s buffer.
fn id_in<'a>(bytes: &'a [u8], ends: &[usize], at: usize) -> Option<&'a [u8]> {
    let start = match at.checked_sub(1) {
        Some(before) => *ends.get(before)?,
        None => 0,
    };
    bytes.get(start..*ends.get(at)?)
}

/// The hasher of a map whose keys are hashes already (keyed SipHash outputs).
#[derive(Debug, Default)]
pub struct Prehashed(u64);

impl Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `u64` keys are hashed here; anything else still gets a spread value.
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_and_long_ids_read_back_and_look_up_by_str() {
        let long = "x".repeat(INLINE + 1);
        let ids = [
            "",
            "a",
            "019fe695-bac8-7775-af1f-92e460415a3a",
            "é😀",
            &long[1..],
            &long,
        ];
        let map: HashMap<Id, usize> = ids
            .iter()
            .enumerate()
            .map(|(i, s)| (Id::from(*s), i))
            .collect();
        for (i, s) in ids.iter().enumerate() {
            assert_eq!(Id::from(*s).as_str(), *s);
            assert_eq!(map.get(*s), Some(&i));
        }
        assert!(matches!(Id::from(long.as_str()), Id::Heap(_)));
        assert!(matches!(Id::from(&long[1..]), Id::Inline { .. }));
        assert_eq!(std::mem::size_of::<Id>(), 40);
    }

    #[test]
    fn the_table_finds_every_id_and_refuses_a_second_one() {
        let mut table = IdTable::with_capacity(4);
        let ids: Vec<String> = (0..5000).map(|i| format!("id-{i}")).collect();
        for (i, id) in ids.iter().enumerate() {
            assert_eq!(table.push(id), Ok(()));
            assert_eq!(table.len(), i + 1);
        }
        for (i, id) in ids.iter().enumerate() {
            assert_eq!(table.get(id), Some(i));
            assert_eq!(table.push(id), Err(i));
        }
        assert_eq!(table.get("id-5000"), None);
        assert_eq!(table.get(""), None);
        assert_eq!(table.len(), 5000);
    }

    #[test]
    fn ids_whose_hashes_collide_stay_apart() {
        // A table whose keys hash everything alike: every id after the first collides.
        let mut table = IdTable::default();
        let same = |_: &str| 7u64;
        for (i, id) in [
            "a",
            "b",
            "",
            "é😀",
            "a-long-one-past-the-inline-size-of-an-id-1234",
        ]
        .iter()
        .enumerate()
        {
            assert_eq!(table.push_hashed(id, same(id)), Ok(()));
            assert_eq!(table.get_hashed(id, same(id)), Some(i));
        }
        assert_eq!(table.push_hashed("b", 7), Err(1));
        assert_eq!(table.push_hashed("a", 7), Err(0));
        assert_eq!(table.get_hashed("c", 7), None);
        assert_eq!(table.get_hashed("a", 8), None);
    }
}
