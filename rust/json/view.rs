//! Reading parts of a JSON value that the validator already accepted.
//!
//! The replay validates each line once (`grammar`), then needs only a few
//! payload fields for the fold, and the Python objects of what survives it. This
//! module walks validated bytes by span without building anything. It never
//! trusts its input to be valid, though: on bytes that are not JSON it answers
//! `None` rather than slicing out of bounds (a file may change under a lazy read).

use std::borrow::Cow;

use super::shapes::{Kind, Span};
use super::strings::decode_str;

/// One value inside a line: its JSON type and its whole token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Item {
    pub kind: Kind,
    pub span: Span,
}

/// One member of an object: the key's content span (between its quotes) and the value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub key: Span,
    pub value: Item,
}

fn kind_of(b: u8) -> Option<Kind> {
    Some(match b {
        b'{' => Kind::Object,
        b'[' => Kind::Array,
        b'"' => Kind::String,
        b'n' => Kind::Null,
        b't' | b'f' => Kind::Bool,
        b'-' | b'0'..=b'9' => Kind::Number,
        _ => return None,
    })
}

#[inline]
pub fn skip_ws(s: &[u8], mut i: usize) -> usize {
    while let Some(b' ' | b'\t' | b'\n' | b'\r') = s.get(i) {
        i += 1;
    }
    i
}

/// [`skip_ws`] where a `\n` ends the line rather than being whitespace.
#[inline]
pub fn skip_ws_within_line(s: &[u8], mut i: usize) -> usize {
    while let Some(b' ' | b'\t' | b'\r') = s.get(i) {
        i += 1;
    }
    i
}

/// The index just past the string whose opening quote is at `i`.
///
/// The next quote not escaped, found with memchr: a quote is escaped when an odd run
/// of backslashes comes right before it. Stopping at every escape instead (a
/// byte-class scan) is slow on escape-dense text (tool output, JSON in strings),
/// which the lazy envelopes skip a lot of.
pub fn skip_string(s: &[u8], i: usize) -> Option<usize> {
    let mut at = i + 1;
    loop {
        let quote = at + memchr::memchr(b'"', s.get(at..)?)?;
        let backslashes = s
            .get(i + 1..quote)?
            .iter()
            .rev()
            .take_while(|&&b| b == b'\\')
            .count();
        if backslashes % 2 == 0 {
            return Some(quote + 1);
        }
        at = quote + 1;
    }
}

/// The value starting at `i` (no leading whitespace): its kind and end.
pub fn skip_value(s: &[u8], i: usize) -> Option<Item> {
    let kind = kind_of(*s.get(i)?)?;
    let end = match kind {
        Kind::String => skip_string(s, i)?,
        Kind::Object | Kind::Array => {
            let mut depth = 0usize;
            let mut at = i;
            loop {
                match *s.get(at)? {
                    b'"' => {
                        at = skip_string(s, at)?;
                        continue;
                    }
                    b'[' | b'{' => depth += 1,
                    b']' | b'}' => {
                        depth = depth.checked_sub(1)?;
                        if depth == 0 {
                            break at + 1;
                        }
                    }
                    _ => {}
                }
                at += 1;
            }
        }
        _ => {
            let mut at = i;
            while let Some(b) = s.get(at) {
                if matches!(b, b',' | b']' | b'}' | b' ' | b'\t' | b'\n' | b'\r') {
                    break;
                }
                at += 1;
            }
            at
        }
    };
    Some(Item {
        kind,
        span: (i, end),
    })
}

/// The value whose whole token is `span` (as the validator recorded it): its kind
/// from its first byte, without scanning it again.
pub fn token(s: &[u8], span: Span) -> Option<Item> {
    let kind = kind_of(*s.get(span.0)?)?;
    Some(Item { kind, span })
}

/// The top-level value of `s` (surrounding whitespace allowed).
pub fn root(s: &[u8]) -> Option<Item> {
    skip_value(s, skip_ws(s, 0))
}

/// The members of the object `obj`, in file order, duplicates included.
pub fn members(s: &[u8], obj: Item) -> Option<Vec<Entry>> {
    if obj.kind != Kind::Object {
        return None;
    }
    object_at(s, obj.span.0).map(|(entries, _)| entries)
}

/// The members of the object whose `{` is at `i`, and the index just past its `}`.
fn object_at(s: &[u8], i: usize) -> Option<(Vec<Entry>, usize)> {
    let mut out = Vec::new();
    let mut at = skip_ws(s, i + 1);
    if s.get(at) == Some(&b'}') {
        return Some((out, at + 1));
    }
    loop {
        if s.get(at) != Some(&b'"') {
            return None;
        }
        let key_end = skip_string(s, at)?;
        let key = (at + 1, key_end - 1);
        at = skip_ws(s, key_end);
        if s.get(at) != Some(&b':') {
            return None;
        }
        at = skip_ws(s, at + 1);
        let value = skip_value(s, at)?;
        out.push(Entry { key, value });
        at = skip_ws(s, value.span.1);
        match s.get(at)? {
            b',' => at = skip_ws(s, at + 1),
            b'}' => return Some((out, at + 1)),
            _ => return None,
        }
    }
}

