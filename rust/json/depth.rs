//! Nesting depth: the limit both cores read to, and the reference's token scan
//! that tells "too deep" from "malformed" on a line that failed to parse.

use super::view::skip_string;

/// Deepest nesting either core reads (the reference's `MAX_READ_DEPTH`).
pub const MAX_READ_DEPTH: i64 = 512;

/// [`MAX_READ_DEPTH`] as a stack length: opening one more container is too deep.
pub(super) const MAX_DEPTH: usize = MAX_READ_DEPTH as usize;

/// Whether the deepest count of open brackets exceeds [`MAX_READ_DEPTH`].
///
/// The reference's token scan, byte for byte: a string runs from `"` to the next
/// unescaped `"` (or to the end of the line: a torn line may stop inside one), a
/// backslash takes the next byte with it, brackets count only outside strings, and a
/// closing bracket decrements even below zero.
pub fn nesting_depth_exceeds(raw: &[u8]) -> bool {
    // Cheap filter first (the reference's too): few brackets cannot be deep.
    let opens = raw.iter().filter(|&&b| b == b'[' || b == b'{').count();
    if opens as u64 <= MAX_READ_DEPTH as u64 {
        return false;
    }
    let mut depth: i64 = 0;
    let mut i = 0;
    while let Some(&b) = raw.get(i) {
        match b {
            // The string's end is the view's (the next quote after an even run of
            // backslashes); one cut short holds the rest of the line.
            b'"' => match skip_string(raw, i) {
                Some(after) => {
                    i = after;
                    continue;
                }
                None => return false,
            },
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_READ_DEPTH {
                    return true;
                }
            }
            b']' | b'}' => depth -= 1,
            _ => {}
        }
        i += 1;
    }
    false
}
