//! Whether one string or number of an envelope holds the text searched for.
//!
//! The answer is about the value Python reads (`_pure/search.py::leaf_holds`): the
//! text is in the string's decoded characters, or in the number as `json.dumps`
//! writes it; with `ignore_case` ASCII letters fold on both sides, other letters
//! match exactly. Here it is answered from the line's bytes, mostly without
//! decoding anything:
//!
//! * a string with no escape is its own text: the text's UTF-8 is searched in it;
//! * otherwise the text as the line format writes it (`json.dumps`'s escapes, and
//!   `\u2028`/`\u2029`) is searched, and an occurrence counts only where it starts
//!   on a character (not inside an escape): the encoding is prefix-free, so such an
//!   occurrence decodes to exactly the text;
//! * a string without one is decoded only if it is not written that way itself
//!   (an escape `json.dumps` would not write, a raw U+2028): then an occurrence may
//!   hide behind another spelling.

use std::borrow::Cow;

use memchr::memmem;

use crate::json::grammar::{parse, Kind, Mode};
use crate::json::strings::{decode_string, hex4};
use crate::line_format::write_string_content;

/// The text searched for, in the two spellings the search needs.
pub struct Text {
    /// The characters (generalized UTF-8: a lone surrogate as its own three bytes,
    /// as Python's `surrogatepass`), folded with `ignore_case`.
    plain: memmem::Finder<'static>,
    /// As the line format writes it, folded with `ignore_case`.
    written: memmem::Finder<'static>,
    /// Whether the text could be in a number's text (`-12.5e+30`): only digits,
    /// `.`, `-`, `+` and `e`.
    numeric: bool,
    pub ignore_case: bool,
}

impl Text {
    /// The text whose written form (a JSON string's content, as `search.needle`
    /// gives it) is `needle`; Err when that is not a string's content in UTF-8.
    pub fn new(needle: &[u8], ignore_case: bool) -> Result<Text, &'static str> {
        let mut quoted = Vec::with_capacity(needle.len() + 2);
        quoted.push(b'"');
        quoted.extend_from_slice(needle);
        quoted.push(b'"');
        match parse(&quoted, Mode::Grammar) {
            Ok(parsed) if parsed.top == Kind::String => {}
            _ => return Err("the text searched for is not a JSON string's content in UTF-8"),
        }
        let mut plain = decode_string(needle);
        if plain.is_empty() {
            return Err("the text searched for is empty");
        }
        // As the line format writes it: `json.dumps`'s escapes, and U+2028/U+2029.
        let mut written = Vec::with_capacity(plain.len() + 8);
        write_string_content(&mut written, &plain, true);
        if ignore_case {
            plain.make_ascii_lowercase();
            written.make_ascii_lowercase();
        }
        let numeric = plain
            .iter()
            .all(|b| matches!(b, b'0'..=b'9' | b'.' | b'-' | b'+' | b'e'));
        Ok(Text {
            plain: memmem::Finder::new(&plain).into_owned(),
            written: memmem::Finder::new(&written).into_owned(),
            numeric,
            ignore_case,
        })
    }

    /// Whether the string whose content (between its quotes, validated) is `raw`
    /// holds the text; `folded` is `raw` with ASCII letters lowered under
    /// `ignore_case`, else `raw` itself.
    pub fn string_holds(&self, raw: &[u8], folded: &[u8]) -> bool {
        if memchr::memchr(b'\\', raw).is_none() {
            return self.plain.find(folded).is_some();
        }
        if self
            .written
            .find_iter(folded)
            .any(|at| starts_a_character(raw, at))
        {
            return true;
        }
        if is_written_form(raw) {
            return false;
        }
        let mut decoded = decode_string(raw);
        if self.ignore_case {
            decoded.make_ascii_lowercase();
        }
        self.plain.find(&decoded).is_some()
    }

    /// Whether the number whose token is `raw` holds the text, as `json.dumps`
    /// writes the number Python reads.
    pub fn number_holds(&self, raw: &[u8]) -> bool {
        self.numeric && self.plain.find(&number_text(raw)).is_some()
    }
}

