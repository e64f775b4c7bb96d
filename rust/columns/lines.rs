//! The dataset's first pass: every line of the range read once and validated as peek's
//! scan validates it (`scan.rs`), reduced to what the fold needs and to the few values
//! the rows take from lines other than their own (a settle's outcome, a grants
//! snapshot). Two threads for a big range, meeting at a line boundary.

use crate::envelope::{
    parse_envelope_fields, parse_envelope_fields_at_start, EnvelopeRef, LineProblem,
};
use crate::error::{CoreError, CoreResult};
use crate::file_io::Source;
use crate::json::grammar::{is_blank, Kind, Span};
use crate::json::view::{self as json_view, Entry};
use crate::replay::id::{Id, IdKeys};
use crate::replay::records::{body_of, Body};
use crate::replay::stream::{line_start_after, LineReader, SPLIT_MIN};
use crate::scan::end_of_last_line;

use super::usage::{said_by, Stated};
use super::values::{float64, json_value, string, ts_micros};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineType {
    Meta,
    Message,
    Compaction,
    Rewind,
    Grants,
    Elision,
    Dispatched,
    Settled,
    RunContext,
    Other,
}

impl LineType {
    pub(crate) fn of(type_: &str) -> Self {
        match type_ {
            "session-meta" => LineType::Meta,
            "message" => LineType::Message,
            "compaction" => LineType::Compaction,
            "rewind" => LineType::Rewind,
            "grants" => LineType::Grants,
            "elision" => LineType::Elision,
            "tool-dispatched" => LineType::Dispatched,
            "tool-settled" => LineType::Settled,
            "run-context" => LineType::RunContext,
            _ => LineType::Other,
        }
    }
}

/// What a `tool-settled` line gives its operation's row.
#[derive(Debug)]
pub struct Settle {
    pub outcome: &'static str,
    pub duration: Option<f64>,
    pub error: Option<String>,
    pub reason: Option<String>,
}

/// One envelope line, reduced.
#[derive(Debug)]
pub struct Line {
    pub line: u64,
    pub offset: u64,
    pub len: u64,
    pub id: Id,
    /// `id`'s hash with [`Part::keys`], made by the thread that read the line.
    pub hash: u64,
    pub kind: LineType,
    pub ts: Option<i64>,
    pub payload: Span,
    pub body: Body,
    /// A message's string `model` extra, or a run-context's `model` fact.
    pub model: Option<String>,
    pub settle: Option<Box<Settle>>,
    /// A grants line's snapshot as JSON text (None: absent or null).
    pub grants: Option<String>,
    /// Where the payload's members are in [`Part::fields`] (lines that make rows only):
    /// the second pass finds every value by them, without walking the payload again.
    pub fields: (u32, u32),
    /// A message line's `token-usage` (`usage.rs`).
    pub usage: Option<Box<Stated>>,
    /// A message line whose role is `assistant` (one without usage is a response unmeasured).
    pub assistant: bool,
}

/// The first non-blank line of the range.
#[derive(Debug, Default)]
pub enum First {
    #[default]
    Nothing,
    Problem,
    /// Its type, and for a session-meta line its ts and payload's JSON text.
    Envelope {
        type_: String,
        meta: Option<(String, String)>,
    },
}

#[derive(Debug, Default)]
pub struct Part {
    pub lines: Vec<Line>,
    /// The keys every line's id hash is made with (one set for both threads).
    pub keys: IdKeys,
    /// The payload members of the lines that make rows, one after the other.
    pub fields: Vec<Entry>,
    /// Lines that are not envelopes.
    pub skipped: u64,
    /// Lines read (blank ones included).
    pub line_count: u64,
    pub first: First,
}

const OUTCOMES: [&str; 3] = ["completed", "failed", "outcome-unknown"];

