//! The lenient scan of `peek`, `salvage` and `fork` (the reference's `scan` in
//! `_pure/replay.py`): every line validated as an envelope, problems collected
//! rather than raised, no fold. Holds spans and a few facts per envelope, never
//! a payload (and, for peek, each envelope's header: `headers`).

pub mod headers;

use crate::envelope::parse_envelope_fields;
use crate::error::{CoreError, CoreResult};
use crate::file_io::{read_full, Source};
use crate::json::grammar::{is_blank, Kind};
use crate::json::view as json_view;
use crate::replay::fold::LineRef;
use crate::replay::stream::{line_start_after, LineReader, SPLIT_MIN};
use crate::survey::{Facts, Survey};
use headers::Headers;

/// One envelope the scan found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    /// 1-based line number, counted from the scan's start.
    pub line: u64,
    pub at: LineRef,
    /// For a `message`: whether its payload has a string role.
    pub message_role: Option<bool>,
    /// Where the payload object lies in the line (start, end; `u32::MAX` past
    /// 4 GiB), so envelopes built on access find their header without walking it.
    pub payload: (u32, u32),
}

/// One line that did not parse: line number, offset, length, reason.
pub type Problem = (u64, u64, u64, String);

/// What a scan collects beyond the envelopes' places.
#[derive(Clone, Copy, Debug, Default)]
pub struct Wanted {
    /// Every envelope's id (salvage and fork).
    pub ids: bool,
    /// Peek's survey (see `survey`).
    pub survey: bool,
    /// Every envelope's id, type and ts (peek's Events built without a read).
    pub headers: bool,
}

#[derive(Debug, Default)]
pub struct Scanned {
    pub found: Vec<Found>,
    /// The ids (when asked for) and the first envelope's type.
    pub ids: Vec<String>,
    pub first_type: Option<String>,
    pub problems: Vec<Problem>,
    /// Just past the last `\n` at or after `start` (or `start`).
    pub end: u64,
    /// When asked for.
    pub survey: Option<Survey>,
    /// When asked for: one a `found` envelope, in order.
    pub headers: Option<Headers>,
    facts: Option<Facts>,
}

/// Scan bytes `[start, size)`; the bytes after the last `\n` are left alone unless
/// `final_line`.
pub fn scan<S: Source + Sync + ?Sized>(
    src: &S,
    start: u64,
    size: u64,
    final_line: bool,
    want: Wanted,
) -> CoreResult<Scanned> {
    scan_split_from(src, start, size, final_line, want, SPLIT_MIN)
}

/// [`scan`], on two threads when the range holds at least `split_min` bytes: the
/// halves meet at a line boundary and the second's line numbers are shifted by the
/// first's count. The scan is CPU-bound (validating every line), so two cores
/// nearly halve it.
pub fn scan_split_from<S: Source + Sync + ?Sized>(
    src: &S,
    start: u64,
    size: u64,
    final_line: bool,
    want: Wanted,
    split_min: u64,
) -> CoreResult<Scanned> {
    let end = end_of_last_line(src, start, size)?;
    let stop = if final_line { size } else { end };
    let split = if stop.saturating_sub(start) >= split_min {
        line_start_after(src, start + (stop - start) / 2, stop)?
    } else {
        stop
    };
    let facts = || want.survey.then(Facts::default);
    let headers = || want.headers.then(Headers::default);
    let mut out = Scanned {
        end,
        facts: facts(),
        headers: headers(),
        ..Default::default()
    };
    if split >= stop {
        scan_range(src, start, stop, want.ids, &mut out)?;
        out.survey = out.facts.take().map(Facts::fold);
        return Ok(out);
    }
    let mut second = Scanned {
        facts: facts(),
        headers: headers(),
        ..Default::default()
    };
    let (first_lines, second_done) = std::thread::scope(|scope| {
        let worker = scope.spawn(|| scan_range(src, split, stop, want.ids, &mut second));
        (
            scan_range(src, start, split, want.ids, &mut out),
            worker.join(),
        )
    });
    let first_lines = first_lines?;
    second_done
        .map_err(|_| CoreError::Io(std::io::Error::other("the scan's second thread failed")))??;
    if let (Some(facts), Some(later)) = (out.facts.as_mut(), second.facts) {
        facts.extend(later, out.found.len());
    }
    out.survey = out.facts.take().map(Facts::fold);
    if let (Some(headers), Some(later)) = (out.headers.as_mut(), second.headers.as_ref()) {
        headers.append(later);
    }
    out.found.extend(second.found.into_iter().map(|mut f| {
        f.line += first_lines;
        f
    }));
    out.problems
        .extend(second.problems.into_iter().map(|mut p| {
            p.0 += first_lines;
            p
        }));
    out.ids.extend(second.ids);
    if out.first_type.is_none() {
        out.first_type = second.first_type;
    }
    Ok(out)
}