/// Whether `at` in a string's content is not inside an escape. An escape is at most
/// six bytes (`\uXXXX`), so only the five bytes before `at` can start one that
/// covers it.
fn starts_a_character(raw: &[u8], at: usize) -> bool {
    let mut q = at;
    while q > at.saturating_sub(5) {
        q -= 1;
        if raw.get(q) == Some(&b'\\') && escape_starts_at(raw, q) {
            let len = if raw.get(q + 1) == Some(&b'u') { 6 } else { 2 };
            return q + len <= at;
        }
    }
    true
}

/// Whether the backslash at `q` starts an escape: an even run of backslashes
/// precedes it (an odd one means it is the second half of `\\`).
fn escape_starts_at(raw: &[u8], q: usize) -> bool {
    let before = raw.get(..q).unwrap_or_default();
    before.iter().rev().take_while(|&&b| b == b'\\').count() % 2 == 0
}

/// Whether a string's content (validated) is spelled as the line format writes its
/// text: every escape one `json.dumps` writes (lowercase hex, and `\u` only for the
/// control characters without a short escape, U+2028 and U+2029), and no raw
/// U+2028 or U+2029.
fn is_written_form(raw: &[u8]) -> bool {
    if memmem::find(raw, "\u{2028}".as_bytes()).is_some()
        || memmem::find(raw, "\u{2029}".as_bytes()).is_some()
    {
        return false;
    }
    let mut i = 0;
    while let Some(found) = raw.get(i..).and_then(|rest| memchr::memchr(b'\\', rest)) {
        let at = i + found;
        match raw.get(at + 1) {
            Some(b'"' | b'\\' | b'n' | b'r' | b't' | b'b' | b'f') => i = at + 2,
            Some(b'u') => {
                let lowercase = raw
                    .get(at + 2..at + 6)
                    .is_some_and(|h| h.iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')));
                let written = match hex4(raw, at + 2) {
                    Some(c @ 0..=0x1F) => !matches!(c, 0x08 | 0x09 | 0x0A | 0x0C | 0x0D),
                    Some(0x2028 | 0x2029) => true,
                    _ => false,
                };
                if !(lowercase && written) {
                    return false;
                }
                i = at + 6;
            }
            _ => return false, // `\/`
        }
    }
    true
}

/// The number whose token is `raw` as `json.dumps` writes the value Python reads:
/// an integer as it is (`-0` is `0`), a float as `repr` writes it.
pub fn number_text(raw: &[u8]) -> Cow<'_, [u8]> {
    if !raw.iter().any(|b| matches!(b, b'.' | b'e' | b'E')) {
        return if raw == b"-0" {
            Cow::Borrowed(b"0")
        } else {
            Cow::Borrowed(raw)
        };
    }
    match std::str::from_utf8(raw)
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
    {
        Some(value) => Cow::Owned(float_repr(value).into_bytes()),
        None => Cow::Borrowed(raw),
    }
}