/// What a read of lines keeps of each: the dataset's [`Part`], or the usage pass's
/// (`usage_pass.rs`). Each thread fills one for its range; the later range's is then
/// appended to the earlier's.
pub trait Keep: Sized + Send {
    /// An empty one for the range `[start, stop)`, its ids hashed with `keys`.
    fn for_range(keys: &IdKeys, start: u64, stop: u64) -> Self;
    /// One non-blank line: an envelope, or a problem.
    fn note(
        &mut self,
        line: u64,
        offset: u64,
        raw: &[u8],
        env: Result<EnvelopeRef<'_>, LineProblem>,
        fields: &[Entry],
    );
    /// How many lines the range held (blank ones included), once read.
    fn set_line_count(&mut self, lines: u64);
    /// The range read after this one's (its line numbers count from its own start).
    fn append(&mut self, later: Self);
}

/// Read `[0, stop)` (the bytes after the last `\n` only if `final_line`).
pub fn read_lines<K: Keep, S: Source + Sync + ?Sized>(
    src: &S,
    stop: u64,
    final_line: bool,
) -> CoreResult<K> {
    let end = end_of_last_line(src, 0, stop)?;
    let stop = if final_line { stop } else { end };
    let split = if stop >= SPLIT_MIN {
        line_start_after(src, stop / 2, stop)?
    } else {
        stop
    };
    let keys = IdKeys::new();
    if split >= stop {
        return read_part(src, 0, stop, &keys);
    }
    let (first, second) = std::thread::scope(|scope| {
        let worker = scope.spawn(|| read_part(src, split, stop, &keys));
        (read_part::<K, S>(src, 0, split, &keys), worker.join())
    });
    let mut first = first?;
    let second = second.map_err(|_| {
        CoreError::Io(std::io::Error::other(
            "the dataset pass's second thread failed",
        ))
    })??;
    first.append(second);
    Ok(first)
}

/// A file of 2 KiB lines (what agent transcripts average) holds this many lines in
/// `[start, stop)`, at most 4M: the room a range's lines start with (growing from
/// empty copies the list at each doubling).
pub fn likely_lines(start: u64, stop: u64) -> usize {
    usize::try_from(stop.saturating_sub(start) / 2048)
        .unwrap_or(0)
        .min(1 << 22)
}

impl Keep for Part {
    fn for_range(keys: &IdKeys, start: u64, stop: u64) -> Self {
        Part {
            lines: Vec::with_capacity(likely_lines(start, stop)),
            keys: keys.clone(),
            ..Default::default()
        }
    }

    fn note(
        &mut self,
        line: u64,
        offset: u64,
        raw: &[u8],
        env: Result<EnvelopeRef<'_>, LineProblem>,
        fields: &[Entry],
    ) {
        note(self, line, offset, raw, env, fields);
    }

    fn set_line_count(&mut self, lines: u64) {
        self.line_count = lines;
    }

    fn append(&mut self, later: Self) {
        let shift = self.line_count;
        let base = u32::try_from(self.fields.len()).unwrap_or(u32::MAX);
        self.lines.extend(later.lines.into_iter().map(|mut l| {
            l.line += shift;
            l.fields.0 = l.fields.0.saturating_add(base);
            l
        }));
        self.fields.extend(later.fields);
        self.skipped += later.skipped;
        self.line_count += later.line_count;
        if matches!(self.first, First::Nothing) {
            self.first = later.first;
        }
    }
}

fn read_part<K: Keep, S: Source + ?Sized>(
    src: &S,
    start: u64,
    stop: u64,
    keys: &IdKeys,
) -> CoreResult<K> {
    let mut reader = LineReader::new(src, start, stop);
    let mut fields = Vec::new();
    let mut part = K::for_range(keys, start, stop);
    loop {
        // A line parsed where it starts in the read buffer, its end found by the parse
        // (as the replay reads, `replay::records::record_at_start`); where that does not
        // settle it, the line is cut at its newline first.
        let fast = reader.buffered().and_then(|(line, offset, rest)| {
            let (env, len) = parse_envelope_fields_at_start(rest, &mut fields)?;
            part.note(
                line,
                offset,
                rest.get(..len).unwrap_or_default(),
                env,
                &fields,
            );
            Some(len)
        });
        if let Some(len) = fast {
            reader.skip_line(len);
            continue;
        }
        let Some((line, offset, raw)) = reader.next_line()? else {
            break;
        };
        if is_blank(raw) {
            continue;
        }
        let env = parse_envelope_fields(raw, offset, &mut fields);
        part.note(line, offset, raw, env, &fields);
    }
    part.set_line_count(reader.lines);
    Ok(part)
}