/// The members of each element of the array `arr` (None for an element that is not
/// an object), each element walked once: `elements` then `members` walked every
/// object twice, and the texts inside them (run-context sections) are long.
pub fn element_members(s: &[u8], arr: Item) -> Option<Vec<Option<Vec<Entry>>>> {
    each_element(s, arr, |at| {
        if s.get(at) == Some(&b'{') {
            object_at(s, at).map(|(entries, end)| (Some(entries), end))
        } else {
            skip_value(s, at).map(|v| (None, v.span.1))
        }
    })
}

/// The elements of the array `arr`, in order.
pub fn elements(s: &[u8], arr: Item) -> Option<Vec<Item>> {
    each_element(s, arr, |at| skip_value(s, at).map(|v| (v, v.span.1)))
}

/// What `read` makes of each element of the array `arr`, in order; `read` gets an
/// element's first byte and answers its value and the index just past it.
fn each_element<T>(
    s: &[u8],
    arr: Item,
    mut read: impl FnMut(usize) -> Option<(T, usize)>,
) -> Option<Vec<T>> {
    if arr.kind != Kind::Array {
        return None;
    }
    let mut out = Vec::new();
    let mut at = skip_ws(s, arr.span.0 + 1);
    if s.get(at) == Some(&b']') {
        return Some(out);
    }
    loop {
        let (value, end) = read(at)?;
        out.push(value);
        at = skip_ws(s, end);
        match s.get(at)? {
            b',' => at = skip_ws(s, at + 1),
            b']' => return Some(out),
            _ => return None,
        }
    }
}

/// `d.get(key)` of the dict Python builds: the last member with that key.
pub fn get(s: &[u8], entries: &[Entry], key: &str) -> Option<Item> {
    entries
        .iter()
        .rev()
        .find(|e| key_is(s, e.key, key))
        .map(|e| e.value)
}

/// Whether the key at `span` (escapes allowed) spells `key`.
pub fn key_is(s: &[u8], span: Span, key: &str) -> bool {
    match s.get(span.0..span.1) {
        // An escape makes the raw key longer than what it decodes to, so a raw key
        // no longer than `key` matches only byte for byte: no scan for escapes on
        // the keys that miss (most of them, and every replay asks for many).
        Some(raw) if raw.len() <= key.len() => raw == key.as_bytes(),
        Some(raw) => raw.contains(&b'\\') && decode_str(s, span) == key,
        None => false,
    }
}

/// The text of a string value.
pub fn text(s: &[u8], item: Item) -> Option<Cow<'_, str>> {
    if item.kind != Kind::String || item.span.1 < item.span.0 + 2 {
        return None;
    }
    Some(decode_str(s, (item.span.0 + 1, item.span.1 - 1)))
}

/// The value is the literal `true` (Python's `x is True`).
pub fn is_true(s: &[u8], item: Option<Item>) -> bool {
    item.is_some_and(|i| s.get(i.span.0..i.span.1) == Some(b"true"))
}

/// Present and not `null` (Python's `d.get(k) is not None`).
pub fn is_set(item: Option<Item>) -> bool {
    item.is_some_and(|i| i.kind != Kind::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walks_members_and_elements() {
        let s = br#" {"a" : [1, {"x":"]}\""}, "s\\"], "b":true, "a\u0062":null, "a":-1.5e3 } "#;
        let top = root(s).unwrap();
        assert_eq!(top.kind, Kind::Object);
        let m = members(s, top).unwrap();
        assert_eq!(m.len(), 4);
        let a = get(s, &m, "a").unwrap();
        assert_eq!(&s[a.span.0..a.span.1], b"-1.5e3");
        assert!(is_true(s, get(s, &m, "b")));
        assert!(!is_set(get(s, &m, "ab")));
        assert!(get(s, &m, "ab").is_some());
        let first = m[0].value;
        let els = elements(s, first).unwrap();
        assert_eq!(els.len(), 3);
        assert_eq!(text(s, els[2]).unwrap(), "s\\");
        let inner = members(s, els[1]).unwrap();
        assert_eq!(text(s, inner[0].value).unwrap(), "]}\"");
        let each = element_members(s, first).unwrap();
        assert_eq!(each.len(), 3);
        assert!(each[0].is_none() && each[2].is_none());
        assert_eq!(each[1].as_deref(), Some(&inner[..]));
        let empty = br#"[ ]"#;
        assert_eq!(element_members(empty, root(empty).unwrap()), Some(vec![]));
        let nested = br#"[{"a":{"b":[1,"}"]}} , {}]"#;
        let each = element_members(nested, root(nested).unwrap()).unwrap();
        assert_eq!(each.len(), 2);
        assert_eq!(each[0].as_ref().map(Vec::len), Some(1));
        assert_eq!(each[1].as_ref().map(Vec::len), Some(0));
    }

    #[test]
    fn garbage_is_none_not_a_panic() {
        for s in [
            &b"{"[..],
            b"{\"a\"",
            b"{\"a\":",
            b"[1,",
            b"[{\"a\":1",
            b"[{},",
            b"\"abc",
            b"{\"a\":1 x",
            b"]",
            b"",
        ] {
            if let Some(top) = root(s) {
                let _ = members(s, top);
                let _ = elements(s, top);
                let _ = element_members(s, top);
            }
        }
    }
}