/// Python's `repr(float)` (and `json.dumps`'s): the shortest digits that read back
/// as the same float (which Rust's `{:e}` gives too), in positional notation when
/// the decimal point falls within 16 digits of them, else as `d.ddde+XX`.
pub fn float_repr(value: f64) -> String {
    if value.is_nan() {
        return "NaN".into();
    }
    if value.is_infinite() {
        return if value > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    if value == 0.0 {
        return if value.is_sign_negative() {
            "-0.0"
        } else {
            "0.0"
        }
        .into();
    }
    let shortest = format!("{:e}", value.abs());
    // Of the strings of that many digits, Python takes the one nearest the float's
    // exact value, the even one on a tie (562949953421312.25 is written ...312.2);
    // Rust's shortest may take the other: its exact formatting to as many digits
    // rounds as Python does, and is taken when it reads back as the same float.
    let digits = shortest
        .split('e')
        .next()
        .unwrap_or("")
        .len()
        .saturating_sub(1)
        .max(1);
    let nearest = format!("{:.*e}", digits - 1, value.abs());
    let shortest = match nearest.parse::<f64>() {
        Ok(back) if back == value.abs() => nearest,
        _ => shortest,
    };
    let (mantissa, exponent) = shortest.split_once('e').unwrap_or((&shortest, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let point = exponent + 1; // digits[..point] before the decimal point
    let mut out = String::with_capacity(digits.len() + 8);
    if value < 0.0 {
        out.push('-');
    }
    let n = digits.len() as i32;
    if point <= -4 || point > 16 {
        out.push_str(&digits[..1]);
        if n > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push_str(&format!(
            "e{}{:02}",
            if exponent < 0 { '-' } else { '+' },
            exponent.abs()
        ));
    } else if point <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-point) as usize));
        out.push_str(&digits);
    } else if point >= n {
        out.push_str(&digits);
        out.extend(std::iter::repeat_n('0', (point - n) as usize));
        out.push_str(".0");
    } else {
        out.push_str(&digits[..point as usize]);
        out.push('.');
        out.push_str(&digits[point as usize..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn holds(needle: &str, content: &str, ignore_case: bool) -> bool {
        let text = Text::new(needle.as_bytes(), ignore_case).unwrap();
        let raw = content.as_bytes();
        let folded = if ignore_case {
            raw.to_ascii_lowercase()
        } else {
            raw.to_vec()
        };
        text.string_holds(raw, &folded)
    }

    #[test]
    fn an_occurrence_inside_an_escape_is_not_the_text() {
        assert!(!holds("n", r"a\nb", false)); // the escape of a newline
        assert!(holds("n", r"a\nbn", false));
        assert!(!holds("u001f", r"x\u001fy", false));
        assert!(holds(r"\n", r"a\nb", false)); // a newline
        assert!(!holds(r"\n", r"a\\nb", false)); // a backslash, then n
        assert!(holds(r"\\n", r"a\\nb", false));
        assert!(holds(r#"\""#, r#"say \"hi\""#, false));
    }

    #[test]
    fn another_spelling_is_decoded() {
        assert!(holds("a/b", r"a\/b", false));
        assert!(holds("abc", r"\u0041bc\n", true));
        assert!(!holds("abc", r"\u0041bc\n", false));
        assert!(holds(r"\u2028", "x\u{2028}y\\n", false));
        assert!(holds("😀", r"\ud83d\ude00\t", false));
        assert!(holds(r"\u001f", r"\u001F\t", false));
    }

    #[test]
    fn only_ascii_letters_fold() {
        assert!(holds("cafÉ", "CAFÉ", true));
        assert!(!holds("café", "CAFÉ", true));
        assert!(!holds("Café", "café", false));
    }

    #[test]
    fn numbers_read_as_python_writes_them() {
        let text = |n: &str| Text::new(n.as_bytes(), true).unwrap();
        assert!(text("0").number_holds(b"-0"));
        assert!(!text("-").number_holds(b"-0"));
        assert!(text("1e+16").number_holds(b"1E16"));
        assert!(text("100.0").number_holds(b"1e2"));
        assert!(text("-0.0").number_holds(b"-0.0e5"));
        assert!(!text("x").number_holds(b"1"));
        for (value, python) in [
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5e-5, "1.5e-05"),
            (123456789012345678.0, "1.2345678901234568e+17"),
            (0.1, "0.1"),
            (-2.5, "-2.5"),
            (5e-324, "5e-324"),
            (562949953421312.2, "562949953421312.2"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
        ] {
            assert_eq!(float_repr(value), python);
        }
    }

    #[test]
    fn a_needle_must_be_a_strings_content() {
        assert!(Text::new(b"", false).is_err());
        assert!(Text::new(b"a\"b", false).is_err());
        assert!(Text::new(b"a\\", false).is_err());
        assert!(Text::new(b"\xff", false).is_err());
        assert!(Text::new(b"a\nb", false).is_err());
        assert!(Text::new(b"a\\nb", false).is_ok());
    }
}
