//! The tail check (docs/FORMAT.md's tail check): what load must do to the end of the file.
//!
//! Mirrors `tail_check` in `python/llm_agent_session/_pure/tail_check.py`. Works on bytes
//! before anything is decoded: a crash can stop a line inside a multi-byte character.
//! Reads only the first non-blank line, the last two non-blank lines (scanning
//! backwards in chunks) and, to number lines, the newlines before them.

use crate::envelope::{chars, parse_envelope, too_deep_reason};
use crate::error::{CoreError, CoreResult, FailureKind};
use crate::file_io::{read_full, Source};
use crate::json::grammar::{classify, is_blank, Verdict};

/// How load must treat the end of the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TailKind {
    /// The last line is whole and ends with `\n`.
    Clean,
    /// The last line is whole but lacks its final `\n`.
    NoNewline,
    /// The last line is cut short: the file is to be cut at `TailVerdict::cut`.
    Torn,
}

impl TailKind {
    pub fn as_str(self) -> &'static str {
        match self {
            TailKind::Clean => "clean",
            TailKind::NoNewline => "no-newline",
            TailKind::Torn => "torn",
        }
    }
}

/// The reference's `(kind, cut, line, excerpt)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TailVerdict {
    pub kind: TailKind,
    /// Where the torn line starts (the repaired size), else the file size.
    pub cut: u64,
    /// 1-based number of the torn line; 0 when the last line is whole (not counted).
    pub line: u64,
    /// The torn line's first bytes (empty unless torn).
    pub excerpt: Vec<u8>,
}

/// Bytes of the excerpt of a torn line.
pub const EXCERPT_BYTES: usize = 60;

const FIRST_CHUNK: u64 = 64 << 10;
const MAX_CHUNK: u64 = 8 << 20;
const COUNT_CHUNK: usize = 1 << 20;

/// The first `size` bytes of a source, read by position.
struct Bytes<'a, S: Source + ?Sized> {
    src: &'a S,
    size: u64,
}

impl<S: Source + ?Sized> Bytes<'_, S> {
    /// Exactly the bytes `[start, end)`.
    fn read(&self, start: u64, end: u64) -> CoreResult<Vec<u8>> {
        let len = usize::try_from(end.saturating_sub(start)).map_err(|_| too_big())?;
        let mut buf = Vec::new();
        buf.try_reserve_exact(len).map_err(|_| too_big())?;
        buf.resize(len, 0);
        if read_full(self.src, &mut buf, start)? < len {
            // The file shrank under us; the reference's mapping would fault.
            return Err(CoreError::ShorterThanSize);
        }
        Ok(buf)
    }

    /// The line starting at `pos`: its bytes, and where its `\n` is (None: it runs
    /// to the end).
    fn line_forward(&self, pos: u64) -> CoreResult<(Vec<u8>, Option<u64>)> {
        let mut line = Vec::new();
        let mut at = pos;
        let mut chunk = FIRST_CHUNK;
        while at < self.size {
            let end = self.size.min(at.saturating_add(chunk));
            let buf = self.read(at, end)?;
            let nl = memchr::memchr(b'\n', &buf);
            let piece = buf.get(..nl.unwrap_or(buf.len())).unwrap_or_default();
            line.try_reserve(piece.len()).map_err(|_| too_big())?;
            line.extend_from_slice(piece);
            if let Some(i) = nl {
                return Ok((line, Some(at + i as u64)));
            }
            at = end;
            chunk = (chunk * 2).min(MAX_CHUNK);
        }
        Ok((line, None))
    }

    /// The line ending at `end` (exclusive): where it starts, and its bytes.
    fn line_backward(&self, end: u64) -> CoreResult<(u64, Vec<u8>)> {
        let mut pieces: Vec<Vec<u8>> = Vec::new();
        let mut hi = end;
        let mut chunk = FIRST_CHUNK;
        let mut start = 0;
        while hi > 0 {
            let lo = hi.saturating_sub(chunk);
            let buf = self.read(lo, hi)?;
            if let Some(i) = memchr::memrchr(b'\n', &buf) {
                pieces.push(buf.get(i + 1..).unwrap_or_default().to_vec());
                start = lo + i as u64 + 1;
                break;
            }
            pieces.push(buf);
            hi = lo;
            chunk = (chunk * 2).min(MAX_CHUNK);
        }
        let mut line = Vec::new();
        line.try_reserve_exact(pieces.iter().map(Vec::len).sum())
            .map_err(|_| too_big())?;
        for piece in pieces.iter().rev() {
            line.extend_from_slice(piece);
        }
        Ok((start, line))
    }

    /// `(start, end, bytes)` of the first non-blank line (the reference's
    /// `first_line_span`), or None when there is none.
    fn first_line(&self) -> CoreResult<Option<(u64, u64, Vec<u8>)>> {
        let mut pos = 0;
        while pos < self.size {
            let (bytes, nl) = self.line_forward(pos)?;
            if !is_blank(&bytes) {
                return Ok(Some((pos, nl.unwrap_or(self.size), bytes)));
            }
            match nl {
                Some(nl) => pos = nl + 1,
                None => return Ok(None),
            }
        }
        Ok(None)
    }

    /// `(start, end, bytes)` of the last non-blank line ending at or before `end`
    /// (the reference's `last_line_span`), or None.
    fn last_line(&self, end: u64) -> CoreResult<Option<(u64, u64, Vec<u8>)>> {
        let mut pos = end;
        loop {
            let (start, bytes) = self.line_backward(pos)?;
            if !is_blank(&bytes) {
                return Ok(Some((start, pos, bytes)));
            }
            if start == 0 {
                return Ok(None);
            }
            pos = start - 1;
        }
    }

    /// How many `\n` lie in `[start, end)`. Numbering the last line means counting
    /// every newline of the file; past [`PARALLEL_COUNT_MIN`] bytes the two halves
    /// are counted on two threads.
    fn count_newlines(&self, start: u64, end: u64) -> CoreResult<u64>
    where
        S: Sync,
    {
        if end.saturating_sub(start) < PARALLEL_COUNT_MIN {
            return count_range(self.src, start, end);
        }
        let mid = start + (end - start) / 2;
        let (low, high) = std::thread::scope(|scope| {
            let high = scope.spawn(|| count_range(self.src, mid, end));
            (count_range(self.src, start, mid), high.join())
        });
        let high =
            high.map_err(|_| CoreError::Io(std::io::Error::other("a counting thread failed")))?;
        Ok(low? + high?)
    }
}

