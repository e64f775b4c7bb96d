//! Token usage in the dataset pass: each message line's `token-usage` extra, and the
//! counting rule over a transcript's lines, the twin of `count_lines` and
//! `Usage.from_json` in `python/llm_agent_session/usage.py` (that module's doc states
//! the rule): the lines naming one `response-id` are one response, counted at the last
//! of them; a line naming none is a response of its own; a figure is an integer from 0
//! to `i64::MAX`; a total is held at `i64::MAX`.

use std::collections::HashSet;

use crate::json::grammar::Kind;
use crate::json::view::{self as json_view, Entry};

use super::lines::{Line, LineType};
use super::values::{int64, string};

/// The figures, in the order of the columns and of `Usage`'s fields.
pub const FIGURES: [&str; 4] = ["input", "output", "cache-read", "cache-write"];

/// What a message line's `token-usage` states.
#[derive(Debug)]
pub struct Stated {
    /// input, output, cache-read, cache-write.
    pub figures: [Option<i64>; 4],
    pub response_id: Option<String>,
    /// Whether this is the line its response is counted at (set by [`count`]).
    pub counted: bool,
}

impl Stated {
    fn states_none(&self) -> bool {
        self.figures.iter().all(Option::is_none)
    }
}

/// `Usage.from_json(payload.get("token-usage"))`: None unless the (last) member is an
/// object; a figure that is not an integer from 0 to `i64::MAX`, or an id that is not a
/// non-empty string, is not stated.
pub fn stated(raw: &[u8], payload: &[Entry]) -> Option<Box<Stated>> {
    let value = json_view::get(raw, payload, "token-usage").filter(|v| v.kind == Kind::Object)?;
    let members = json_view::members(raw, value).unwrap_or_default();
    let get = |key: &str| json_view::get(raw, &members, key);
    let mut figures = [None; 4];
    for (slot, key) in figures.iter_mut().zip(FIGURES) {
        *slot = int64(raw, get(key)).filter(|v| *v >= 0);
    }
    let response_id = string(raw, get("response-id"))
        .filter(|s| !s.is_empty())
        .map(|s| s.into_owned());
    Some(Box::new(Stated {
        figures,
        response_id,
        counted: false,
    }))
}

/// What a line of `kind` says to the counting: a message line's usage (`stated`), and
/// whether it is an assistant's message; nothing for any other line.
pub fn said_by(kind: LineType, raw: &[u8], payload: &[Entry]) -> (Option<Box<Stated>>, bool) {
    if kind != LineType::Message {
        return (None, false);
    }
    let role = json_view::get(raw, payload, "role").and_then(|r| json_view::text(raw, r));
    (stated(raw, payload), role.as_deref() == Some("assistant"))
}

/// What a transcript's lines add up to (`usage.UsageTotals`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    pub figures: [Option<i64>; 4],
    pub responses: u64,
    pub unmeasured: u64,
}

impl Totals {
    fn add(&mut self, stated: &Stated) {
        for (total, figure) in self.figures.iter_mut().zip(stated.figures) {
            if let Some(f) = figure {
                *total = Some(total.map_or(f, |t| t.saturating_add(f)));
            }
        }
        self.responses += 1;
        if stated.states_none() {
            self.unmeasured += 1;
        }
    }
}

/// A line as the counting rule sees it: its usage, and whether it is an assistant's
/// message (one that states none is a response unmeasured).
pub trait Said {
    fn usage(&self) -> Option<&Stated>;
    fn usage_mut(&mut self) -> Option<&mut Stated>;
    fn assistant_message(&self) -> bool;
}

impl Said for Line {
    fn usage(&self) -> Option<&Stated> {
        self.usage.as_deref()
    }

    fn usage_mut(&mut self) -> Option<&mut Stated> {
        self.usage.as_deref_mut()
    }

    fn assistant_message(&self) -> bool {
        self.kind == LineType::Message && self.assistant
    }
}

/// Mark each line's usage counted or not (`count_lines`) and add up the counted ones.
pub fn count<L: Said>(lines: &mut [L]) -> Totals {
    let mut flags = vec![false; lines.len()];
    let mut seen: HashSet<&str> = HashSet::new();
    for (flag, line) in flags.iter_mut().zip(lines.iter()).rev() {
        if let Some(stated) = line.usage() {
            *flag = match stated.response_id.as_deref() {
                None => true,
                Some(id) => seen.insert(id),
            };
        }
    }
    drop(seen);
    let mut totals = Totals::default();
    for (line, flag) in lines.iter_mut().zip(flags) {
        let silent = line.assistant_message();
        match line.usage_mut() {
            Some(stated) => {
                stated.counted = flag;
                if flag {
                    totals.add(stated);
                }
            }
            None if silent => totals.unmeasured += 1,
            None => {}
        }
    }
    totals
}

/// The counted responses and the lines they are counted at, in file order.
pub fn responses<L: Said>(lines: &[L]) -> impl Iterator<Item = (&L, &Stated)> {
    lines
        .iter()
        .filter_map(|l| Some((l, l.usage()?)))
        .filter(|(_, s)| s.counted)
}

/// The stable hash a response id is kept under beside the envelope ids (`Pass::id_digest`):
/// FNV-1a of `response-id`, NUL, then the id's bytes, so that it is told from an envelope id's.
pub fn id_hash(id: &str) -> u64 {
    super::fnv1a_from(
        super::fnv1a_from(super::FNV_OFFSET, b"response-id\0"),
        id.as_bytes(),
    )
}
