//! The `id`, `type` and `ts` of a line that was validated before, without
//! validating its payload again.
//!
//! Envelopes built on access (`py/lazy.rs`) need their header at once and their
//! payload only when asked: iterating a whole peek touches every envelope's type,
//! and re-validating every payload there would cost as much again as the scan that
//! validated it. The payload is skipped by its brackets and
//! string quotes here, and validated in full when it is built.
//!
//! Only the common shape is skimmed: one object holding exactly the five envelope
//! keys, unescaped, once each, `v` the integer 1. Anything else answers `None` and
//! the caller takes the full parse, so the skim never decides a verdict of its own.
//! It reads arbitrary bytes safely (a file may change under an unlocked reader).

use std::borrow::Cow;

use crate::envelope::EnvelopeRef;
use crate::json::grammar::{parse, Kind, Mode, Span};
use crate::json::simd::skip_plain_string_bytes;
use crate::json::strings::decode_string;
use crate::json::view::{skip_string, skip_value, skip_ws, Item};

/// The header of `raw` (one line, its line end included or not), or `None` when the
/// line is not of the common shape (then parse it in full). `payload`, where the
/// scan that validated the line saw the payload (the one that counts when the key
/// repeats), saves walking it (on escape-dense text the walk was most of the cost).
pub fn skim_header(raw: &[u8], payload: Option<Span>) -> Option<EnvelopeRef<'_>> {
    let mut at = skip_ws(raw, 0);
    if raw.get(at) != Some(&b'{') {
        return None;
    }
    at += 1;
    let known = payload;
    let (mut id, mut type_, mut ts, mut payload, mut v) = (None, None, None, None, false);
    loop {
        at = skip_ws(raw, at);
        let (key, after_key) = plain_string(raw, at)?;
        at = skip_ws(raw, after_key);
        if raw.get(at) != Some(&b':') {
            return None;
        }
        at = skip_ws(raw, at + 1);
        let end = match key {
            b"id" | b"type" | b"ts" => {
                let (text, end) = string_value(raw, at)?;
                let slot = match key {
                    b"id" => &mut id,
                    b"type" => &mut type_,
                    _ => &mut ts,
                };
                if slot.replace(text).is_some() {
                    return None;
                }
                end
            }
            b"payload" => {
                let end = match known {
                    Some((start, end))
                        if start == at
                            && end > at
                            && raw.get(at) == Some(&b'{')
                            && raw.get(end - 1) == Some(&b'}') =>
                    {
                        end
                    }
                    Some(_) => return None,
                    None => match skip_value(raw, at)? {
                        Item {
                            kind: Kind::Object,
                            span,
                        } => span.1,
                        _ => return None,
                    },
                };
                if payload.replace((at, end)).is_some() {
                    return None;
                }
                end
            }
            b"v" => {
                // Exactly the integer 1 (`1.0`, `10`, `1e0` take the full parse).
                if v || raw.get(at) != Some(&b'1') {
                    return None;
                }
                let end = at + 1;
                if raw
                    .get(end)
                    .is_some_and(|b| !matches!(b, b',' | b'}' | b' ' | b'\t' | b'\r' | b'\n'))
                {
                    return None;
                }
                v = true;
                end
            }
            _ => return None,
        };
        at = skip_ws(raw, end);
        match raw.get(at) {
            Some(b',') => at += 1,
            Some(b'}') => break,
            _ => return None,
        }
    }
    if skip_ws(raw, at + 1) != raw.len() || !v {
        return None;
    }
    Some(EnvelopeRef {
        id: id?,
        type_: type_?,
        ts: ts?,
        payload: payload?,
    })
}

/// A string at `at` without escapes or control bytes: its content bytes and the
/// index after its closing quote.
fn plain_string(raw: &[u8], at: usize) -> Option<(&[u8], usize)> {
    if raw.get(at) != Some(&b'"') {
        return None;
    }
    let end = skip_plain_string_bytes(raw, at + 1);
    if raw.get(end) != Some(&b'"') {
        return None;
    }
    Some((raw.get(at + 1..end)?, end + 1))
}