const PARALLEL_COUNT_MIN: u64 = 8 << 20;

fn count_range<S: Source + ?Sized>(src: &S, start: u64, end: u64) -> CoreResult<u64> {
    let mut total = 0u64;
    let mut buf = vec![0u8; COUNT_CHUNK];
    let mut at = start;
    while at < end {
        let n = usize::try_from(end - at)
            .unwrap_or(usize::MAX)
            .min(COUNT_CHUNK);
        let piece = buf.get_mut(..n).unwrap_or_default();
        if read_full(src, piece, at)? < n {
            return Err(CoreError::ShorterThanSize);
        }
        total += count_byte(piece, b'\n');
        at += n as u64;
    }
    Ok(total)
}

/// Occurrences of `needle` in `hay`.
///
/// Byte compares summed into u8 lanes, which LLVM vectorises: the same speed
/// whatever the density, where `memchr_iter().count()` slows with it (it stops at
/// every match) and a plain `filter().count()` is several times slower (figures in
/// the commit that added it).
pub fn count_byte(hay: &[u8], needle: u8) -> u64 {
    let mut total = 0u64;
    for block in hay.chunks(255 * 64) {
        // u8 lanes cannot overflow within 255 iterations of 64 bytes.
        let mut lanes = [0u8; 64];
        let mut groups = block.chunks_exact(64);
        for group in &mut groups {
            for (lane, &b) in lanes.iter_mut().zip(group) {
                *lane += u8::from(b == needle);
            }
        }
        total += lanes.iter().map(|&c| u64::from(c)).sum::<u64>();
        total += groups.remainder().iter().filter(|&&b| b == needle).count() as u64;
    }
    total
}

/// A line larger than memory: an error (Python's `MemoryError`), never an abort.
fn too_big() -> CoreError {
    CoreError::Io(std::io::Error::new(
        std::io::ErrorKind::OutOfMemory,
        "a line too large to hold in memory",
    ))
}

