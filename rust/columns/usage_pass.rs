//! The token usage of a transcript on disk, read alone (`usage.read`, `usage.of_transcript`:
//! the viewer's token count, `stats`): the dataset pass's reading and counting rules, each
//! line kept as its id, its usage and its role only.
//!
//! The dataset pass keeps every row-making line's payload members for its second pass:
//! asked for the usage alone it held 4.3 GB at the peak for the 10 GB transcript (333 MB
//! at 1 GB); this pass keeps about 64 bytes a line (measured by `benches/viewer_speed.py`,
//! the server's peak RSS).

use crate::envelope::{EnvelopeRef, LineProblem};
use crate::error::CoreResult;
use crate::file_io::Source;
use crate::json::view::Entry;
use crate::replay::id::{Id, IdKeys, IdTable};

use super::lines::{likely_lines, read_lines, Keep, LineType};
use super::usage::{count, responses, said_by, Said, Stated, Totals};

/// One envelope line, as the counting rule sees it.
#[derive(Debug)]
pub struct UsageLine {
    pub id: Id,
    /// `id`'s hash, made by the thread that read the line.
    hash: u64,
    pub usage: Option<Box<Stated>>,
    /// A message line whose role is `assistant`.
    assistant: bool,
}

impl Said for UsageLine {
    fn usage(&self) -> Option<&Stated> {
        self.usage.as_deref()
    }

    fn usage_mut(&mut self) -> Option<&mut Stated> {
        self.usage.as_deref_mut()
    }

    fn assistant_message(&self) -> bool {
        self.assistant
    }
}

/// The envelope lines of a range, in file order.
#[derive(Debug)]
struct UsageLines {
    lines: Vec<UsageLine>,
    keys: IdKeys,
}

impl Keep for UsageLines {
    fn for_range(keys: &IdKeys, start: u64, stop: u64) -> Self {
        UsageLines {
            lines: Vec::with_capacity(likely_lines(start, stop)),
            keys: keys.clone(),
        }
    }

    fn note(
        &mut self,
        _line: u64,
        _offset: u64,
        raw: &[u8],
        env: Result<EnvelopeRef<'_>, LineProblem>,
        fields: &[Entry],
    ) {
        let Ok(env) = env else {
            return; // not an envelope: no line of the counting
        };
        let (usage, assistant) = said_by(LineType::of(&env.type_), raw, fields);
        self.lines.push(UsageLine {
            id: Id::from(env.id.as_ref()),
            hash: self.keys.hash(env.id.as_ref()),
            usage,
            assistant,
        });
    }

    fn set_line_count(&mut self, _lines: u64) {}

    fn append(&mut self, later: Self) {
        self.lines.extend(later.lines);
    }
}

/// What a transcript's lines add up to, and the lines its responses are counted at.
#[derive(Debug)]
pub struct UsagePass {
    pub totals: Totals,
    /// The lines that state usage or are an assistant's message (the rest counts nothing).
    lines: Vec<UsageLine>,
}

impl UsagePass {
    /// The counted responses and the lines they are counted at, in file order.
    pub fn responses(&self) -> impl Iterator<Item = (&UsageLine, &Stated)> {
        responses(&self.lines)
    }
}

/// The usage of `[0, stop)` of `src` (the bytes after the last `\n` only if
/// `final_line`), as the dataset pass of the same bytes counts it: every line that
/// parses, a later line repeating an envelope id left out.
pub fn pass<S: Source + Sync + ?Sized>(
    src: &S,
    stop: u64,
    final_line: bool,
) -> CoreResult<UsagePass> {
    let read: UsageLines = read_lines(src, stop, final_line)?;
    let mut seen = IdTable::with_capacity(read.lines.len(), read.keys.clone());
    let mut lines: Vec<UsageLine> = read
        .lines
        .into_iter()
        .filter(|l| seen.push_hashed(&l.id, l.hash).is_ok())
        .filter(|l| l.usage.is_some() || l.assistant)
        .collect();
    drop(seen);
    let totals = count(&mut lines);
    lines.retain(|l| l.usage.as_ref().is_some_and(|u| u.counted));
    Ok(UsagePass { totals, lines })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(id: &str, role: &str, usage: &str) -> String {
        format!(
            "{{\"v\":1,\"id\":\"{id}\",\"type\":\"message\",\"ts\":\"2024-01-01T00:00:00.000000Z\",\"payload\":{{\"role\":\"{role}\",\"content\":\"x\"{usage}}}}}\n"
        )
    }

    /// The dataset pass's totals and counted lines, to compare with.
    fn dataset(data: &[u8], final_line: bool) -> (Totals, Vec<String>) {
        let pass = super::super::pass(data, data.len() as u64, final_line, 1 << 20).unwrap();
        let at = pass.responses().map(|(l, _)| l.id.to_string()).collect();
        (pass.usage, at)
    }

    #[test]
    fn counts_what_the_dataset_pass_counts_on_one_thread_and_on_two() {
        let mut data = String::from(
            "{\"v\":1,\"id\":\"meta\",\"type\":\"session-meta\",\"ts\":\"2024-01-01T00:00:00.000000Z\",\"payload\":{}}\n",
        );
        let mut i = 0u32;
        // Past the size read by two threads: ids and response ids repeated across halves.
        while data.len() < (crate::replay::stream::SPLIT_MIN as usize) * 2 + 4096 {
            let usage = match i % 5 {
                0 => format!(
                    ",\"token-usage\":{{\"input\":{i},\"output\":1,\"response-id\":\"r{}\"}}",
                    i % 7919
                ),
                1 => ",\"token-usage\":{\"output\":2}".to_owned(),
                2 => String::new(),
                _ => format!(
                    ",\"token-usage\":{{\"cache-read\":{i},\"response-id\":\"s{}\"}}",
                    i / 3
                ),
            };
            let id = if i.is_multiple_of(11) {
                format!("dup{}", i % 97)
            } else {
                format!("m{i}")
            };
            let role = if i.is_multiple_of(3) {
                "user"
            } else {
                "assistant"
            };
            data.push_str(&line(&id, role, &usage));
            if i.is_multiple_of(13) {
                data.push_str("not json\n");
            }
            i += 1;
        }
        data.push_str("{\"v\":1,\"id\":\"torn\",\"type\":\"mess");
        for bytes in [data.as_bytes(), &data.as_bytes()[..4096]] {
            for final_line in [true, false] {
                let lean = pass(bytes, bytes.len() as u64, final_line).unwrap();
                let at: Vec<String> = lean.responses().map(|(l, _)| l.id.to_string()).collect();
                let (totals, want) = dataset(bytes, final_line);
                assert_eq!((lean.totals, at), (totals, want));
                assert!(totals.responses > 0 && totals.unmeasured > 0);
            }
        }
    }
}