/// Scan the lines of `[start, stop)` into `out`; returns how many lines it read.
fn scan_range<S: Source + ?Sized>(
    src: &S,
    start: u64,
    stop: u64,
    want_ids: bool,
    out: &mut Scanned,
) -> CoreResult<u64> {
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
                if let Some(facts) = out.facts.as_mut() {
                    facts.note(out.found.len(), &env, len, raw, &fields);
                }
                if let Some(headers) = out.headers.as_mut() {
                    headers.push(&env.id, &env.type_, &env.ts);
                }
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
                    payload: (clamp(env.payload.0), clamp(env.payload.1)),
                });
            }
        }
    }
    Ok(reader.lines)
}

fn clamp(at: usize) -> u32 {
    u32::try_from(at).unwrap_or(u32::MAX)
}

/// The offset just past the last `\n` in `[start, size)`, or `start` if none.
pub fn end_of_last_line<S: Source + ?Sized>(src: &S, start: u64, size: u64) -> CoreResult<u64> {
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

    const IDS: Wanted = Wanted {
        ids: true,
        survey: false,
        headers: false,
    };
    const ALL: Wanted = Wanted {
        ids: true,
        survey: true,
        headers: true,
    };

    #[test]
    fn collects_problems_and_leaves_the_unfinished_line() {
        let data = b"{\"id\":\"m\",\"payload\":{},\"ts\":\"t\",\"type\":\"session-meta\",\"v\":1}\n\nnot json\n{\"id\":\"a\",\"payload\":{\"role\":1},\"ts\":\"t\",\"type\":\"message\",\"v\":1}\n{\"id\":";
        let s = scan(&data[..], 0, data.len() as u64, false, IDS).unwrap();
        assert_eq!(s.ids, vec!["m", "a"]);
        assert_eq!(s.first_type.as_deref(), Some("session-meta"));
        assert_eq!(s.found[1].line, 4);
        assert_eq!(s.found[1].message_role, Some(false));
        assert_eq!(s.problems.len(), 1);
        assert_eq!(s.problems[0].0, 3);
        assert_eq!(s.end, data.len() as u64 - 6);
        let s = scan(&data[..], 0, data.len() as u64, true, Wanted::default()).unwrap();
        assert_eq!(s.problems.len(), 2);
    }

    #[test]
    fn two_threads_find_what_one_finds() {
        let data = b"{\"id\":\"m\",\"payload\":{},\"ts\":\"t\",\"type\":\"session-meta\",\"v\":1}\n\nnot json\n{\"id\":\"a\",\"payload\":{\"role\":1},\"ts\":\"t\",\"type\":\"message\",\"v\":1}\nx\n{\"id\":\"b\",\"payload\":{},\"ts\":\"t\",\"type\":\"message\",\"v\":1}\n{\"id\":";
        let view = |s: Scanned| {
            (
                s.found,
                s.ids,
                s.first_type,
                s.problems,
                s.end,
                s.survey,
                s.headers.map(|h| h.entries()),
            )
        };
        let size = data.len() as u64;
        for start in [0, 1, 30, 70] {
            for final_line in [false, true] {
                let one = || {
                    view(
                        scan_split_from(&data[..], start, size, final_line, ALL, u64::MAX).unwrap(),
                    )
                };
                for split_min in [1, 2, 40] {
                    let two = scan_split_from(&data[..], start, size, final_line, ALL, split_min)
                        .unwrap();
                    assert_eq!(view(two), one());
                }
            }
        }
    }
}