/// Decide what load must do to the end of the first `size` bytes of `src`; a
/// `CoreError::Failure` when it must refuse.
pub fn tail_check<S: Source + Sync + ?Sized>(src: &S, size: u64) -> CoreResult<TailVerdict> {
    // The reference maps the file, which refuses a size past its end.
    if size > 0 && src.size()? < size {
        return Err(CoreError::ShorterThanSize);
    }
    let bytes = Bytes { src, size };

    // The first line must be our session-meta: never repair what is not ours.
    let Some((first_start, _, first)) = bytes.first_line()? else {
        let reason = if size == 0 {
            "the file is empty"
        } else {
            "the file holds only blank lines"
        };
        return Err(CoreError::failure(
            FailureKind::NotATranscript,
            0,
            0,
            reason,
        ));
    };
    let first_line_no = bytes.count_newlines(0, first_start)? + 1;
    match parse_envelope(&first, first_start) {
        Err(p) if p.kind == FailureKind::Version => {
            return Err(CoreError::failure(
                FailureKind::Version,
                first_line_no,
                first_start,
                p.reason,
            ));
        }
        Err(p) => {
            return Err(CoreError::failure(
                FailureKind::NotATranscript,
                first_line_no,
                first_start,
                format!(
                    "the first line is not a session-meta envelope ({})",
                    p.reason
                ),
            ));
        }
        Ok(env) if env.type_ != "session-meta" => {
            return Err(CoreError::failure(
                FailureKind::NotATranscript,
                first_line_no,
                first_start,
                format!(
                    "the first line is a {} envelope, not a session-meta",
                    chars(&env.type_, 40)
                ),
            ));
        }
        Ok(_) => {}
    }

    // The first line is non-blank, so there is a last one (unless the file changed
    // under us, which the reference cannot see either: treat it as shrunk).
    let Some((start, _, raw)) = bytes.last_line(size)? else {
        return Err(CoreError::ShorterThanSize);
    };
    let whole_kind = if bytes.read(size - 1, size)? == b"\n" {
        TailKind::Clean
    } else {
        TailKind::NoNewline
    };
    let whole = |line| TailVerdict {
        kind: whole_kind,
        cut: size,
        line,
        excerpt: Vec::new(),
    };
    if start == first_start {
        return Ok(whole(0));
    }
    let verdict = classify(&raw);
    if verdict == Verdict::Whole {
        // A whole last line needs no number: counting every newline of the file
        // would be a tenth of a big load.
        return Ok(whole(0));
    }
    let line = first_line_no + bytes.count_newlines(first_start, start)?;
    match verdict {
        Verdict::TooDeep => {
            return Err(CoreError::failure(
                FailureKind::Corrupt,
                line,
                start,
                too_deep_reason(),
            ))
        }
        Verdict::Whole | Verdict::Torn => {}
    }

    // Torn. A crash tears only the last line: if the one before is bad too, this is
    // damage, and healing a line per load would eat the file backwards.
    let Some((p_start, _, prev)) = bytes.last_line(start.saturating_sub(1))? else {
        return Err(CoreError::ShorterThanSize);
    };
    if p_start != first_start {
        let p_line = line - bytes.count_newlines(p_start, start)?;
        match classify(&prev) {
            Verdict::TooDeep => {
                return Err(CoreError::failure(
                    FailureKind::Corrupt,
                    p_line,
                    p_start,
                    too_deep_reason(),
                ))
            }
            Verdict::Torn => {
                let zeros = memchr::memchr(0, &prev).is_some() || memchr::memchr(0, &raw).is_some();
                let why = if zeros {
                    ", but zero bytes like these are the mark of a probable power loss (data the OS \
                     had not yet written to disk)"
                } else {
                    ", so this is damage, not a crash tail"
                };
                return Err(CoreError::failure(
                    FailureKind::Corrupt,
                    p_line,
                    p_start,
                    format!(
                        "not a JSON value, and neither is the last line (line {line}); a crash \
                         tears only the last line{why}"
                    ),
                ));
            }
            Verdict::Whole => {}
        }
    }
    let excerpt = raw.get(..EXCERPT_BYTES).unwrap_or(&raw).to_vec();
    Ok(TailVerdict {
        kind: TailKind::Torn,
        cut: start,
        line,
        excerpt,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::CoreFailure;

    const META: &str = r#"{"id":"m","payload":{},"ts":"t","type":"session-meta","v":1}"#;
    const MSG: &str = r#"{"id":"a","payload":{"role":"user"},"ts":"t","type":"message","v":1}"#;

    /// `(kind, cut, line, excerpt)`, or `(kind, line, offset, reason)`.
    type Outcome = Result<(String, u64, u64, Vec<u8>), (String, u64, u64, String)>;

    fn check(data: &[u8]) -> Outcome {
        // Through a real file too: the slice and the file must agree.
        let path = std::env::temp_dir().join(format!(
            "las-tail-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0)
        ));
        std::fs::write(&path, data).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        let from_file = tail_check(&file, data.len() as u64);
        std::fs::remove_file(&path).unwrap();
        let from_slice = tail_check(data, data.len() as u64);
        let conv = |r: CoreResult<TailVerdict>| match r {
            Ok(v) => Ok((v.kind.as_str().to_string(), v.cut, v.line, v.excerpt)),
            Err(CoreError::Failure(CoreFailure {
                kind,
                line,
                offset,
                reason,
            })) => Err((kind.as_str().to_string(), line, offset, reason)),
            Err(e) => Err(("error".into(), 0, 0, e.to_string())),
        };
        let a = conv(from_file);
        assert_eq!(a, conv(from_slice));
        a
    }

    #[test]
    fn verdicts() {
        let ok = |k: &str, cut: usize, line: u64| Ok((k.to_string(), cut as u64, line, vec![]));
        let f = format!("{META}\n{MSG}\n");
        assert_eq!(check(f.as_bytes()), ok("clean", f.len(), 0));
        let f = format!("{META}\n{MSG}");
        assert_eq!(check(f.as_bytes()), ok("no-newline", f.len(), 0));
        let f = format!("\r\n \t\n{META}\r\n\n \r\n");
        assert_eq!(check(f.as_bytes()), ok("clean", f.len(), 0));
        let f = format!("{META}\n{MSG}\n \n\t");
        assert_eq!(check(f.as_bytes()), ok("no-newline", f.len(), 0));

        let torn = format!("{META}\n{MSG}\n{}", &MSG[..30]);
        let cut = META.len() + MSG.len() + 2;
        assert_eq!(
            check(torn.as_bytes()),
            Ok(("torn".into(), cut as u64, 3, MSG.as_bytes()[..30].to_vec()))
        );
        // Mid multi-byte character, and an excerpt capped at 60 bytes.
        let mut torn = format!("{META}\n{{\"id\":\"{}", "\u{e9}".repeat(40)).into_bytes();
        torn.pop();
        let r = check(&torn).unwrap();
        assert_eq!((r.0.as_str(), r.1, r.2), ("torn", META.len() as u64 + 1, 2));
        assert_eq!(r.3.len(), 60);
        // Two bad lines: damage.
        let f = format!("{META}\n{{\"a\":\n\n{{\"b\":\n");
        assert_eq!(
            check(f.as_bytes()),
            Err((
                "corrupt".into(),
                2,
                META.len() as u64 + 1,
                "not a JSON value, and neither is the last line (line 4); a crash tears only \
                 the last line, so this is damage, not a crash tail"
                    .into()
            ))
        );
        // A torn line right after the meta line is repairable.
        let f = format!("{META}\n{{\"a\":");
        assert_eq!(check(f.as_bytes()).unwrap().0, "torn");
        // Too deep, whole or not.
        let f = format!("{META}\n{}\n", "[".repeat(513));
        assert_eq!(
            check(f.as_bytes()),
            Err((
                "corrupt".into(),
                2,
                META.len() as u64 + 1,
                "nested deeper than 512 levels".into()
            ))
        );
        let f = format!("{META}\n{}\n{{\"a\"", "[".repeat(513));
        assert_eq!(
            check(f.as_bytes()).unwrap_err().3,
            "nested deeper than 512 levels"
        );
        // A NUL tail (a crash on some file systems) is torn.
        let f = format!("{META}\n{MSG}\n\0\0\0\0");
        assert_eq!(check(f.as_bytes()).unwrap().0, "torn");
    }

    #[test]
    fn first_line_refusals() {
        let err = |data: &[u8]| check(data).unwrap_err();
        assert_eq!(
            err(b""),
            ("not-a-transcript".into(), 0, 0, "the file is empty".into())
        );
        assert_eq!(
            err(b" \n\r\n"),
            (
                "not-a-transcript".into(),
                0,
                0,
                "the file holds only blank lines".into()
            )
        );
        assert_eq!(
            err(format!("\n{MSG}\n").as_bytes()),
            (
                "not-a-transcript".into(),
                2,
                1,
                "the first line is a message envelope, not a session-meta".into()
            )
        );
        assert_eq!(
            err(b"{\"v\":2}\n"),
            (
                "version".into(),
                1,
                0,
                "envelope version is not the integer 1 (v is a JSON number); this version \
                 reads v=1 only"
                    .into()
            )
        );
        assert_eq!(
            err(b"\n\n\xff\n"),
            (
                "not-a-transcript".into(),
                3,
                2,
                "the first line is not a session-meta envelope (invalid UTF-8 at byte 2)".into()
            )
        );
    }

    #[test]
    fn count_byte_matches_naive() {
        let data: Vec<u8> = (0..100_000u32).map(|i| (i * 7919 % 13) as u8).collect();
        for len in [0, 1, 63, 64, 65, 255 * 64, 255 * 64 + 1, 100_000] {
            let hay = &data[..len];
            let naive = hay.iter().filter(|&&b| b == 10).count() as u64;
            assert_eq!(count_byte(hay, 10), naive);
        }
    }
}
