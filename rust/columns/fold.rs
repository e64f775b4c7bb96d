//! The fold of the dataset pass: `history.History`, rule for rule. It is lenient as
//! History is: an envelope `FoldState.check` would refuse is counted and skipped (the
//! shape checks are `replay::records::body_of`'s, the ones load makes), and it notes
//! what became of each line: which compaction or rewind removed a message, which
//! elision stubbed it last, each operation's settle, answer and grants.

use std::collections::{HashMap, HashSet};

use crate::message_rules;
use crate::replay::records::Body;

use super::lines::{Line, LineType};

/// One tool operation, in dispatch order.
#[derive(Debug)]
pub struct Op {
    /// Its `tool-dispatched` line (an index into the kept lines).
    pub dispatch: usize,
    pub settle: Option<usize>,
    /// `dispatched`, `result-recorded`, or the settle's outcome.
    pub state: &'static str,
    pub answered_by: Option<usize>,
    pub grants: Option<usize>,
}

/// What took a line's message (or summary) out of the conversation.
#[derive(Clone, Copy, Debug)]
pub struct Removal {
    pub by: usize,
    pub rewind: bool,
}

#[derive(Debug, Default)]
pub struct Fold {
    pub removed: Vec<Option<Removal>>,
    pub elided: Vec<Option<usize>>,
    pub live: Vec<bool>,
    /// Per rewind line, how many entries it took out.
    pub rewound: Vec<u64>,
    pub ops: Vec<Op>,
    /// The grants line in force at the end.
    pub in_force: Option<usize>,
    /// Envelopes the fold refused.
    pub refused: u64,
}

struct State<'a> {
    lines: &'a [Line],
    /// (line, sticky) of each live entry.
    live: Vec<(usize, bool)>,
    position: Option<HashMap<&'a str, usize>>,
    pending: HashMap<&'a str, usize>,
    settled: HashSet<&'a str>,
    unanswered: HashMap<&'a str, Vec<usize>>,
    grants: Option<usize>,
}

impl<'a> State<'a> {
    fn position(&mut self, id: &str) -> Option<usize> {
        let lines = self.lines;
        let live = &self.live;
        let index = self.position.get_or_insert_with(|| {
            live.iter()
                .enumerate()
                .filter_map(|(at, &(line, _))| lines.get(line).map(|l| (l.id.as_str(), at)))
                .collect()
        });
        index.get(id).copied()
    }

    /// `FoldState.check`: whether the line at `i` can be applied.
    fn accepts(&mut self, line: &'a Line) -> bool {
        match &line.body {
            Body::Message(m) => m.is_ok(),
            Body::Grants(g) => g.is_ok(),
            Body::Compaction(Ok(c)) => self.position(c.through.as_str()).is_some(),
            Body::Elision(Ok(items)) => items.iter().all(|item| {
                item.as_ref()
                    .is_some_and(|(id, _)| self.position(id.as_str()).is_some())
            }),
            Body::Rewind(Ok(to)) => to
                .as_ref()
                .is_none_or(|id| self.position(id.as_str()).is_some()),
            Body::Dispatched(d) => d.is_ok(),
            Body::Settled(Ok(s)) => {
                let op = s.op_id.as_str();
                !self.settled.contains(op)
                    && self.pending.contains_key(op)
                    && s.artifact_problem.is_none()
            }
            Body::Compaction(Err(_))
            | Body::Elision(Err(_))
            | Body::Rewind(Err(_))
            | Body::Settled(Err(_)) => false,
            Body::RunContext(_) | Body::Other => true,
        }
    }
}

