//! Find the lines of a file that contain a byte string, and with a [`Text`] where
//! in each line's envelope the text is (`groups`).
//!
//! The caller encodes the text searched for as the line format writes strings (so
//! escaped characters and non-ASCII match), and the bytes are searched as they are:
//! the scan parses no line (with a [`Text`], only the lines it found). The file is read in large blocks, each starting at a line
//! start and holding whole lines, and `memchr::memmem` (SIMD) finds the needle in
//! each. With `ignore_case`, ASCII letters are lowered in the block and in the
//! needle first (a cost measured by `benches/viewer_speed.py`); other letters
//! match exactly.

use memchr::memmem;

use crate::error::{CoreError, CoreResult};
use crate::file_io::{read_full, Source};
use crate::replay::stream::line_start_after;

use super::groups::groups_of_line;
use super::leaves::Text;

/// How much is read at once. 256 KiB: the per-read cost is still nothing, and a
/// block (with its case-folded copy, two threads at once) stays in the L2 cache
/// while it is searched and its lines parsed: `OPENSSL_DIR` over the 10 GB corpus,
/// every line found parsed, took 1.8-2.0 s ignoring case and 1.6 s matching it
/// against 2.9 and 1.9 s with blocks of 4 MiB (`grep -F -c`: 2.1 s).
pub const BLOCK: usize = 256 << 10;

/// What one call found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Found {
    /// The start offset of each line that holds the needle, in file order.
    pub lines: Vec<u64>,
    /// With a [`Text`]: each line's groups (`groups`), as `lines` orders them.
    pub groups: Vec<i8>,
    /// Where to go on from: the start of the first line not examined.
    pub next: u64,
}

/// The lines starting in `[start, end)` that contain `needle` (a line runs to its
/// `\n`, or to the end of the file), at most `limit` of them. `start` must be a
/// line start. `needle` must not be empty (the Python edge refuses it) and must not
/// hold `\n` (then nothing matches: no line holds one).
pub fn find_lines<S: Source + ?Sized>(
    src: &S,
    needle: &[u8],
    start: u64,
    end: u64,
    ignore_case: bool,
    limit: usize,
) -> std::io::Result<Found> {
    find_lines_in_blocks(src, needle, start, end, ignore_case, limit, BLOCK)
}

/// [`find_lines`], and for each line found the groups of its envelope in which
/// `text` is ([`groups_of_line`]), read while the line is in the cache. The lines
/// are those holding `needle` (`text`'s written form, as `search.needle` gives it).
///
/// Without a `limit` it could reach, a range of more than [`SPLIT_MIN`] bytes is read by two
/// threads, one half each (split at a line start): parsing the lines found is most
/// of the work where the text is common (`OPENSSL_DIR` on the realistic 1 GB
/// corpus: 52,605 lines, 613 MB, 0.20 s on one thread; `benches/viewer_speed.py`).
pub fn find_hits<S: Source + Sync + ?Sized>(
    src: &S,
    needle: &[u8],
    text: &Text,
    start: u64,
    end: u64,
    limit: usize,
) -> CoreResult<Found> {
    let one = |from: u64, to: u64| {
        scan(
            src,
            needle,
            from,
            to,
            text.ignore_case,
            limit,
            BLOCK,
            Some(text),
        )
        .map_err(CoreError::Io)
    };
    // A limit no range can reach (fewer lines start in it than it has bytes) is none.
    let limited = u64::try_from(limit).is_ok_and(|l| l <= end.saturating_sub(start));
    if limited || end.saturating_sub(start) < SPLIT_MIN {
        return one(start, end);
    }
    let split = line_start_after(src, start + (end - start) / 2, end)?;
    if split >= end {
        return one(start, end);
    }
    let (first, second) = std::thread::scope(|scope| {
        let worker = scope.spawn(|| one(split, end));
        (one(start, split), worker.join())
    });
    let mut found = first?;
    let second = second
        .map_err(|_| CoreError::Io(std::io::Error::other("the search's second thread failed")))??;
    found.lines.extend(second.lines);
    found.groups.extend(second.groups);
    found.next = second.next;
    Ok(found)
}

/// The least range [`find_hits`] splits between two threads.
pub const SPLIT_MIN: u64 = 8 << 20;

