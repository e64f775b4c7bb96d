//! The replay fold over records: `FoldState.check`/`apply` and the duplicate-id and
//! first-line rules of `_replay` in `_pure/replay.py`, reason for reason.
//!
//! It tracks where things are, not what they are: live messages are line
//! references (plus an elision stub's place), pending operations are the lines
//! that dispatched them. `py/survivors.rs` turns the survivors into Python objects.

use std::collections::hash_map::Entry;
use std::collections::HashMap;

use crate::error::{CoreFailure, FailureKind};
use crate::index::lines::Lines;
use crate::index::track::Track;
use crate::json::grammar::Span;
use crate::message_rules;
use crate::replay::id::{Id, IdKeys, IdTable};
use crate::replay::narrow::Narrow;
use crate::replay::records::{BadLine, Body, Record};

pub use crate::file_io::LineRef;

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
    pub id: Id,
    /// Index of its line in `Fold::events`.
    pub event: usize,
    pub source: MessageSource,
    pub sticky: bool,
    /// The last elision stub that replaced its content, and that elision's index in
    /// `Fold::events`.
    pub stub: Option<(ValueRef, usize)>,
}

/// An operation dispatched and not settled. Its op id is its dispatch envelope's id
/// (`envelope_at`, by `event`), not kept again here: an inline `Id` took 40 of the
/// 104 bytes of each dispatch's place in `Fold::pending` (124,771 of them at 1 GB).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PendingOp {
    /// Index of its `tool-dispatched` line in `Fold::events`.
    pub event: usize,
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
    pub line_id: Id,
    /// Index of that line in `Fold::events`.
    pub event: usize,
}

/// The extras of every message line, by the line's index in `events`, kept from the
/// load (`Session.message_extra` answers what the line held then, whatever happens to
/// the file since, and reads nothing). A few bytes a message line, plus its extras.
#[derive(Debug, Default)]
pub struct MessageExtras {
    /// The message lines' indices in `events`, in file order.
    events: Narrow,
    /// Where each one's extras end in `text`; they start where the previous ones end
    /// (the same place: a message without extras).
    ends: Narrow,
    /// The extras objects' texts, one after another.
    text: Vec<u8>,
}

impl MessageExtras {
    /// Note the message line at `event` (after every earlier one) and its extras.
    pub fn push(&mut self, event: usize, extras: Option<&[u8]>) {
        self.text.extend_from_slice(extras.unwrap_or_default());
        self.events.push(event);
        self.ends.push(self.text.len());
    }

    /// How many message lines it holds.
    pub fn len(&self) -> usize {
        self.events.len()
    }

    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// The extras text of the message line at `event` (empty when it has none); None
    /// when that envelope is not a message line.
    pub fn get(&self, event: usize) -> Option<&[u8]> {
        let at = self.events.find_sorted(event)?;
        let start = if at == 0 { 0 } else { self.ends.get(at - 1)? };
        self.text.get(start..self.ends.get(at)?)
    }
}

/// What an envelope is to the fold, by its index in `events`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Slot {
    #[default]
    Nothing,
    /// A message (or a compaction's summary) that was put at this place in `live`;
    /// still there only if `live[place].event` is this envelope.
    Live(usize),
    /// A `tool-dispatched` line: its place in `pending`.
    Op(usize),
}

/// A dispatched operation, in file order.
#[derive(Debug)]
pub(crate) struct PendingSlot {
    /// `None` once settled.
    pub(crate) op: Option<PendingOp>,
    /// The operation dispatched before it with the same call id, while that call
    /// was waiting for its `tool` message.
    pub(crate) same_call_before: Option<usize>,
}

/// What a fold resumed from a side index (`index::resume`) knows of the envelopes the
/// index holds: the few the fold can still name, by id. Those ids are not in
/// `Fold::envelope_at`, which holds the ids read since; whether a later id repeats an
/// earlier one, or a settle names an operation settled before, is told after the
/// fold, from the index's fingerprints (`index::resume`).
#[derive(Debug, Default)]
pub struct Resumed {
    /// How many envelopes the index holds (the first index of `envelope_at`'s).
    pub count: usize,
    /// The live messages' and pending operations' ids, by envelope.
    pub ids: HashMap<Id, usize>,
    /// Their slots.
    pub(crate) slots: HashMap<usize, Slot>,
    /// A settle refused as naming an operation never dispatched: its op id (it may
    /// name one settled before the index's end).
    pub unknown_op: Option<Id>,
    /// The id of the envelope whose fold check failed (it may repeat an earlier id).
    pub refused_id: Option<Id>,
}

