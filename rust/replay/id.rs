//! An envelope id without a heap allocation when it is short: the fold keeps one per
//! line (the duplicate check and `Session.message_extra`'s map), and the ids this
//! library writes are 36-byte UUIDs.

use std::borrow::Borrow;
use std::fmt;
use std::hash::{Hash, Hasher};

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

impl fmt::Debug for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
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
}