/// [`find_lines`] with reads of `block` bytes (tests use small ones; a line longer
/// than a block grows it).
pub fn find_lines_in_blocks<S: Source + ?Sized>(
    src: &S,
    needle: &[u8],
    start: u64,
    end: u64,
    ignore_case: bool,
    limit: usize,
    block: usize,
) -> std::io::Result<Found> {
    scan(src, needle, start, end, ignore_case, limit, block, None)
}

#[allow(clippy::too_many_arguments)]
fn scan<S: Source + ?Sized>(
    src: &S,
    needle: &[u8],
    start: u64,
    end: u64,
    ignore_case: bool,
    limit: usize,
    block: usize,
    text: Option<&Text>,
) -> std::io::Result<Found> {
    let mut found = Found {
        lines: Vec::new(),
        groups: Vec::new(),
        next: start,
    };
    if needle.is_empty() || needle.contains(&b'\n') || limit == 0 {
        return Ok(found);
    }
    let lowered;
    let needle = if ignore_case {
        lowered = needle.to_ascii_lowercase();
        &lowered[..]
    } else {
        needle
    };
    let finder = memmem::Finder::new(needle);
    // No larger than the range (and one byte, so that a range ending at the end of the
    // file reads short there): zeroing a whole block for a small file was most of the
    // time of a search over many small transcripts (`benches/search_speed.py`).
    let range =
        usize::try_from(end.saturating_sub(start)).map_or(usize::MAX, |r| r.saturating_add(1));
    let mut buf = vec![0u8; block.min(range).max(1)];
    // With a text to place, the lines stay as they are for the parse, and the
    // search runs over a folded copy.
    let mut folded_copy = Vec::new();
    let mut at = start; // a line start, and where `buf` was read from
    while at < end {
        let got = read_full(src, &mut buf, at)?;
        if got == 0 {
            break;
        }
        // Whole lines only: up to the last `\n`, or all of it at the end of the file
        // (`read_full` comes back short only there).
        let whole = if got < buf.len() {
            got
        } else {
            match memchr::memrchr(b'\n', &buf[..got]) {
                Some(last) => last + 1,
                None => {
                    // One line longer than the block: read it again into a larger one.
                    let grown = buf.len() * 2;
                    buf.resize(grown, 0);
                    continue;
                }
            }
        };
        let data = &mut buf[..whole];
        let folded: &[u8] = match (ignore_case, text) {
            (false, _) => data,
            (true, None) => {
                data.make_ascii_lowercase();
                data
            }
            (true, Some(_)) => {
                folded_copy.clear();
                folded_copy.extend(data.iter().map(u8::to_ascii_lowercase));
                &folded_copy
            }
        };
        let data: &[u8] = data;
        // This call examines the lines that start before `end`.
        let stop = usize::try_from(end - at).map_or(whole, |s| s.min(whole));
        let mut pos = 0; // a line start in `data`
        while pos < stop {
            let Some(hit) = finder.find(&folded[pos..]) else {
                pos = line_start_from(data, stop);
                break;
            };
            let hit = pos + hit;
            let line_start = memchr::memrchr(b'\n', &data[pos..hit]).map_or(pos, |nl| pos + nl + 1);
            if line_start >= stop {
                pos = line_start_from(data, stop);
                break;
            }
            let line_end = memchr::memchr(b'\n', &data[hit..]).map_or(whole, |nl| hit + nl);
            pos = (line_end + 1).min(whole);
            found.lines.push(at + line_start as u64);
            if let Some(text) = text {
                let line = line_start..line_end;
                found
                    .groups
                    .push(groups_of_line(&data[line.clone()], &folded[line], text));
            }
            if found.lines.len() >= limit {
                found.next = at + pos as u64;
                return Ok(found);
            }
        }
        at += pos as u64;
        if pos < whole {
            break; // the lines left start at or after `end`
        }
    }
    found.next = at;
    Ok(found)
}

