//! String content: decoding escapes to text, and the `\uXXXX` helpers the scan and
//! the decoder share.

use std::borrow::Cow;

use super::shapes::Span;

/// Decode a string's content (the bytes between its quotes, already validated) to
/// generalized UTF-8: a surrogate escape that is not half of a pair is encoded as
/// its own three bytes. Two keys are the same Python string exactly when their
/// decodings are equal.
pub fn decode_string(content: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(content.len());
    let mut i = 0;
    while i < content.len() {
        // Copy the run up to the next escape in one go.
        let rest = content.get(i..).unwrap_or_default();
        let run = memchr::memchr(b'\\', rest).unwrap_or(rest.len());
        out.extend_from_slice(rest.get(..run).unwrap_or_default());
        i += run;
        if i >= content.len() {
            break;
        }
        match content.get(i + 1) {
            Some(b'u') => {
                let Some(c) = hex4(content, i + 2) else {
                    break;
                };
                i += 6;
                let mut cp = c;
                if (0xD800..=0xDBFF).contains(&c) {
                    if let Some(low) = pair_low(content, i) {
                        cp = 0x10000 + ((c - 0xD800) << 10) + (low - 0xDC00);
                        i += 6;
                    }
                }
                push_code_point(&mut out, cp);
            }
            Some(&e) => {
                out.push(match e {
                    b'b' => 0x08,
                    b'f' => 0x0C,
                    b'n' => b'\n',
                    b'r' => b'\r',
                    b't' => b'\t',
                    other => other, // `"`, `\`, `/`
                });
                i += 2;
            }
            None => break,
        }
    }
    out
}

fn push_code_point(out: &mut Vec<u8>, cp: u32) {
    // Generalized UTF-8 (surrogates allowed), written out by hand because `char`
    // cannot hold a surrogate.
    if cp < 0x80 {
        out.push(cp as u8);
    } else if cp < 0x800 {
        out.extend_from_slice(&[0xC0 | (cp >> 6) as u8, 0x80 | (cp & 0x3F) as u8]);
    } else if cp < 0x10000 {
        out.extend_from_slice(&[
            0xE0 | (cp >> 12) as u8,
            0x80 | ((cp >> 6) & 0x3F) as u8,
            0x80 | (cp & 0x3F) as u8,
        ]);
    } else {
        out.extend_from_slice(&[
            0xF0 | (cp >> 18) as u8,
            0x80 | ((cp >> 12) & 0x3F) as u8,
            0x80 | ((cp >> 6) & 0x3F) as u8,
            0x80 | (cp & 0x3F) as u8,
        ]);
    }
}

pub(crate) fn hex4(s: &[u8], at: usize) -> Option<u32> {
    let digits = s.get(at..at.checked_add(4)?)?;
    let mut v = 0u32;
    for &d in digits {
        v = (v << 4) | (d as char).to_digit(16)?;
    }
    Some(v)
}

/// The low surrogate of `\uXXXX` at `at`, if one is there (CPython joins a high
/// surrogate escape with an immediately following low one).
pub(crate) fn pair_low(s: &[u8], at: usize) -> Option<u32> {
    if s.get(at) != Some(&b'\\') || s.get(at + 1) != Some(&b'u') {
        return None;
    }
    hex4(s, at + 2).filter(|c| (0xDC00..=0xDFFF).contains(c))
}

/// The text of a string's content span (between its quotes): borrowed when it has
/// no escapes. Strings that survive into the value hold no lone surrogate
/// (`decode_json` refused those), so they are valid UTF-8; a key that does not
/// survive may, and is compared through its lossy form, which never equals one of
/// the ASCII envelope keys.
pub fn decode_str(raw: &[u8], span: Span) -> Cow<'_, str> {
    let content = raw.get(span.0..span.1).unwrap_or_default();
    if content.len() <= 64 && plain_ascii(content) {
        // SAFETY: every byte is below 0x80 (checked just above), and ASCII is UTF-8.
        return Cow::Borrowed(unsafe { std::str::from_utf8_unchecked(content) });
    }
    if memchr::memchr(b'\\', content).is_none() {
        if let Ok(text) = std::str::from_utf8(content) {
            return Cow::Borrowed(text);
        }
    }
    match String::from_utf8(decode_string(content)) {
        Ok(text) => Cow::Owned(text),
        Err(e) => Cow::Owned(String::from_utf8_lossy(e.as_bytes()).into_owned()),
    }
}

/// No backslash and no byte >= 0x80, eight bytes at a time: the ids, types,
/// timestamps, roles and call ids every line has are short and plain, and one pass
/// over them settles both questions.
fn plain_ascii(content: &[u8]) -> bool {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    const ONES: u64 = 0x0101_0101_0101_0101;
    const BACKSLASHES: u64 = 0x5C5C_5C5C_5C5C_5C5C;
    // A byte is zero in `w ^ BACKSLASHES` exactly where `w` has a backslash; with no
    // high bit in `w`, `(x - ONES) & !x & HIGH` flags such zero bytes exactly.
    let special = |w: u64| {
        let x = w ^ BACKSLASHES;
        (w & HIGH) | (x.wrapping_sub(ONES) & !x & HIGH)
    };
    let mut words = content.chunks_exact(8);
    let mut seen = 0u64;
    for word in &mut words {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(word);
        seen |= special(u64::from_le_bytes(bytes));
    }
    seen == 0 && words.remainder().iter().all(|&b| b < 0x80 && b != b'\\')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_ascii_is_exact_at_every_place() {
        for len in 0..40 {
            let base = vec![b'a'; len];
            assert!(plain_ascii(&base));
            for at in 0..len {
                for b in [b'\\', 0x80, 0xC3, 0xFF, 0x5B, 0x5D, 0x7F, 0x00, 0xDC] {
                    let mut v = base.clone();
                    v[at] = b;
                    let want = b < 0x80 && b != b'\\';
                    assert_eq!(plain_ascii(&v), want, "{len} {at} {b:#x}");
                }
            }
        }
    }

    #[test]
    fn decoding() {
        assert_eq!(
            decode_string(b"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\ud83d\\ude00\\ud800x"),
            b"\"\\/\x08\x0c\n\r\t\xc3\xa9\xf0\x9f\x98\x80\xed\xa0\x80x"
        );
        assert_eq!(decode_str(b"\"a\\u0062\"", (1, 8)), "ab");
        assert!(matches!(
            decode_str(b"\"plain\"", (1, 6)),
            Cow::Borrowed("plain")
        ));
    }
}
