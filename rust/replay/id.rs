//! Envelope ids: [`Id`], one without a heap allocation when it is short (the ids this
//! library writes are 36-byte UUIDs), and [`IdTable`], every envelope's id by its
//! place in the file (the duplicate-id check, the fold's references and
//! `Session.message_extra`'s lookups).

use std::borrow::Borrow;
use std::fmt;
use std::hash::{Hash, Hasher};

use crate::index::hash::{siphash13, SipKey};
use crate::replay::narrow::Narrow;

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

/// The keys of the ids' hash: SipHash-1-3 with random keys, so that ids, which come
/// from files, cannot be chosen to collide. One set per replay: the threads that make
/// records hash their ids with it, and the table that holds them is built with it. A
/// side index keeps the key (`index::hash`): a replay resumed from it hashes with the
/// same one, and each id's hash is its fingerprint there too.
#[derive(Clone, Debug)]
pub struct IdKeys {
    key: SipKey,
    /// A test's keys that hash every id alike.
    #[cfg(test)]
    all_alike: bool,
}

impl Default for IdKeys {
    fn default() -> Self {
        Self::new()
    }
}

impl IdKeys {
    /// Random keys.
    pub fn new() -> Self {
        Self::with_key(SipKey::random())
    }

    /// The keys of a side index.
    pub fn with_key(key: SipKey) -> Self {
        IdKeys {
            key,
            #[cfg(test)]
            all_alike: false,
        }
    }

    pub fn key(&self) -> SipKey {
        self.key
    }

    /// The id's keyed hash.
    pub fn hash(&self, id: &str) -> u64 {
        self.hash_bytes(id.as_bytes())
    }

    pub fn hash_bytes(&self, id: &[u8]) -> u64 {
        #[cfg(test)]
        if self.all_alike {
            return 7;
        }
        siphash13(self.key, id)
    }
}

/// A slot of [`IdTable`]: 0 when empty, else the top 24 bits of the id's hash (a tag)
/// over its index plus one (the low [`INDEX_BITS`]).
const INDEX_BITS: u32 = 40;
const INDEX_MASK: u64 = (1 << INDEX_BITS) - 1;
/// The most ids a slot can index (2^40 - 1: far more than memory holds, the table's
/// `ends` alone would take 8 TiB); ids past it are looked up by a scan.
const SLOTTED_MAX: usize = INDEX_MASK as usize;
/// Slots a table has at least, once it holds an id.
const MIN_SLOTS: usize = 16;

/// Every envelope's id, by its index in the fold's `events`.
///
/// The table a lookup probes is one `u64` a slot (a tag from the id's keyed hash and
/// the index), open addressing with linear probing, at most 3/4 full; the ids
/// themselves are in one buffer, in file order, read only to confirm a tag's hit, so
/// ids whose hashes collide stay apart exactly. At 1 GB (~530,000 ids) the table
/// outgrows the cache: an insert is one slot's cache line, which the replay fetches
/// ahead ([`IdTable::prefetch`]).
#[derive(Debug)]
pub struct IdTable {
    keys: IdKeys,
    slots: Vec<u64>,
    /// Every id's bytes, one after another; `ends[i]` is where the i-th ends (as a
    /// `u32` while it fits: 4 bytes an envelope, 2 MB of a 1 GB transcript's 528,809).
    bytes: Vec<u8>,
    ends: Narrow,
    /// How many ids the slots index (the first ones; see [`SLOTTED_MAX`]).
    slotted_max: usize,
}

impl IdTable {
    /// A table for about `n` ids, hashed with `keys`. The id buffers get room for
    /// twice as many: room not written to is only address space, and a buffer that
    /// runs out is copied whole (see `Fold::for_size`).
    pub fn with_capacity(n: usize, keys: IdKeys) -> Self {
        let slots = if n == 0 { 0 } else { slots_for(n) };
        let room = n.saturating_mul(2);
        IdTable {
            keys,
            slots: empty_slots(slots),
            bytes: Vec::with_capacity(room.saturating_mul(36)),
            ends: Narrow::with_capacity(room),
            slotted_max: SLOTTED_MAX,
        }
    }

    /// The keys its ids are hashed with.
    pub fn keys(&self) -> &IdKeys {
        &self.keys
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
        self.push_hashed(id, self.keys.hash(id))
    }

