//! The `id`, `type` and `ts` of every envelope a scan found, kept in one arena so
//! that iterating a peek builds its Events from memory instead of reading every
//! line of the file a second time.
//!
//! The scan validated each line and decoded these three strings already; keeping
//! them costs their bytes plus 8 a envelope, and types (few distinct ones) are kept
//! once. An envelope whose header does not fit (a string of 64 KiB or more) is
//! marked as not kept, and the reader reads its line as before.

/// Distinct types kept by index; a type seen after these is kept in the arena.
const MAX_TYPES: usize = 64;

/// `Mark::type_` of a type kept in the arena after the envelope's ts.
const INLINE: u16 = u16::MAX;

/// `Mark::type_` of an envelope whose header was not kept.
const NOT_KEPT: u16 = u16::MAX - 1;

const NOT_KEPT_MARK: Mark = Mark {
    id_len: 0,
    ts_len: 0,
    type_: NOT_KEPT,
    type_len: 0,
};

/// Where one envelope's header lies: its strings follow the previous envelope's in
/// `Headers::text` (id, ts, then the type when `type_` is `INLINE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Mark {
    id_len: u16,
    ts_len: u16,
    type_: u16,
    type_len: u16,
}

/// The headers of a scan's envelopes, in the order it found them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Headers {
    text: String,
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

/// A reading position in a `Headers`: the next envelope and where its text starts.
#[derive(Clone, Copy, Debug, Default)]
pub struct Cursor {
    next: usize,
    text_at: usize,
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
        let fits = |s: &str| u16::try_from(s.len()).ok().filter(|&n| n < NOT_KEPT);
        let type_len = if known.is_some() {
            Some(0)
        } else {
            fits(type_)
        };
        let mark = match (fits(id), fits(ts), type_len) {
            (Some(id_len), Some(ts_len), Some(type_len)) => {
                self.text.push_str(id);
                self.text.push_str(ts);
                if known.is_none() {
                    self.text.push_str(type_);
                }
                Mark {
                    id_len,
                    ts_len,
                    // `known` < MAX_TYPES, far below `NOT_KEPT`.
                    type_: known.map_or(INLINE, |i| i as u16),
                    type_len,
                }
            }
            _ => NOT_KEPT_MARK,
        };
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
        // text goes over in one copy and only the type indices change.
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
            self.marks.extend(later.marks.iter().map(|&mark| Mark {
                type_: match mark.type_ {
                    INLINE | NOT_KEPT => mark.type_,
                    known => remap.get(usize::from(known)).copied().unwrap_or(NOT_KEPT),
                },
                ..mark
            }));
            return;
        }
        let mut cursor = Cursor::default();
        for _ in 0..later.len() {
            match later.next(&mut cursor) {
                Some(h) => self.push(h.id, later.type_text(h.type_), h.ts),
                None => self.marks.push(NOT_KEPT_MARK),
            }
        }
    }

    /// The text of `type_` (empty for an index that is not one of `types`).
    pub fn type_text<'a>(&'a self, type_: TypeName<'a>) -> &'a str {
        match type_ {
            TypeName::Known(i) => self.types.get(i).map_or("", |t| t),
            TypeName::Other(t) => t,
        }
    }

    /// The header of the envelope at `cursor` (None when it was not kept, or past
    /// the last), and the cursor moved to the next envelope.
    pub fn next(&self, cursor: &mut Cursor) -> Option<Header<'_>> {
        let mark = self.marks.get(cursor.next)?;
        let at = cursor.text_at;
        let ts_at = at + usize::from(mark.id_len);
        let type_at = ts_at + usize::from(mark.ts_len);
        let end = type_at + usize::from(mark.type_len);
        cursor.next += 1;
        cursor.text_at = end;
        let type_ = match mark.type_ {
            NOT_KEPT => return None,
            INLINE => TypeName::Other(self.text.get(type_at..end)?),
            known => TypeName::Known(usize::from(known)),
        };
        Some(Header {
            id: self.text.get(at..ts_at)?,
            ts: self.text.get(ts_at..type_at)?,
            type_,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(h: &Headers) -> Vec<Option<(String, String, String)>> {
        let mut cursor = Cursor::default();
        (0..h.len())
            .map(|_| {
                h.next(&mut cursor).map(|e| {
                    let type_ = h.type_text(e.type_).to_string();
                    (e.id.to_string(), type_, e.ts.to_string())
                })
            })
            .collect()
    }

    fn entry(id: &str, type_: &str, ts: &str) -> Option<(String, String, String)> {
        Some((id.into(), type_.into(), ts.into()))
    }

    #[test]
    fn keeps_what_it_was_given_in_order() {
        let mut h = Headers::default();
        let long = "x".repeat(70_000);
        let mut want = Vec::new();
        for i in 0..MAX_TYPES + 5 {
            let (id, type_, ts) = (format!("é{i}"), format!("t{}", i % (MAX_TYPES + 3)), "🕐");
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
        let mut cursor = Cursor::default();
        for _ in 0..h.len() {
            h.next(&mut cursor);
        }
        assert_eq!(h.next(&mut cursor), None);
    }

    #[test]
    fn appended_halves_read_as_one() {
        let long = "y".repeat(66_000);
        // Types in common, new ones in the second half, more than are kept by index
        // in either or both halves.
        for (kinds, stride) in [(3, 1), (10, 7), (70, 1), (90, 7), (200, 3)] {
            for split in [0, 1, 80, 150, 200] {
                let mut one = Headers::default();
                let (mut first, mut second) = (Headers::default(), Headers::default());
                for i in 0..200 {
                    let (id, type_) = (format!("id{i}"), format!("type{}", (i * stride) % kinds));
                    let id = if i % 33 == 0 { long.clone() } else { id };
                    one.push(&id, &type_, "ts");
                    let half = if i < split { &mut first } else { &mut second };
                    half.push(&id, &type_, "ts");
                }
                first.append(&second);
                assert_eq!(all(&first), all(&one), "{kinds} {stride} {split}");
            }
        }
    }
}
