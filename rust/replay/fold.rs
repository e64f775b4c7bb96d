//! The replay fold over records: `FoldState.check`/`apply` and the duplicate-id and
//! first-line rules of `_replay` in `_pure/replay.py`, reason for reason.
//!
//! It tracks where things are, not what they are: live messages are line
//! references (plus an elision stub's place), pending operations are the lines
//! that dispatched them. `py/survivors.rs` turns the survivors into Python objects.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};

use crate::error::{CoreFailure, FailureKind};
use crate::json::grammar::Span;
use crate::message_rules;
use crate::replay::records::{BadLine, Body, Record};

/// A line of the file: where it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineRef {
    pub offset: u64,
    pub len: u64,
}

/// A value inside a line: the line, and the value's span in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ValueRef {
    pub line: LineRef,
    pub span: Span,
}

/// Where a live message comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MessageSource {
    /// A `message` line: the Message its payload makes.
    Line { line: LineRef, payload: Span },
    /// A compaction's summary: `Message("user", summary)`.
    Summary(ValueRef),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveMessage {
    pub id: String,
    pub source: MessageSource,
    pub sticky: bool,
    /// The last elision stub that replaced its content.
    pub stub: Option<ValueRef>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PendingOp {
    pub op_id: String,
    pub call_id: String,
    pub line: LineRef,
    pub payload: Span,
    /// `result-recorded` rather than `dispatched`.
    pub recorded: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SectionRef {
    pub digest: String,
    pub text: ValueRef,
    /// Id of the line that carries it.
    pub line_id: String,
}

/// The fold's state; after the last line, what replay ends in.
#[derive(Debug, Default)]
pub struct Fold {
    /// Every envelope in file order (the lazy `events`).
    pub events: Vec<LineRef>,
    /// The session-meta line and its payload.
    pub meta: Option<ValueRef>,
    pub live: Vec<LiveMessage>,
    /// id -> position in `live`; rebuilt on demand after a compaction.
    index: Option<HashMap<String, usize>>,
    pub grants: Option<ValueRef>,
    /// File order; `None` once settled.
    pending: Vec<Option<PendingOp>>,
    pending_at: HashMap<String, usize>,
    pub settled: Vec<String>,
    settled_set: HashSet<String>,
    /// call id -> op ids still `dispatched`.
    waiting_by_call: HashMap<String, Vec<String>>,
    pub sections: Vec<SectionRef>,
    section_digests: HashSet<String>,
    /// Every envelope id -> its index in `events` (also the duplicate-id check):
    /// `Session.message_extra` finds a line by id without reading the file again.
    pub envelope_at: HashMap<String, usize>,
}

fn fail(kind: FailureKind, rec: &Record, reason: impl Into<String>) -> CoreFailure {
    CoreFailure {
        kind,
        line: rec.line,
        offset: rec.offset,
        reason: reason.into(),
    }
}

fn show(s: &str) -> String {
    crate::envelope::chars(s, 80)
}

impl Fold {
    pub fn new() -> Self {
        Self::for_size(0)
    }

    /// A fold for a file of `size` bytes: the id set starts at the size a file of
    /// 2 KiB lines needs (agent transcripts average about that). Growing it from
    /// empty re-hashed every id at each doubling (SipHash: an insert cost ~890
    /// instructions, ~6% of a replay, callgrind).
    pub fn for_size(size: u64) -> Self {
        let expected_lines = usize::try_from(size / 2048).unwrap_or(0).min(1 << 22);
        Fold {
            index: Some(HashMap::new()),
            envelope_at: HashMap::with_capacity(expected_lines),
            ..Default::default()
        }
    }

    /// Pending operations in file order.
    pub fn pending(&self) -> impl Iterator<Item = &PendingOp> {
        self.pending.iter().flatten()
    }

    /// A line the parse refused: always the end of the replay.
    pub fn refuse(&self, bad: BadLine) -> CoreFailure {
        let BadLine {
            line,
            offset,
            problem,
            ..
        } = bad;
        if self.events.is_empty() && problem.kind != FailureKind::Version {
            return CoreFailure {
                kind: FailureKind::NotATranscript,
                line,
                offset,
                reason: format!(
                    "the first line is not a session-meta envelope ({})",
                    problem.reason
                ),
            };
        }
        CoreFailure {
            kind: problem.kind,
            line,
            offset,
            reason: problem.reason,
        }
    }

    /// The reference's verdict when the file held no envelope at all.
    pub fn finish(&self, size: u64) -> Result<(), CoreFailure> {
        if !self.events.is_empty() {
            return Ok(());
        }
        let reason = if size == 0 {
            "the file is empty"
        } else {
            "the file holds only blank lines"
        };
        Err(CoreFailure {
            kind: FailureKind::NotATranscript,
            line: 0,
            offset: 0,
            reason: reason.to_owned(),
        })
    }

    fn position(&mut self, id: &str) -> Option<usize> {
        let live = &self.live;
        let index = self.index.get_or_insert_with(|| {
            live.iter()
                .enumerate()
                .map(|(i, m)| (m.id.clone(), i))
                .collect()
        });
        index.get(id).copied()
    }

    /// Check one envelope against the state, then fold it in.
    pub fn feed(&mut self, rec: Record) -> Result<(), CoreFailure> {
        let line = LineRef {
            offset: rec.offset,
            len: rec.len,
        };
        if self.events.is_empty() {
            if rec.type_ != "session-meta" {
                return Err(fail(
                    FailureKind::NotATranscript,
                    &rec,
                    format!(
                        "the first line is a {} envelope, not a session-meta",
                        crate::envelope::chars(&rec.type_, 40)
                    ),
                ));
            }
            self.meta = Some(ValueRef {
                line,
                span: rec.payload,
            });
        }
        // One hash per line: the reference adds the id before its fold check too.
        let next = self.events.len();
        if let Entry::Vacant(slot) = self.envelope_at.entry(rec.id.clone()) {
            slot.insert(next);
        } else {
            return Err(fail(
                FailureKind::Corrupt,
                &rec,
                format!(
                    "duplicate envelope id {} (an earlier line has it)",
                    show(&rec.id)
                ),
            ));
        }
        self.check(&rec)?;
        self.events.push(line);
        self.apply(rec, line);
        Ok(())
    }

    fn check(&mut self, rec: &Record) -> Result<(), CoreFailure> {
        let corrupt = |reason: &str| Err(fail(FailureKind::Corrupt, rec, reason));
        match &rec.body {
            Body::Message(Err(r))
            | Body::Grants(Err(r))
            | Body::Compaction(Err(r))
            | Body::Elision(Err(r))
            | Body::Dispatched(Err(r))
            | Body::Settled(Err(r))
            | Body::Rewind(Err(r)) => corrupt(r),
            Body::Rewind(Ok(Some(to))) => {
                if self.position(to).is_none() {
                    return Err(fail(
                        FailureKind::Dangling,
                        rec,
                        format!(
                            "rewind to-id {} names no message in the live conversation",
                            show(to)
                        ),
                    ));
                }
                Ok(())
            }
            Body::Compaction(Ok(c)) => {
                if self.position(&c.through).is_none() {
                    return Err(fail(
                        FailureKind::Dangling,
                        rec,
                        format!(
                            "compaction replaces-through-id {} names no message in the live conversation",
                            show(&c.through)
                        ),
                    ));
                }
                Ok(())
            }
            Body::Elision(Ok(items)) => {
                for item in items {
                    let Some((id, _)) = item else {
                        return corrupt(
                            "elision item is not an object with a string id and a stub",
                        );
                    };
                    if self.position(id).is_none() {
                        return Err(fail(
                            FailureKind::Dangling,
                            rec,
                            format!(
                                "elision names {}, which is not in the live conversation",
                                show(id)
                            ),
                        ));
                    }
                }
                Ok(())
            }
            Body::Settled(Ok(s)) => {
                // A pending operation is never settled (ids are unique): the settled
                // set is asked only to word the refusal.
                if !self.pending_at.contains_key(&s.op_id) {
                    let why = if self.settled_set.contains(&s.op_id) {
                        "is already settled"
                    } else {
                        "was never dispatched"
                    };
                    return Err(fail(
                        FailureKind::UnknownOp,
                        rec,
                        format!(
                            "tool-settled names operation {}, which {why}",
                            show(&s.op_id)
                        ),
                    ));
                }
                match &s.artifact_problem {
                    Some(problem) => corrupt(problem),
                    None => Ok(()),
                }
            }
            _ => Ok(()),
        }
    }

    fn apply(&mut self, rec: Record, line: LineRef) {
        let Record {
            id, payload, body, ..
        } = rec;
        match body {
            Body::Message(Ok(m)) => {
                if let Some(index) = &mut self.index {
                    index.insert(id.clone(), self.live.len());
                }
                self.live.push(LiveMessage {
                    id,
                    source: MessageSource::Line { line, payload },
                    sticky: m.sticky,
                    stub: None,
                });
                if let Some(call_id) = m.tool_call_id {
                    if let Some(waiting) = self.waiting_by_call.remove(&call_id) {
                        for op_id in waiting {
                            if let Some(Some(op)) = self
                                .pending_at
                                .get(&op_id)
                                .and_then(|&i| self.pending.get_mut(i))
                            {
                                op.recorded = true;
                            }
                        }
                    }
                }
            }
            Body::Compaction(Ok(c)) => {
                // check() found it; the bound only keeps split_off from ever panicking.
                let Some(cut) = self.position(&c.through).filter(|&i| i < self.live.len()) else {
                    return;
                };
                let summary = LiveMessage {
                    id,
                    source: MessageSource::Summary(ValueRef {
                        line,
                        span: c.summary,
                    }),
                    sticky: false,
                    stub: None,
                };
                message_rules::compact(&mut self.live, cut, summary, |m| m.sticky);
                self.index = None;
            }
            Body::Rewind(Ok(to)) => {
                // SPEC 10.1: the live list ends with `to` (None: nothing is left).
                let keep = match to {
                    None => 0,
                    Some(to) => self.position(&to).map_or(self.live.len(), |i| i + 1),
                };
                self.live.truncate(keep);
                self.index = None;
            }
            Body::Elision(Ok(items)) => {
                for (target, stub) in items.into_iter().flatten() {
                    if let Some(pos) = self.position(&target) {
                        if let Some(m) = self.live.get_mut(pos) {
                            m.stub = Some(ValueRef { line, span: stub });
                        }
                    }
                }
            }
            Body::Grants(Ok(span)) => self.grants = Some(ValueRef { line, span }),
            Body::Dispatched(Ok(call_id)) => {
                self.waiting_by_call
                    .entry(call_id.clone())
                    .or_default()
                    .push(id.clone());
                self.pending_at.insert(id.clone(), self.pending.len());
                self.pending.push(Some(PendingOp {
                    op_id: id,
                    call_id,
                    line,
                    payload,
                    recorded: false,
                }));
            }
            Body::Settled(Ok(s)) => {
                let op = self
                    .pending_at
                    .remove(&s.op_id)
                    .and_then(|i| self.pending.get_mut(i))
                    .and_then(Option::take);
                if let Some(op) = op {
                    if let Some(waiting) = self.waiting_by_call.get_mut(&op.call_id) {
                        if let Some(at) = waiting.iter().position(|w| *w == s.op_id) {
                            waiting.remove(at);
                            if waiting.is_empty() {
                                self.waiting_by_call.remove(&op.call_id);
                            }
                        }
                    }
                }
                self.settled_set.insert(s.op_id.clone());
                self.settled.push(s.op_id);
            }
            Body::RunContext(sections) => {
                for section in sections {
                    if self.section_digests.insert(section.digest.clone()) {
                        self.sections.push(SectionRef {
                            digest: section.digest,
                            text: ValueRef {
                                line,
                                span: section.text,
                            },
                            line_id: id.clone(),
                        });
                    }
                }
            }
            _ => {}
        }
    }
}
