//! The lenient scan of `peek`, `salvage` and `fork` (the reference's `scan` in
//! `_pure/replay.py`): every line validated as an envelope, problems collected
//! rather than raised, no fold. Holds spans and a few facts per envelope, never
//! a payload.

use crate::envelope::parse_envelope_fields;
use crate::error::CoreResult;
use crate::file_io::{read_full, Source};
use crate::json_grammar::{is_blank, Kind};
use crate::json_view;
use crate::replay::fold::LineRef;
use crate::replay::stream::LineReader;

/// One envelope the scan found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    /// 1-based line number, counted from the scan's start.
    pub line: u64,
    pub at: LineRef,
    /// For a `message`: whether its payload has a string role.
    pub message_role: Option<bool>,
}

/// One line that did not parse: line number, offset, length, reason.
pub type Problem = (u64, u64, u64, String);

#[derive(Debug, Default)]
pub struct Scanned {
    pub found: Vec<Found>,
    /// The ids (when asked for) and the first envelope's type.
    pub ids: Vec<String>,
    pub first_type: Option<String>,
    pub problems: Vec<Problem>,
    /// Just past the last `\n` at or after `start` (or `start`).
    pub end: u64,
}

/// Scan bytes `[start, size)`; the bytes after the last `\n` are left alone unless
/// `final_line`.
pub fn scan<S: Source + ?Sized>(
    src: &S,
    start: u64,
    size: u64,
    final_line: bool,
    want_ids: bool,
) -> CoreResult<Scanned> {
    let end = end_of_last_line(src, start, size)?;
    let stop = if final_line { size } else { end };
    let mut out = Scanned {
        end,
        ..Default::default()
    };
    let mut reader = LineReader::new(src, start, stop);
    let mut fields = Vec::new();
    while let Some((line, offset, raw)) = reader.next_line()? {
        if is_blank(raw) {
            continue;
        }
        let len = raw.len() as u64;
        match parse_envelope_fields(raw, offset, &mut fields) {
            Err(p) => out.problems.push((line, offset, len, p.reason)),
            Ok(env) => {
                let message_role = (env.type_ == "message").then(|| {
                    json_view::get(raw, &fields, "role").is_some_and(|r| r.kind == Kind::String)
                });
                if out.first_type.is_none() {
                    out.first_type = Some(env.type_.into_owned());
                }
                if want_ids {
                    out.ids.push(env.id.into_owned());
                }
                out.found.push(Found {
                    line,
                    at: LineRef { offset, len },
                    message_role,
                });
            }
        }
    }
    Ok(out)
}

/// The offset just past the last `\n` in `[start, size)`, or `start` if none.
fn end_of_last_line<S: Source + ?Sized>(src: &S, start: u64, size: u64) -> CoreResult<u64> {
    let mut buf = vec![0u8; 64 << 10];
    let mut hi = size;
    while hi > start {
        let lo = hi.saturating_sub(buf.len() as u64).max(start);
        let want = (hi - lo) as usize;
        let chunk = buf.get_mut(..want).unwrap_or_default();
        // A file that shrinks under the scan (a writer rolling back) ends where its
        // bytes end, as for the reference, which reads what is there.
        let got = read_full(src, chunk, lo)?;
        if let Some(i) = memchr::memrchr(b'\n', chunk.get(..got).unwrap_or_default()) {
            return Ok(lo + i as u64 + 1);
        }
        hi = lo;
    }
    Ok(start)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collects_problems_and_leaves_the_unfinished_line() {
        let data = b"{\"id\":\"m\",\"payload\":{},\"ts\":\"t\",\"type\":\"session-meta\",\"v\":1}\n\nnot json\n{\"id\":\"a\",\"payload\":{\"role\":1},\"ts\":\"t\",\"type\":\"message\",\"v\":1}\n{\"id\":";
        let s = scan(&data[..], 0, data.len() as u64, false, true).unwrap();
        assert_eq!(s.ids, vec!["m", "a"]);
        assert_eq!(s.first_type.as_deref(), Some("session-meta"));
        assert_eq!(s.found[1].line, 4);
        assert_eq!(s.found[1].message_role, Some(false));
        assert_eq!(s.problems.len(), 1);
        assert_eq!(s.problems[0].0, 3);
        assert_eq!(s.end, data.len() as u64 - 6);
        let s = scan(&data[..], 0, data.len() as u64, true, false).unwrap();
        assert_eq!(s.problems.len(), 2);
    }
}