    /// [`IdTable::push`] of an id whose hash is `hash`, made with this table's
    /// [`IdTable::keys`].
    pub fn push_hashed(&mut self, id: &str, hash: u64) -> Result<(), usize> {
        let next = self.ends.len();
        if next >= self.slotted_max {
            if let Some(earlier) = self.find(id, hash) {
                return Err(earlier);
            }
        } else {
            if (next + 1).saturating_mul(4) > self.slots.len().saturating_mul(3) {
                self.grow();
            }
            let empty = match self.probe(id, hash) {
                Probe::Found(earlier) => return Err(earlier),
                Probe::Empty(at) => at,
            };
            if let Some(slot) = self.slots.get_mut(empty) {
                *slot = slot_of(hash, next);
            }
        }
        self.bytes.extend_from_slice(id.as_bytes());
        self.ends.push(self.bytes.len());
        Ok(())
    }

    /// The id of the envelope at `index`.
    pub fn id_at(&self, index: usize) -> Option<&str> {
        std::str::from_utf8(id_in(&self.bytes, &self.ends, index)?).ok()
    }

    /// The index of the envelope with this id.
    pub fn get(&self, id: &str) -> Option<usize> {
        self.find(id, self.keys.hash(id))
    }

    /// Start fetching the slot where an id with this hash is looked up first: a
    /// replay asks for it a few records before it pushes the id.
    #[inline]
    pub fn prefetch(&self, hash: u64) {
        if let Some(slot) = self.slots.get(self.home(hash)) {
            prefetch_read(slot);
        }
    }

    fn find(&self, id: &str, hash: u64) -> Option<usize> {
        if let Probe::Found(at) = self.probe(id, hash) {
            return Some(at);
        }
        // Past the slots' reach (see SLOTTED_MAX), in file order.
        (self.slotted_max..self.ends.len())
            .find(|&at| id_in(&self.bytes, &self.ends, at) == Some(id.as_bytes()))
    }

    /// The slot an id with this hash is looked for in first.
    fn home(&self, hash: u64) -> usize {
        (hash as usize) & self.slots.len().wrapping_sub(1)
    }

    /// Where the id is, or the empty slot where it would go.
    fn probe(&self, id: &str, hash: u64) -> Probe {
        let mask = self.slots.len().wrapping_sub(1);
        let tag = hash >> INDEX_BITS;
        let mut at = self.home(hash);
        // At most 3/4 full: an empty slot ends every walk. The bound only keeps a
        // broken invariant from looping.
        for _ in 0..self.slots.len() {
            let slot = self.slots.get(at).copied().unwrap_or(0);
            if slot == 0 {
                return Probe::Empty(at);
            }
            if slot >> INDEX_BITS == tag {
                let index = ((slot & INDEX_MASK) as usize).wrapping_sub(1);
                if id_in(&self.bytes, &self.ends, index) == Some(id.as_bytes()) {
                    return Probe::Found(index);
                }
            }
            at = (at + 1) & mask;
        }
        Probe::Empty(usize::MAX)
    }

    /// Twice the slots (or the first ones), every slotted id put back by its hash,
    /// computed again from its bytes.
    fn grow(&mut self) {
        let slots = (self.slots.len() * 2).max(MIN_SLOTS);
        self.slots = empty_slots(slots);
        let mask = slots - 1;
        for index in 0..self.ends.len().min(self.slotted_max) {
            let Some(id) = id_in(&self.bytes, &self.ends, index) else {
                continue;
            };
            let hash = self.keys.hash_bytes(id);
            let mut at = self.home(hash);
            while let Some(slot) = self.slots.get_mut(at) {
                if *slot == 0 {
                    *slot = slot_of(hash, index);
                    break;
                }
                at = (at + 1) & mask;
            }
        }
    }
}

impl Default for IdTable {
    fn default() -> Self {
        Self::with_capacity(0, IdKeys::new())
    }
}

enum Probe {
    Found(usize),
    Empty(usize),
}

/// Slots for `n` ids: a power of two, at most 3/4 full.
fn slots_for(n: usize) -> usize {
    (n.saturating_mul(4) / 3 + 1)
        .checked_next_power_of_two()
        .unwrap_or(1 << (usize::BITS - 1))
        .max(MIN_SLOTS)
}

fn slot_of(hash: u64, index: usize) -> u64 {
    (hash >> INDEX_BITS << INDEX_BITS) | (index as u64 + 1)
}

/// `n` empty slots. A table of megabytes is probed at random, one slot an envelope:
/// on 4 KiB pages most probes missed the TLB too, so its memory is offered to the
/// kernel as 2 MiB pages (taken where transparent huge pages are on, "madvise" or
/// "always").
fn empty_slots(n: usize) -> Vec<u64> {
    let slots = vec![0; n];
    advise_huge_pages(&slots);
    slots
}