/// Add one non-blank line to `part`: a problem, or its [`Line`].
fn note(
    part: &mut Part,
    line: u64,
    offset: u64,
    raw: &[u8],
    env: Result<EnvelopeRef<'_>, LineProblem>,
    fields: &[Entry],
) {
    match env {
        Err(_) => {
            part.skipped += 1;
            if matches!(part.first, First::Nothing) {
                part.first = First::Problem;
            }
        }
        Ok(env) => {
            let kind = LineType::of(&env.type_);
            if matches!(part.first, First::Nothing) {
                let meta = (kind == LineType::Meta).then(|| {
                    let payload = raw.get(env.payload.0..env.payload.1).unwrap_or_default();
                    (
                        env.ts.to_string(),
                        String::from_utf8_lossy(payload).into_owned(),
                    )
                });
                part.first = First::Envelope {
                    type_: env.type_.to_string(),
                    meta,
                };
            }
            let get = |key: &str| json_view::get(raw, fields, key);
            let model = match kind {
                LineType::Message => string(raw, get("model")).map(|m| m.into_owned()),
                LineType::RunContext => model_fact(raw, fields),
                _ => None,
            };
            let settle = (kind == LineType::Settled).then(|| {
                let outcome = string(raw, get("outcome"));
                Box::new(Settle {
                    outcome: OUTCOMES
                        .iter()
                        .find(|o| outcome.as_deref() == Some(**o))
                        .copied()
                        .unwrap_or(""),
                    duration: float64(raw, get("duration")),
                    error: string(raw, get("error")).map(|s| s.into_owned()),
                    reason: string(raw, get("reason")).map(|s| s.into_owned()),
                })
            });
            let (usage, assistant) = said_by(kind, raw, fields);
            let grants = if kind == LineType::Grants {
                json_value(raw, get("grants")).map(|t| String::from_utf8_lossy(t).into_owned())
            } else {
                None
            };
            let kept = if makes_rows(kind) {
                let at = u32::try_from(part.fields.len()).unwrap_or(u32::MAX);
                part.fields.extend_from_slice(fields);
                (at, u32::try_from(fields.len()).unwrap_or(0))
            } else {
                (0, 0)
            };
            part.lines.push(Line {
                line,
                offset,
                len: raw.len() as u64,
                id: Id::from(env.id.as_ref()),
                hash: part.keys.hash(env.id.as_ref()),
                kind,
                ts: ts_micros(&env.ts),
                payload: env.payload,
                // A run-context's sections are nothing to the dataset's fold: not walked.
                body: if kind == LineType::RunContext {
                    Body::RunContext(Vec::new())
                } else {
                    body_of(raw, &env.type_, fields)
                },
                model,
                settle,
                grants,
                fields: kept,
                usage,
                assistant,
            });
        }
    }
}

/// Whether lines of this type are rows of a table (and need their payload's members again).
fn makes_rows(kind: LineType) -> bool {
    matches!(
        kind,
        LineType::Message
            | LineType::Compaction
            | LineType::Rewind
            | LineType::Grants
            | LineType::Dispatched
    )
}

/// The first `["model", <string>]` of a run-context's `facts`.
fn model_fact(raw: &[u8], fields: &[Entry]) -> Option<String> {
    let facts = json_view::get(raw, fields, "facts").filter(|f| f.kind == Kind::Array)?;
    json_view::elements(raw, facts)?
        .into_iter()
        .find_map(|fact| {
            let pair = json_view::elements(raw, fact).filter(|_| fact.kind == Kind::Array)?;
            match pair.as_slice() {
                [name, value] if json_view::text(raw, *name).as_deref() == Some("model") => {
                    json_view::text(raw, *value).map(|v| v.into_owned())
                }
                _ => None,
            }
        })
}
