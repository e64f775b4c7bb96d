//! The dataset pass (`llm-agent-session dataset`): one transcript's rows of the
//! dataset tables, the twin of `python/llm_agent_session/_pure/columns.py`.
//!
//! * `lines`: the first pass reads and validates every line once (two threads for a
//!   big file) and keeps what the fold needs;
//! * `fold`: `history.History`'s fold over the lines (a repeated id's later lines
//!   left out first, as salvage reads a file);
//! * `rows`: the second pass reads a run of lines again and copies each value once
//!   into its column (`buffers`: Arrow's layout), a run at a time so that what is held
//!   at once stays bounded whatever the file's size.

pub mod buffers;
pub mod fold;
pub mod lines;
pub mod rows;
pub mod usage;
pub mod usage_pass;
pub mod values;

use crate::error::CoreResult;
use crate::file_io::Source;
use crate::json::view as json_view;
use crate::replay::id::IdTable;

use fold::Fold;
use lines::{First, Line, LineType};
pub use rows::{Cursor, Tables};

/// What the first pass and the fold found, and where the runs of rows are.
#[derive(Debug)]
pub struct Pass {
    /// The kept lines, in file order.
    pub lines: Vec<Line>,
    /// Their payloads' members (`Line::fields` says where each line's are).
    pub fields: Vec<json_view::Entry>,
    pub fold: Fold,
    pub skipped: u64,
    pub first: First,
    pub model: Option<String>,
    pub first_ts: Option<i64>,
    pub last_ts: Option<i64>,
    pub elisions: u64,
    /// Each grants line's snapshot, in file order (`""` where it has none).
    pub grants: Vec<String>,
    /// Per kept line, its place among the grants lines.
    pub grants_index: Vec<Option<i64>>,
    /// Runs of kept lines (index ranges) of about the requested bytes.
    pub runs: Vec<std::ops::Range<usize>>,
    /// Physical lines read, blank ones and an unfinished last one included.
    pub line_count: u64,
    /// What the message lines' token usage adds up to (each response counted once).
    pub usage: usage::Totals,
}

/// Read and fold `[0, stop)` of `src` (the bytes after the last `\n` only if
/// `final_line`), the runs of rows cut at about `chunk` bytes of lines.
pub fn pass<S: Source + Sync + ?Sized>(
    src: &S,
    stop: u64,
    final_line: bool,
    chunk: u64,
) -> CoreResult<Pass> {
    let mut part: lines::Part = lines::read_lines(src, stop, final_line)?;
    // A later line with an id seen before is left out. The ids were hashed by the threads
    // that read them: hashing them here, one after another, was a tenth of the pass (the
    // realistic 256 MB file; `perf record`).
    let total = part.lines.len();
    let mut seen = IdTable::with_capacity(total, part.keys.clone());
    let mut kept: Vec<Line> = std::mem::take(&mut part.lines)
        .into_iter()
        .filter(|l| seen.push_hashed(&l.id, l.hash).is_ok())
        .collect();
    drop(seen);
    let usage = usage::count(&mut kept);
    let skipped = part.skipped + (total - kept.len()) as u64;
    let line_count = part.line_count;
    let fold = fold::fold(&kept);
    let mut model = None;
    let (mut first_ts, mut last_ts) = (None::<i64>, None::<i64>);
    let mut elisions = 0;
    let mut grants = Vec::new();
    let mut grants_index = vec![None; kept.len()];
    let mut runs = Vec::new();
    let (mut run_start, mut run_bytes) = (0, 0u64);
    for (i, line) in kept.iter().enumerate() {
        if model.is_none() {
            model.clone_from(&line.model);
        }
        if let Some(ts) = line.ts {
            first_ts = Some(first_ts.map_or(ts, |t| t.min(ts)));
            last_ts = Some(last_ts.map_or(ts, |t| t.max(ts)));
        }
        match line.kind {
            LineType::Elision => elisions += 1,
            LineType::Grants => {
                if let Some(slot) = grants_index.get_mut(i) {
                    *slot = Some(grants.len() as i64);
                }
                grants.push(line.grants.clone().unwrap_or_default());
            }
            _ => {}
        }
        run_bytes += line.len + 1;
        if run_bytes >= chunk.max(1) {
            runs.push(run_start..i + 1);
            run_start = i + 1;
            run_bytes = 0;
        }
    }
    if run_start < kept.len() || runs.is_empty() {
        runs.push(run_start..kept.len());
    }
    Ok(Pass {
        fields: part.fields,
        lines: kept,
        fold,
        skipped,
        first: part.first,
        model,
        first_ts,
        last_ts,
        elisions,
        grants,
        grants_index,
        runs,
        line_count,
        usage,
    })
}