/// Fold the kept lines (no two with one id) in order.
pub fn fold(lines: &[Line]) -> Fold {
    let n = lines.len();
    let mut out = Fold {
        removed: vec![None; n],
        elided: vec![None; n],
        live: vec![false; n],
        rewound: vec![0; n],
        ..Default::default()
    };
    // Sized at once: growing them rehashed every key at each doubling, which was most of
    // the fold's hashing on the realistic 256 MB file (`perf record`).
    let messages = lines.iter().filter(|l| l.kind == LineType::Message).count();
    let dispatches = lines
        .iter()
        .filter(|l| l.kind == LineType::Dispatched)
        .count();
    let mut st = State {
        lines,
        live: Vec::with_capacity(messages),
        position: Some(HashMap::with_capacity(messages)),
        pending: HashMap::with_capacity(dispatches),
        settled: HashSet::with_capacity(dispatches),
        unanswered: HashMap::with_capacity(dispatches),
        grants: None,
    };
    for (i, line) in lines.iter().enumerate() {
        if !st.accepts(line) {
            out.refused += 1;
            continue;
        }
        match &line.body {
            Body::Message(Ok(m)) => {
                if let Some(index) = st.position.as_mut() {
                    index.insert(line.id.as_str(), st.live.len());
                }
                st.live.push((i, m.sticky));
                if let Some(call) = m.tool_call_id.as_ref() {
                    for op in st.unanswered.remove(call.as_str()).unwrap_or_default() {
                        if let Some(op) = out.ops.get_mut(op) {
                            op.answered_by = Some(i);
                            if op.state == "dispatched" {
                                op.state = "result-recorded";
                            }
                        }
                    }
                }
            }
            Body::Compaction(Ok(c)) => {
                let cut = st.position(c.through.as_str()).unwrap_or(0);
                for &(entry, sticky) in st.live.iter().take(cut + 1) {
                    if !sticky {
                        if let Some(r) = out.removed.get_mut(entry) {
                            *r = Some(Removal {
                                by: i,
                                rewind: false,
                            });
                        }
                    }
                }
                message_rules::compact(&mut st.live, cut, (i, false), |&(_, sticky)| sticky);
                st.position = None;
            }
            Body::Rewind(Ok(to)) => {
                let end = match to {
                    None => 0,
                    Some(id) => st.position(id.as_str()).map_or(0, |p| p + 1),
                };
                for &(entry, _) in st.live.iter().skip(end) {
                    if let Some(r) = out.removed.get_mut(entry) {
                        *r = Some(Removal {
                            by: i,
                            rewind: true,
                        });
                    }
                }
                if let Some(count) = out.rewound.get_mut(i) {
                    *count = st.live.len().saturating_sub(end) as u64;
                }
                st.live.truncate(end);
                st.position = None;
            }
            Body::Elision(Ok(items)) => {
                for (id, _) in items.iter().flatten() {
                    if let Some(at) = st.position(id.as_str()) {
                        if let Some(&(entry, _)) = st.live.get(at) {
                            if let Some(e) = out.elided.get_mut(entry) {
                                *e = Some(i);
                            }
                        }
                    }
                }
            }
            Body::Grants(Ok(_)) => st.grants = Some(i),
            Body::Dispatched(Ok(call)) => {
                st.pending.insert(line.id.as_str(), out.ops.len());
                st.unanswered
                    .entry(call.as_str())
                    .or_default()
                    .push(out.ops.len());
                out.ops.push(Op {
                    dispatch: i,
                    settle: None,
                    state: "dispatched",
                    answered_by: None,
                    grants: st.grants,
                });
            }
            Body::Settled(Ok(s)) => {
                let op_id = s.op_id.as_str();
                if let Some(at) = st.pending.remove(op_id) {
                    if let Some(op) = out.ops.get_mut(at) {
                        op.settle = Some(i);
                        op.state = line.settle.as_ref().map_or("", |s| s.outcome);
                    }
                }
                st.settled.insert(op_id);
            }
            _ => {}
        }
    }
    for &(entry, _) in &st.live {
        if let Some(l) = out.live.get_mut(entry) {
            *l = true;
        }
    }
    out.in_force = st.grants;
    out
}