/// The fold's state; after the last line, what replay ends in.
///
/// An envelope's id is hashed once, where its line is read, and pushed into
/// `envelope_at` with that hash; every reference (a compaction's, an elision's, a
/// rewind's, a settle's) is one lookup there, then an index into `slots`.
#[derive(Debug, Default)]
pub struct Fold {
    /// Every envelope in file order (the lazy `events`).
    pub events: Lines,
    /// Parallel to `events` (from `events[resumed.count]` on, in a resumed fold).
    slots: Vec<Slot>,
    /// The session-meta line and its payload.
    pub meta: Option<ValueRef>,
    pub live: Vec<LiveMessage>,
    pub grants: Option<ValueRef>,
    /// The last grants line's index in `events`.
    pub grants_event: Option<usize>,
    pub(crate) pending: Vec<PendingSlot>,
    /// Where each settled operation was dispatched: its index in `events`, in the
    /// order the settles came (its op id is that envelope's id).
    pub settled: Vec<usize>,
    /// call id -> the last operation dispatched for it that waits for its `tool`
    /// message (the others by `same_call_before`); settled ones are skipped.
    pub(crate) waiting_by_call: HashMap<Id, usize>,
    pub sections: Vec<SectionRef>,
    /// digest -> its index in `sections`.
    pub section_at: HashMap<String, usize>,
    /// Every envelope id -> its index in `events` (also the duplicate-id check):
    /// `Session.message_extra` finds a line by id without reading the file again.
    /// In a resumed fold, the ids read since, indexed from `resumed.count`.
    pub envelope_at: IdTable,
    /// The extras of every message line.
    pub extras: MessageExtras,
    /// Lines read (blank ones included), set by the replay.
    pub lines: u64,
    /// What a side index needs of each envelope, noted when one is to be written.
    pub track: Option<Box<Track>>,
    /// Set when the fold was resumed from a side index.
    pub resumed: Option<Box<Resumed>>,
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
        Self::for_size(0, IdKeys::new())
    }

    /// A fold for a file of `size` bytes: the id set starts at the size a file of
    /// 2 KiB lines needs (agent transcripts average about that). Growing it from
    /// empty re-hashed every id at each doubling (SipHash: an insert cost ~890
    /// instructions, ~6% of a replay, callgrind). Its records' ids are hashed with
    /// `keys`.
    ///
    /// The lists get room for twice those lines (a quarter of them tool operations,
    /// an eighth run-context sections), so that a file of slightly shorter lines does
    /// not outgrow them near its end: each list is then copied whole, and its map
    /// rehashed, on the one thread that folds while the other waits. Room not written
    /// to is only address space.
    pub fn for_size(size: u64, keys: IdKeys) -> Self {
        let expected_lines = usize::try_from(size / 2048).unwrap_or(0).min(1 << 22);
        let room = expected_lines.saturating_mul(2);
        Fold {
            events: Lines::with_capacity(room),
            slots: Vec::with_capacity(room),
            pending: Vec::with_capacity(room / 4),
            section_at: HashMap::with_capacity(room / 8),
            envelope_at: IdTable::with_capacity(expected_lines, keys),
            ..Default::default()
        }
    }

    /// Pending operations in file order.
    pub fn pending(&self) -> impl Iterator<Item = &PendingOp> {
        self.pending.iter().filter_map(|p| p.op.as_ref())
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

    /// The index in `events` of `envelope_at`'s first id.
    #[inline]
    pub fn first_read(&self) -> usize {
        self.resumed.as_ref().map_or(0, |r| r.count)
    }

    /// What the envelope with this id is: its index in `events` and its slot.
    fn slot(&self, id: &str) -> (usize, Slot) {
        if let Some(at) = self.envelope_at.get(id) {
            let first = self.first_read();
            return (at + first, self.slots.get(at).copied().unwrap_or_default());
        }
        match &self.resumed {
            Some(r) => match r.ids.get(id) {
                Some(&e) => (e, r.slots.get(&e).copied().unwrap_or_default()),
                None => (usize::MAX, Slot::Nothing),
            },
            None => (usize::MAX, Slot::Nothing),
        }
    }

    /// Where the message with this id is in `live`, if it is live.
    pub(crate) fn position(&self, id: &str) -> Option<usize> {
        match self.slot(id) {
            (e, Slot::Live(at)) => self.live.get(at).filter(|m| m.event == e).map(|_| at),
            _ => None,
        }
    }

    fn set_slot(&mut self, event: usize, slot: Slot) {
        let first = self.first_read();
        if event >= first {
            if let Some(s) = self.slots.get_mut(event - first) {
                *s = slot;
            }
        } else if let Some(r) = &mut self.resumed {
            r.slots.insert(event, slot);
        }
    }

    /// After the live list was rebuilt: every message's new place.
    fn renumber_live(&mut self) {
        let first = self.first_read();
        for (at, m) in self.live.iter().enumerate() {
            if m.event >= first {
                if let Some(slot) = self.slots.get_mut(m.event - first) {
                    *slot = Slot::Live(at);
                }
            } else if let Some(r) = &mut self.resumed {
                r.slots.insert(m.event, Slot::Live(at));
            }
        }
    }

    /// Check one envelope against the state, then fold it in. Its id was hashed
    /// with this fold's keys (`envelope_at.keys()`).
    pub fn feed(&mut self, rec: Record) -> Result<(), CoreFailure> {
        let line = LineRef {
            offset: rec.offset,
            len: rec.len,
        };
        self.admit(&rec, line)?;
        if let Err(refused) = self.check(&rec) {
            if let Some(r) = &mut self.resumed {
                r.refused_id = Some(rec.id.clone());
            }
            return Err(refused);
        }
        self.commit(rec, line);
        Ok(())
    }

    /// The first-line rule, then the id: `envelope_at` takes it, or refuses it as
    /// a duplicate (the reference adds the id before its fold check too).
    ///
    /// `feed` is `admit`, `check` and `commit`, which the lenient fold of a history
    /// read calls one by one; inlined, a load folds as before (out of line, apply and
    /// commit cost it 0.7% more instructions, callgrind).
    #[inline(always)]
    pub(crate) fn admit(&mut self, rec: &Record, line: LineRef) -> Result<(), CoreFailure> {
        if self.events.is_empty() {
            if rec.type_ != "session-meta" {
                return Err(fail(
                    FailureKind::NotATranscript,
                    rec,
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
        // One hash per line.
        let next = self.events.len();
        debug_assert_eq!(rec.id_hash, self.envelope_at.keys().hash(&rec.id));
        if self.envelope_at.push_hashed(&rec.id, rec.id_hash).is_err() {
            return Err(fail(
                FailureKind::Corrupt,
                rec,
                format!(
                    "duplicate envelope id {} (an earlier line has it)",
                    show(&rec.id)
                ),
            ));
        }
        debug_assert_eq!(self.envelope_at.len() + self.first_read(), next + 1);
        Ok(())
    }

    /// Fold in an admitted envelope that passed [`Fold::check`].
    #[inline(always)]
    pub(crate) fn commit(&mut self, rec: Record, line: LineRef) {
        if let Some(track) = &mut self.track {
            track.note(&rec);
        }
        self.events.push(line);
        self.slots.push(Slot::Nothing);
        self.apply(rec, line);
    }

    /// An admitted envelope that [`Fold::check`] refused, kept in `events` with
    /// nothing folded in (a lenient fold goes on): its id stays taken, and the
    /// indices of `events` and `envelope_at` stay one.
    pub(crate) fn pass_over(&mut self, line: LineRef) {
        self.events.push(line);
        self.slots.push(Slot::Nothing);
    }

    /// Where the operation `op_id` is among the dispatches folded in (in file
    /// order), while it is pending.
    pub(crate) fn pending_at(&self, op_id: &str) -> Option<usize> {
        match self.slot(op_id).1 {
            Slot::Op(at) => self.pending.get(at)?.op.as_ref().map(|_| at),
            _ => None,
        }
    }

    /// Whether the state lets `rec` in (the reference's `FoldState.check`).
    #[inline(always)]
    pub(crate) fn check(&mut self, rec: &Record) -> Result<(), CoreFailure> {
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
                let known = match self.slot(&s.op_id).1 {
                    Slot::Op(at) => self.pending.get(at).map(|p| p.op.is_some()),
                    _ => None,
                };
                if known != Some(true) {
                    if known.is_none() {
                        if let Some(r) = &mut self.resumed {
                            r.unknown_op = Some(s.op_id.clone());
                        }
                    }
                    // A dispatched operation leaves `pending` only when settled.
                    let why = if known == Some(false) {
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

    #[inline(always)]
    fn apply(&mut self, rec: Record, line: LineRef) {
        let Record {
            id, payload, body, ..
        } = rec;
        let event = self.events.len() - 1;
        match body {
            Body::Message(Ok(m)) => {
                self.extras.push(event, m.extras.as_deref());
                self.set_slot(event, Slot::Live(self.live.len()));
                self.live.push(LiveMessage {
                    id,
                    event,
                    source: MessageSource::Line { line, payload },
                    sticky: m.sticky,
                    stub: None,
                });
                if let Some(call_id) = m.tool_call_id {
                    let mut waiting = self.waiting_by_call.remove(&call_id);
                    while let Some(at) = waiting {
                        let Some(slot) = self.pending.get_mut(at) else {
                            break;
                        };
                        if let Some(op) = &mut slot.op {
                            op.recorded = true;
                        }
                        waiting = slot.same_call_before;
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
                    event,
                    source: MessageSource::Summary(ValueRef {
                        line,
                        span: c.summary,
                    }),
                    sticky: false,
                    stub: None,
                };
                message_rules::compact(&mut self.live, cut, summary, |m| m.sticky);
                self.renumber_live();
            }
            Body::Rewind(Ok(to)) => {
                // The live list ends with `to` (None: nothing is left). The places of
                // the messages kept do not change.
                let keep = match to {
                    None => 0,
                    Some(to) => self.position(&to).map_or(self.live.len(), |i| i + 1),
                };
                if let Some(track) = &mut self.track {
                    let cut = self.live.get(keep..).unwrap_or_default();
                    track.rewound(cut.iter().map(|m| m.event), event);
                }
                self.live.truncate(keep);
            }
            Body::Elision(Ok(items)) => {
                for (target, stub) in items.into_iter().flatten() {
                    if let Some(pos) = self.position(&target) {
                        if let Some(m) = self.live.get_mut(pos) {
                            m.stub = Some((ValueRef { line, span: stub }, event));
                        }
                    }
                }
            }
            Body::Grants(Ok(span)) => {
                self.grants = Some(ValueRef { line, span });
                self.grants_event = Some(event);
            }
            Body::Dispatched(Ok(call_id)) => {
                let at = self.pending.len();
                let same_call_before = match self.waiting_by_call.entry(call_id) {
                    Entry::Occupied(mut last) => Some(std::mem::replace(last.get_mut(), at)),
                    Entry::Vacant(none) => {
                        none.insert(at);
                        None
                    }
                };
                self.set_slot(event, Slot::Op(at));
                self.pending.push(PendingSlot {
                    op: Some(PendingOp {
                        event,
                        line,
                        payload,
                        recorded: false,
                    }),
                    same_call_before,
                });
            }
            Body::Settled(Ok(s)) => {
                // check() found it pending. Its call's waiting list keeps it until
                // the call's `tool` message (which skips settled operations): no
                // second hash here.
                if let (dispatched, Slot::Op(at)) = self.slot(&s.op_id) {
                    if let Some(slot) = self.pending.get_mut(at) {
                        slot.op = None;
                    }
                    self.settled.push(dispatched);
                    if let (true, Some(track)) = (s.failed, &mut self.track) {
                        track.failed.push(dispatched as u64);
                    }
                }
            }
            Body::RunContext(sections) => {
                for section in sections {
                    if let Entry::Vacant(new) = self.section_at.entry(section.digest.clone()) {
                        new.insert(self.sections.len());
                        self.sections.push(SectionRef {
                            digest: section.digest,
                            text: ValueRef {
                                line,
                                span: section.text,
                            },
                            line_id: id.clone(),
                            event,
                        });
                    }
                }
            }
            _ => {}
        }
    }
}