/// The decoded text of the string at `at` and the index after it. Escaped strings
/// are checked by the strict parser first (ids are short; this is rare).
fn string_value(raw: &[u8], at: usize) -> Option<(Cow<'_, str>, usize)> {
    if let Some((content, end)) = plain_string(raw, at) {
        return Some((Cow::Borrowed(std::str::from_utf8(content).ok()?), end));
    }
    let end = skip_string(raw, at)?;
    let token = raw.get(at..end)?;
    let parsed = parse(token, Mode::Strict).ok()?;
    if parsed.top != Kind::String || parsed.lone_surrogate_seen {
        return None;
    }
    let decoded = decode_string(token.get(1..token.len() - 1)?);
    Some((Cow::Owned(String::from_utf8(decoded).ok()?), end))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envelope::parse_envelope_fields;

    /// What the skim answers, with and without the payload span the full parse saw,
    /// is what the full parse answers (or nothing).
    fn same_as_full_parse(line: &[u8]) {
        let mut fields = Vec::new();
        let full = parse_envelope_fields(line, 0, &mut fields).ok();
        let known = full.as_ref().map(|f| f.payload);
        for skim in [skim_header(line, None), skim_header(line, known)]
            .into_iter()
            .flatten()
        {
            let full = full
                .as_ref()
                .expect("the skim accepted a line the full parse refuses");
            assert_eq!(&skim, full);
        }
    }

    #[test]
    fn repeated_keys_are_never_skimmed() {
        // A fuzz find: with the winning payload's span known, jumping from the first
        // payload over `"id":"b"` read the id that loses.
        for line in [
            &br#"{"id":"a","payload":{},"id":"b","payload":{},"ts":"t","type":"x","v":1}"#[..],
            br#"{"ts":"t","payload":{},"ts":"u","payload":{},"id":"a","type":"x","v":1}"#,
            br#"{"id":"a","payload":{"k":1},"ts":"t","type":"x","id":"b","payload":{"k":2},"ts":"u","type":"y","v":1}"#,
        ] {
            same_as_full_parse(line);
            let mut fields = Vec::new();
            let known = parse_envelope_fields(line, 0, &mut fields).unwrap().payload;
            assert!(skim_header(line, Some(known)).is_none());
        }
    }

    #[test]
    fn the_common_shape_is_skimmed() {
        let line = br#"{"id":"a","payload":{"content":"x}\"{[","role":"user"},"ts":"t","type":"message","v":1}"#;
        let env = skim_header(line, None).unwrap();
        assert_eq!((&*env.id, &*env.type_, &*env.ts), ("a", "message", "t"));
        assert_eq!(
            &line[env.payload.0..env.payload.1],
            br#"{"content":"x}\"{[","role":"user"}"#
        );
        assert_eq!(skim_header(line, Some(env.payload)), Some(env.clone()));
        assert_eq!(
            skim_header(line, Some((env.payload.0, env.payload.1 - 1))),
            None
        );
        assert_eq!(
            skim_header(line, Some((env.payload.0 + 1, env.payload.1))),
            None
        );
        same_as_full_parse(line);
        let escaped = br#"{"id":"\u00e9\n","payload":{},"ts":"t","type":"m","v":1}"#;
        assert_eq!(skim_header(escaped, None).unwrap().id, "\u{e9}\n");
        same_as_full_parse(escaped);
    }

    #[test]
    fn other_shapes_take_the_full_parse() {
        for line in [
            &br#"{"id":"a","payload":{},"ts":"t","type":"m","v":1.0}"#[..],
            br#"{"id":"a","payload":{},"ts":"t","type":"m","v":10}"#,
            br#"{"id":"a","id":"b","payload":{},"ts":"t","type":"m","v":1}"#,
            br#"{"id":"a","payload":{},"ts":"t","type":"m","v":1,"x":2}"#,
            br#"{"id":"a","payload":[],"ts":"t","type":"m","v":1}"#,
            br#"{"id":"a","payload":{},"ts":"t","type":"m"}"#,
            br#"{"id":"\ud800","payload":{},"ts":"t","type":"m","v":1}"#,
            br#"{"id":"a","payload":{"x":"}"},"ts":"t","type":"m","v":1} x"#,
            br#"{"i\u0064":"a","payload":{},"ts":"t","type":"m","v":1}"#,
        ] {
            assert!(
                skim_header(line, None).is_none(),
                "{}",
                String::from_utf8_lossy(line)
            );
        }
    }

    #[test]
    fn every_prefix_and_flipped_byte_is_safe() {
        let line = br#"{"id":"a\"b","payload":{"c":[1,{"d":"e\\"}],"f":"\u2028"},"ts":"t","type":"message","v":1}"#;
        for cut in 0..=line.len() {
            same_as_full_parse(&line[..cut]);
        }
        for at in 0..line.len() {
            for b in [b'"', b'\\', b'{', b'}', b'[', b']', b',', b':', 0, 0xff] {
                let mut changed = line.to_vec();
                changed[at] = b;
                let _ = skim_header(&changed, None);
                for end in [0, at, line.len(), line.len() + 5] {
                    let _ = skim_header(&changed, Some((at, end)));
                    let _ = skim_header(&changed, Some((20, end)));
                }
            }
        }
    }
}
