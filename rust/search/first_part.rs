//! What a search across transcripts reads of each one first: its first bytes,
//! whether its first line is a session-meta envelope by the quick look, and the
//! lines of its first part that hold the text, with their groups (`files` reads a
//! batch of transcripts so; the look is also `walk.first_line_problem`'s).

use crate::envelope::parse_envelope_ref;
use crate::error::CoreResult;
use crate::file_io::{read_full, Source};

use super::leaves::Text;
use super::lines::{find_hits, Found};

/// The bytes a line may start with and still count as blank (`_pure/lines.py`'s
/// `BLANK_BYTES`), and the newlines of blank lines before the first line.
fn is_blank_or_newline(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

/// What [`first_part`] read.
pub struct FirstPart {
    /// The first `head` bytes (fewer in a shorter file).
    pub head: Vec<u8>,
    /// The first line that is not blank ends within `head` and is a `session-meta`
    /// envelope ([`first_line_is_meta`]).
    pub meta: bool,
    /// The lines found in `[0, end)` and their groups ([`find_hits`]).
    pub found: Found,
}

/// Whether the first line of `head` that is not blank ends within it (with its
/// `\n`) and is a `session-meta` envelope as a scan reads it. False says only that
/// this look cannot tell: the caller looks closer (`walk.first_line_problem`).
pub fn first_line_is_meta(head: &[u8]) -> bool {
    let Some(body) = head.iter().position(|&b| !is_blank_or_newline(b)) else {
        return false;
    };
    let Some(newline) = memchr::memchr(b'\n', &head[body..]).map(|n| body + n) else {
        return false;
    };
    let start = memchr::memrchr(b'\n', &head[..body]).map_or(0, |n| n + 1);
    match head.get(start..newline) {
        Some(line) => {
            parse_envelope_ref(line, start as u64).is_ok_and(|e| e.type_ == "session-meta")
        }
        None => false,
    }
}

/// The first `head` bytes of `src`, the quick look at its first line, and the lines
/// of `[0, end)` holding `needle` (the written form of `text`) with their groups.
pub fn first_part<S: Source + Sync + ?Sized>(
    src: &S,
    needle: &[u8],
    text: &Text,
    end: u64,
    head: usize,
) -> CoreResult<FirstPart> {
    let mut first = vec![0u8; head];
    let got = read_full(src, &mut first, 0)?;
    first.truncate(got);
    let meta = first_line_is_meta(&first);
    let found = find_hits(src, needle, text, 0, end, usize::MAX)?;
    Ok(FirstPart {
        head: first,
        meta,
        found,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const META: &str = r#"{"v":1,"type":"session-meta","id":"m","ts":"2026-01-01T00:00:00Z","payload":{"session-id":"s"}}"#;

    #[test]
    fn the_quick_look_finds_a_meta_line_after_blank_lines_only_when_it_ends() {
        let line = format!("{META}\n");
        assert!(first_line_is_meta(line.as_bytes()));
        assert!(first_line_is_meta(format!("\n \t\r\n{line}").as_bytes()));
        assert!(!first_line_is_meta(META.as_bytes())); // no newline yet: cannot tell
        assert!(!first_line_is_meta(b""));
        assert!(!first_line_is_meta(b" \n\r\n"));
        let other = line.replace("session-meta", "message");
        assert!(!first_line_is_meta(other.as_bytes()));
        assert!(!first_line_is_meta(b"{not json}\n"));
    }

    #[test]
    fn the_first_part_is_the_head_the_look_and_the_hits() {
        let data = format!("{META}\n{{\"v\":1,\"type\":\"message\",\"id\":\"a\",\"ts\":\"t\",\"payload\":{{\"role\":\"user\",\"content\":\"find me\"}}}}\n");
        let data = data.as_bytes();
        let text = Text::new(b"find", false).unwrap();
        let part = first_part(data, b"find", &text, data.len() as u64, 16).unwrap();
        assert_eq!(part.head, &data[..16]);
        assert!(!part.meta); // 16 bytes do not hold the first line's end
        let whole = first_part(data, b"find", &text, data.len() as u64, 4096).unwrap();
        assert_eq!(whole.head, data);
        assert!(whole.meta);
        assert_eq!(whole.found.lines, vec![META.len() as u64 + 1]);
        assert_eq!(whole.found.groups, vec![1]);
        assert_eq!(whole.found.next, data.len() as u64);
    }
}