#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
pub(crate) fn advise_huge_pages<T>(slots: &[T]) {
    use std::ffi::{c_int, c_void};
    const HUGE_PAGE: usize = 2 << 20;
    /// Its value on these architectures (asm-generic/mman-common.h).
    const MADV_HUGEPAGE: c_int = 14;
    extern "C" {
        fn madvise(addr: *mut c_void, len: usize, advice: c_int) -> c_int;
    }
    let start = slots.as_ptr() as usize;
    let end = start.saturating_add(std::mem::size_of_val(slots));
    let Some(first) = start.checked_next_multiple_of(HUGE_PAGE) else {
        return;
    };
    let last = end / HUGE_PAGE * HUGE_PAGE;
    if last > first {
        // SAFETY: `[first, last)` is page-aligned and inside `slots`' own allocation;
        // MADV_HUGEPAGE only changes how the kernel backs it (the contents, written or
        // not yet, stay), and a refusal (an error return, ignored) leaves it as it was.
        unsafe { madvise(first as *mut c_void, last - first, MADV_HUGEPAGE) };
    }
}

#[cfg(not(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
)))]
pub(crate) fn advise_huge_pages<T>(_: &[T]) {}

/// Ask the CPU to start loading `value`'s cache line.
#[inline]
fn prefetch_read<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint: it never faults, whatever the address, and
    // `value` is a valid reference anyway.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>((value as *const T).cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}

/// The bytes of the `at`-th id of an [`IdTable`]'s buffer.
#[inline]
fn id_in<'a>(bytes: &'a [u8], ends: &Narrow, at: usize) -> Option<&'a [u8]> {
    let start = match at.checked_sub(1) {
        Some(before) => ends.get(before)?,
        None => 0,
    };
    bytes.get(start..ends.get(at)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

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
        let mut table = IdTable::with_capacity(4, IdKeys::new());
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

    fn alike() -> IdKeys {
        IdKeys {
            all_alike: true,
            ..IdKeys::new()
        }
    }

    /// Push every id (each must be new), then find each and refuse each again.
    fn holds_them_all(table: &mut IdTable, ids: &[String]) {
        for (i, id) in ids.iter().enumerate() {
            assert_eq!(table.push(id), Ok(()), "{id}");
            assert_eq!(table.get(id), Some(i));
        }
        for (i, id) in ids.iter().enumerate() {
            assert_eq!(table.get(id), Some(i));
            assert_eq!(table.push(id), Err(i));
        }
        assert_eq!(table.len(), ids.len());
    }

    fn some_ids(n: usize) -> Vec<String> {
        let long = "a-long-one-past-the-inline-size-of-an-id-1234";
        ["a", "b", "", "é😀", long]
            .iter()
            .map(|s| s.to_string())
            .chain((0..n).map(|i| format!("id-{i}")))
            .collect()
    }

    #[test]
    fn ids_whose_hashes_collide_stay_apart() {
        // Keys that hash everything alike: every id after the first collides, in
        // full hash and in tag, through several growths of the table.
        let mut table = IdTable::with_capacity(0, alike());
        let ids = some_ids(200);
        holds_them_all(&mut table, &ids);
        assert_eq!(table.get("c"), None);
        assert_eq!(table.get("id-200"), None);
    }

    #[test]
    fn ids_past_the_slots_reach_are_found_by_a_scan() {
        // As if the slots could index only 3 ids (in truth 2^40 - 1).
        for keys in [IdKeys::new(), alike()] {
            let mut table = IdTable::with_capacity(2, keys);
            table.slotted_max = 3;
            let ids = some_ids(20);
            holds_them_all(&mut table, &ids);
            assert_eq!(table.get("id-20"), None);
        }
    }

    #[test]
    fn ids_that_end_past_a_u32_offset_are_found() {
        // As if the id bytes' ends fit a u32 only up to byte 40 (in truth 4 GiB).
        for keys in [IdKeys::new(), alike()] {
            let mut table = IdTable::with_capacity(2, keys);
            table.ends = Narrow::with_near_max(40);
            let ids = some_ids(30);
            holds_them_all(&mut table, &ids);
            assert_eq!(table.id_at(ids.len() - 1), ids.last().map(String::as_str));
            assert_eq!(table.get("id-30"), None);
        }
    }

    #[test]
    fn a_grown_table_still_finds_every_id() {
        let mut small = IdTable::with_capacity(1, IdKeys::new());
        let ids = some_ids(5000);
        holds_them_all(&mut small, &ids);
        assert!(small.slots.len() >= ids.len() * 4 / 3);
        assert!(small.slots.len().is_power_of_two());
    }

    #[test]
    fn prefetch_of_any_hash_is_harmless() {
        let mut table = IdTable::default();
        table.prefetch(u64::MAX);
        assert_eq!(table.push("x"), Ok(()));
        for hash in [0, 1, u64::MAX, 0x1234_5678_9abc_def0] {
            table.prefetch(hash);
        }
        assert_eq!(table.get("x"), Some(0));
    }
}
