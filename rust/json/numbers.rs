//! Numbers: where a number token ends, and (strict mode) whether Python's `float()`
//! would overflow on it.

use super::shapes::{Mode, ParseProblem};

/// The number starting at `start` (at `-` or a digit): the index just past it
/// (CPython's `_match_number_unicode`; its backtracking over a bare `.`/`e` ends the
/// number where the grammar does, and what follows is then never a valid
/// continuation).
#[inline]
pub(super) fn scan_number(s: &[u8], start: usize, mode: Mode) -> Result<usize, ParseProblem> {
    let mut i = start;
    let negative = s.get(i) == Some(&b'-');
    if negative {
        i += 1;
    }
    match s.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => {
            i += 1;
            while let Some(b'0'..=b'9') = s.get(i) {
                i += 1;
            }
        }
        _ => return Err(ParseProblem::Malformed),
    }
    let int_digits = i - start - usize::from(negative);
    let mut is_float = false;
    if s.get(i) == Some(&b'.') && matches!(s.get(i + 1), Some(b'0'..=b'9')) {
        is_float = true;
        i += 2;
        while let Some(b'0'..=b'9') = s.get(i) {
            i += 1;
        }
    }
    let mut has_exponent = false;
    if let Some(b'e' | b'E') = s.get(i) {
        let mut j = i + 1;
        if let Some(b'+' | b'-') = s.get(j) {
            j += 1;
        }
        let digits_start = j;
        while let Some(b'0'..=b'9') = s.get(j) {
            j += 1;
        }
        if j > digits_start {
            is_float = true;
            has_exponent = true;
            i = j;
        }
    }
    // float() overflows to ±inf only past ~1.8e308: without an exponent that
    // takes 309 integer digits, so short literals skip the parse.
    if mode == Mode::Strict && is_float && (has_exponent || int_digits > 300) {
        let text = s.get(start..i).unwrap_or_default();
        let overflows = std::str::from_utf8(text)
            .ok()
            .and_then(|t| t.parse::<f64>().ok())
            .is_some_and(f64::is_infinite);
        if overflows {
            return Err(ParseProblem::NumberTooLarge);
        }
    }
    Ok(i)
}