/// The first line start at or after `stop` in `data` (which ends with a whole line),
/// or its length.
fn line_start_from(data: &[u8], stop: usize) -> usize {
    if stop == 0 || stop >= data.len() || data[stop - 1] == b'\n' {
        return stop.min(data.len());
    }
    memchr::memchr(b'\n', &data[stop..]).map_or(data.len(), |nl| stop + nl + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines_of(
        data: &[u8],
        needle: &[u8],
        start: u64,
        end: u64,
        ic: bool,
        limit: usize,
        block: usize,
    ) -> Found {
        find_lines_in_blocks(data, needle, start, end, ic, limit, block).unwrap()
    }

    /// The obvious answer, line by line.
    fn reference(
        data: &[u8],
        needle: &[u8],
        start: u64,
        end: u64,
        ic: bool,
        limit: usize,
    ) -> Found {
        let mut out = Found {
            lines: vec![],
            groups: vec![],
            next: start,
        };
        if needle.is_empty() || limit == 0 || start >= end {
            return out;
        }
        let (hay, needle) = if ic {
            (data.to_ascii_lowercase(), needle.to_ascii_lowercase())
        } else {
            (data.to_vec(), needle.to_vec())
        };
        let mut at = start as usize;
        while at < end as usize && at < hay.len() {
            let line_end = hay[at..]
                .iter()
                .position(|&b| b == b'\n')
                .map_or(hay.len(), |p| at + p + 1);
            if hay[at..line_end]
                .windows(needle.len())
                .any(|w| w == &needle[..])
            {
                out.lines.push(at as u64);
                if out.lines.len() >= limit {
                    out.next = line_end as u64;
                    return out;
                }
            }
            at = line_end;
        }
        out.next = at as u64;
        out
    }

    #[test]
    fn agrees_with_the_line_by_line_answer_at_every_block_size_and_range() {
        let data =
            b"{\"a\":\"Hello\"}\nnothing here\nhello hello\n\nHELLO\nlast hello without newline";
        for block in [1, 2, 3, 5, 8, 13, 64, 4096] {
            for ic in [false, true] {
                for start in [0u64, 14, 27, 39, 40] {
                    for end in [0u64, 5, 14, 30, 46, data.len() as u64, 1000] {
                        for limit in [1, 2, usize::MAX] {
                            let got = lines_of(data, b"hello", start, end, ic, limit, block);
                            let want = reference(data, b"hello", start, end, ic, limit);
                            assert_eq!(
                                got, want,
                                "block {block} ic {ic} start {start} end {end} limit {limit}"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn two_threads_find_what_one_finds() {
        let mut data = Vec::new();
        let mut i = 0u32;
        while data.len() < (SPLIT_MIN as usize) * 3 {
            let line = match i % 7 {
                0 => format!("{{\"type\":\"message\",\"payload\":{{\"role\":\"user\",\"content\":\"needle {i}\"}}}}\n"),
                3 => format!("{{\"type\":\"x\",\"payload\":{{\"k\":\"Needle\\n{i}\"}}}}\n"),
                5 => format!("not json needle {i}\n"),
                _ => format!("{{\"type\":\"x\",\"payload\":{{\"k\":\"{}\"}}}}\n", "y".repeat(i as usize % 300)),
            };
            data.extend_from_slice(line.as_bytes());
            i += 1;
        }
        let data = &data[..];
        for ignore_case in [false, true] {
            let text = Text::new(b"needle", ignore_case).unwrap();
            let end = data.len() as u64 + 5;
            let split = find_hits(data, b"needle", &text, 0, end, usize::MAX).unwrap();
            let one = scan(
                data,
                b"needle",
                0,
                end,
                ignore_case,
                usize::MAX,
                BLOCK,
                Some(&text),
            )
            .unwrap();
            assert_eq!(split, one);
            assert!(one.groups.contains(&-1) && one.groups.contains(&1));
            assert_eq!(one.groups.contains(&8), ignore_case);
            let limited = find_hits(data, b"needle", &text, 0, end, 10).unwrap();
            assert_eq!(limited.lines, one.lines[..10]);
        }
    }

    #[test]
    fn a_needle_with_a_newline_or_nothing_matches_nothing() {
        let data = b"a\nb\n";
        assert_eq!(
            lines_of(data, b"a\nb", 0, 4, false, 10, 4).lines,
            Vec::<u64>::new()
        );
        assert_eq!(
            lines_of(data, b"", 0, 4, false, 10, 4).lines,
            Vec::<u64>::new()
        );
    }

    #[test]
    fn only_ascii_letters_fold() {
        let data = "CAFÉ\ncafé\n".as_bytes();
        assert_eq!(
            lines_of(data, "café".as_bytes(), 0, 100, true, 10, 3).lines,
            vec![6]
        );
    }
}