impl Pass {
    /// The rows of run `run` (runs are taken in order: `cursor` carries the ordinals).
    pub fn rows<S: Source + ?Sized>(
        &self,
        src: &S,
        run: usize,
        extras: bool,
        cursor: &mut Cursor,
    ) -> CoreResult<Tables> {
        let range = self.runs.get(run).cloned().unwrap_or(0..0);
        rows::rows(src, self, range, extras, cursor)
    }

    /// The FNV-1a hashes of the ids a later line must not repeat, sorted, each once, 8
    /// bytes little-endian: the kept lines' envelope ids (a load refuses a repeat) and
    /// the response ids their usage names (a later line of one of those responses would
    /// change which line it is counted at; `usage::id_hash`). A stable digest (unlike the
    /// keyed hashes) that another pass's can be checked against.
    pub fn id_digest(&self) -> Vec<u8> {
        let responses = self
            .lines
            .iter()
            .filter_map(|l| l.usage.as_deref()?.response_id.as_deref());
        let mut hashes: Vec<u64> = self
            .lines
            .iter()
            .map(|l| fnv1a(l.id.as_bytes()))
            .chain(responses.map(usage::id_hash))
            .collect();
        hashes.sort_unstable();
        hashes.dedup();
        hashes.iter().flat_map(|h| h.to_le_bytes()).collect()
    }

    /// The counted responses and the lines they are counted at, in file order
    /// (`usage::responses`).
    pub fn responses(&self) -> impl Iterator<Item = (&Line, &usage::Stated)> {
        usage::responses(&self.lines)
    }
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// 64-bit FNV-1a of `bytes`, going on from the hash `h` (`FNV_OFFSET` to start).
fn fnv1a_from(h: u64, bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(h, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// 64-bit FNV-1a.
fn fnv1a(bytes: &[u8]) -> u64 {
    fnv1a_from(FNV_OFFSET, bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_is_the_published_one() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(b"foobar"), 0x8594_4171_f739_67e8);
    }

    fn line(id: &str, n: u64) -> String {
        format!(
            "{{\"v\":1,\"id\":\"{id}\",\"type\":\"message\",\"ts\":\"2024-01-01T00:00:00.000000Z\",\"payload\":{{\"role\":\"user\",\"content\":\"m{n}\"}}}}"
        )
    }

    #[test]
    fn the_digest_has_each_kept_id_once_sorted() {
        let text = [line("b", 1), String::new(), line("a", 2), line("b", 3)].join("\n");
        let pass = super::pass(text.as_bytes(), text.len() as u64, true, 1 << 12).unwrap();
        assert_eq!(pass.lines.len(), 2);
        assert_eq!(pass.line_count, 4);
        let mut want = [fnv1a(b"a"), fnv1a(b"b")];
        want.sort_unstable();
        let want: Vec<u8> = want.iter().flat_map(|h| h.to_le_bytes()).collect();
        assert_eq!(pass.id_digest(), want);
        let empty = super::pass(&[][..], 0, true, 1 << 12).unwrap();
        assert!(empty.id_digest().is_empty());
        assert_eq!(empty.line_count, 0);
    }
}
