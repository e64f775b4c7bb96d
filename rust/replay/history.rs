//! The lenient fold of a history read (`History.read` in `history.py`): load's fold
//! over the envelopes peek lists, noting what became of each line on the way.
//!
//! The lines are those peek reads (up to the last `\n`; a line that is not an
//! envelope is skipped; nothing at all when the first line is not a session-meta
//! envelope). Each envelope goes through load's [`Fold`] rules, but one the fold
//! refuses (a duplicate id, a reference to nothing live, a settle of an unknown
//! operation, a bad shape) is noted as a problem and skipped, where a load would
//! stop. The notes are indices, not strings: an envelope by its index in the fold's
//! `events` (its id is in `envelope_at`), a tool operation by its place among the
//! dispatches; `py/history.rs` turns them into the reference's structures
//! (`_history_fold.HistoryFold`, whose `feed` this mirrors, note for note), reading
//! what else they hold (a time, a payload) from the line when it is asked for.

use crate::error::{CoreError, CoreFailure, CoreResult};
use crate::file_io::Source;
use crate::replay::fold::{Fold, LineRef, ValueRef};
use crate::replay::id::{Id, IdKeys, IdTable};
use crate::replay::records::{BadLine, Body, Record};
use crate::replay::stream::{fold_lines, Folder, SPLIT_MIN};
use crate::scan::end_of_last_line;

/// What took entries out of the live list: a compaction or a rewind, by its index
/// in `events`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Remover {
    pub event: usize,
    pub rewind: bool,
}

/// A settle of a tool operation: its index in `events`, and its line (its outcome
/// is read from there).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settle {
    pub event: usize,
    pub line: LineRef,
}

/// The `tool` message that answered an operation: its index in `events`, and its
/// line (its time is read from there).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Answer {
    pub event: usize,
    pub line: LineRef,
}

/// The most envelopes a history read folds: every index the notes keep (an
/// envelope's, an operation's, a call's, a place in `removed`) is below it, so it is
/// kept as a `u32`, with [`NONE`] for "none". A transcript with more is refused
/// ([`read`] answers an error), never folded with indices cut short.
pub const MAX_ENVELOPES: usize = u32::MAX as usize;

/// The line of an answer or settle not there (read only through its index, none).
const NO_LINE: LineRef = LineRef { offset: 0, len: 0 };

/// "None" in a `u32` index of the notes (no index reaches it: see [`MAX_ENVELOPES`]).
pub const NONE: u32 = u32::MAX;

/// An index of the notes as kept: below [`MAX_ENVELOPES`] by the read's guard (were
/// it not, it would read as none rather than as another index).
#[inline]
pub fn narrow(index: usize) -> u32 {
    u32::try_from(index).unwrap_or(NONE)
}

/// A kept index, [`NONE`] as None.
#[inline]
pub fn widen(index: u32) -> Option<usize> {
    (index != NONE).then_some(index as usize)
}

/// One tool operation, from its `tool-dispatched` envelope on.
///
/// 72 bytes: its indices as `u32`s (none as [`NONE`]), no `Option` tags. As `usize`s
/// and `Option<Answer>`/`Option<Settle>` it took 136; a 1 GB transcript has 124,771
/// operations, which `History.operations` keeps for as long as the history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Operation {
    /// Its dispatch's line.
    pub line: LineRef,
    /// The answer's and the settle's lines (meaningless while that index is none).
    answer_line: LineRef,
    settle_line: LineRef,
    /// Its dispatch's index in `events` (the op id is that envelope's id), and its
    /// index among the envelopes read (`Operation.index`).
    event: u32,
    envelope: u32,
    /// The next operation with the same call id.
    next_in_call: u32,
    /// The grants envelope in force when it was dispatched, by index in `events`.
    grants: u32,
    /// The first `tool` message with its call id after it, and its settle, by index
    /// in `events`.
    answer_event: u32,
    settle_event: u32,
}

impl Operation {
    /// Its dispatch's index in `events`.
    pub fn event(&self) -> usize {
        self.event as usize
    }

    /// Its index among the envelopes read.
    pub fn envelope(&self) -> usize {
        self.envelope as usize
    }

    /// The next operation with the same call id, by index in `Notes::operations`.
    pub fn next_in_call(&self) -> Option<usize> {
        widen(self.next_in_call)
    }

    /// The grants envelope in force when it was dispatched, by index in `events`.
    pub fn grants(&self) -> Option<usize> {
        widen(self.grants)
    }

    /// The first `tool` message with its call id after it.
    pub fn answered_by(&self) -> Option<Answer> {
        widen(self.answer_event).map(|event| Answer {
            event,
            line: self.answer_line,
        })
    }

    pub fn settle(&self) -> Option<Settle> {
        widen(self.settle_event).map(|event| Settle {
            event,
            line: self.settle_line,
        })
    }

    /// `Operation.state` while pending: `result-recorded` once a `tool` message
    /// answered it, else `dispatched` (once settled: its settle's outcome).
    pub fn pending_state(&self) -> &'static str {
        match self.answer_event {
            NONE => "dispatched",
            _ => "result-recorded",
        }
    }
}

/// An envelope the fold refused: its index among the envelopes read, id, type, why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    pub envelope: usize,
    pub id: Id,
    pub type_: String,
    pub reason: String,
}

/// The operations each call id waits with for a `tool` message to answer them
/// (settled ones too), in the order the reference's dict holds the call ids.
#[derive(Debug, Default)]
struct Unanswered {
    /// By call (index in `Notes::calls`): when it came in (an order) and its
    /// operations; None while none waits.
    waiting: Vec<Option<(u64, Vec<usize>)>>,
    next: u64,
}

impl Unanswered {
    fn add(&mut self, call: usize, op: usize) {
        if self.waiting.len() <= call {
            self.waiting.resize(call + 1, None);
        }
        match self.waiting.get_mut(call) {
            Some(Some((_, ops))) => ops.push(op),
            Some(slot) => {
                *slot = Some((self.next, vec![op]));
                self.next += 1;
            }
            None => {}
        }
    }

    fn take(&mut self, call: usize) -> Vec<usize> {
        self.waiting
            .get_mut(call)
            .and_then(Option::take)
            .map(|(_, ops)| ops)
            .unwrap_or_default()
    }
}

/// What became of each line.
#[derive(Debug, Default)]
pub struct Notes {
    /// How many envelopes were read (duplicates and refused ones included).
    pub count: usize,
    /// How many envelopes had been folded (`events.len()`) when each duplicate came:
    /// what turns an index in `events` into a position among the envelopes read.
    pub duplicates: Vec<usize>,
    /// (entry, remover): each entry (a message or summary, by its index in `events`)
    /// taken out of the live list, in the order they were taken out; the remover
    /// is an index into `removers`. Like every index pair here, two `u32`s (see
    /// [`MAX_ENVELOPES`]): half the bytes of two `usize`s.
    pub removed: Vec<(u32, u32)>,
    pub removers: Vec<Remover>,
    /// (entry, elision): each item of each elision folded in, in order, by index
    /// in `events`.
    pub elided: Vec<(u32, u32)>,
    /// Every `grants` envelope folded in: its index in `events` and its snapshot.
    pub grants: Vec<(usize, ValueRef)>,
    pub operations: Vec<Operation>,
    /// (message, operation): each `tool` message that answered operations (by index
    /// in `events`) and the first of them (in `operations`), in file order.
    pub answers: Vec<(u32, u32)>,
    /// Every call id dispatched, in the order each first came.
    pub calls: IdTable,
    /// The first operation of each call (`Operation::next_in_call` links the rest).
    pub call_first: Vec<u32>,
    call_last: Vec<u32>,
    pub problems: Vec<Problem>,
    unanswered: Unanswered,
    /// Set when the file has more than [`MAX_ENVELOPES`] envelopes: the read stops
    /// there and answers an error.
    pub too_many: bool,
}

impl Notes {
    /// The call ids whose operations no `tool` message answered yet, each with
    /// them (indices into `operations`), in the reference's order.
    pub fn unanswered(&self) -> Vec<(&str, &[usize])> {
        let mut waiting: Vec<(u64, &str, &[usize])> = (self.unanswered.waiting.iter())
            .enumerate()
            .filter_map(|(call, w)| {
                let (order, ops) = w.as_ref()?;
                Some((*order, self.calls.id_at(call)?, ops.as_slice()))
            })
            .collect();
        waiting.sort_unstable_by_key(|w| w.0);
        waiting.into_iter().map(|(_, id, ops)| (id, ops)).collect()
    }
}

/// The operations dispatched for the call `call` (by index in `Notes::calls`), in
/// order, from `Notes::call_first` and `Notes::operations`.
pub fn call_ops<'a>(
    call_first: &'a [u32],
    operations: &'a [Operation],
    call: usize,
) -> impl Iterator<Item = usize> + 'a {
    let first = call_first.get(call).copied().and_then(widen);
    std::iter::successors(first, |&op| operations.get(op)?.next_in_call())
}

/// Load's fold, lenient, with the notes of a history read.
#[derive(Debug)]
pub struct HistoryFold {
    pub fold: Fold,
    pub notes: Notes,
    /// [`MAX_ENVELOPES`] (a test's is smaller).
    max_envelopes: usize,
}

/// The reason a history read stops at once: its first line is not a session-meta
/// envelope (peek's error). Only [`read`] sees it, and answers None.
fn not_a_transcript(line: u64, offset: u64) -> CoreFailure {
    CoreFailure {
        kind: crate::error::FailureKind::NotATranscript,
        line,
        offset,
        reason: "the first line is not a session-meta envelope".to_owned(),
    }
}

impl Folder for HistoryFold {
    const STOPS_AT_BAD: bool = false;

    fn feed(&mut self, rec: Record) -> Result<(), CoreFailure> {
        if self.notes.count == 0 && rec.type_ != "session-meta" {
            return Err(not_a_transcript(rec.line, rec.offset));
        }
        if self.notes.count >= self.max_envelopes {
            // The end of the fold: `read` answers the error.
            self.notes.too_many = true;
            return Err(not_a_transcript(rec.line, rec.offset));
        }
        self.fold_in(rec);
        Ok(())
    }

    fn bad(&mut self, bad: BadLine) -> Result<(), CoreFailure> {
        if self.notes.count == 0 {
            return Err(not_a_transcript(bad.line, bad.offset));
        }
        Ok(())
    }

    #[inline]
    fn prefetch(&self, id_hash: u64) {
        self.fold.envelope_at.prefetch(id_hash);
    }
}

/// The history of the envelopes of bytes `[0, size)` that peek lists (the lines up
/// to the last `\n`), or None when there are none (the first line is not a
/// session-meta envelope, or there is no whole line).
///
/// A file of more than [`MAX_ENVELOPES`] envelopes is an error (`Io`, `OutOfMemory`).
pub fn read<S: Source + Sync + ?Sized>(src: &S, size: u64) -> CoreResult<Option<HistoryFold>> {
    read_split_from(src, size, SPLIT_MIN)
}

/// [`read`], on two threads from `split_min` bytes on.
pub fn read_split_from<S: Source + Sync + ?Sized>(
    src: &S,
    size: u64,
    split_min: u64,
) -> CoreResult<Option<HistoryFold>> {
    read_at_most(src, size, split_min, MAX_ENVELOPES)
}

/// [`read_split_from`] of a file of at most `max_envelopes` envelopes.
fn read_at_most<S: Source + Sync + ?Sized>(
    src: &S,
    size: u64,
    split_min: u64,
    max_envelopes: usize,
) -> CoreResult<Option<HistoryFold>> {
    let end = end_of_last_line(src, 0, size)?;
    let keys = IdKeys::new();
    let mut history = HistoryFold {
        fold: Fold::for_size(end, keys.clone()),
        notes: Notes::default(),
        max_envelopes,
    };
    match fold_lines(src, end, split_min, &keys, &mut history) {
        _ if history.notes.too_many => Err(CoreError::Io(std::io::Error::new(
            std::io::ErrorKind::OutOfMemory,
            format!(
                "the transcript has more than {max_envelopes} envelopes, the most a history \
                 read holds; read a part of it (History.read's end) or load it instead"
            ),
        ))),
        Ok(_) if history.notes.count > 0 => Ok(Some(history)),
        // The only failure this fold reports is a first line that is no session-meta.
        Ok(_) | Err(CoreError::Failure(_)) => Ok(None),
        Err(e) => Err(e),
    }
}

impl HistoryFold {
    /// `HistoryFold.feed` of the reference: the duplicate check, the fold's check
    /// (a refusal is a problem, and the envelope is skipped), the notes, the fold.
    fn fold_in(&mut self, rec: Record) {
        let envelope = self.notes.count;
        self.notes.count += 1;
        let line = LineRef {
            offset: rec.offset,
            len: rec.len,
        };
        if let Err(refused) = self.fold.admit(&rec, line) {
            self.notes.duplicates.push(self.fold.events.len());
            return self.problem(envelope, rec, refused);
        }
        if let Err(refused) = self.fold.check(&rec) {
            self.fold.pass_over(line);
            return self.problem(envelope, rec, refused);
        }
        self.note(&rec.body, line, envelope);
        self.fold.commit(rec, line);
    }

    fn problem(&mut self, envelope: usize, rec: Record, refused: CoreFailure) {
        self.notes.problems.push(Problem {
            envelope,
            id: rec.id,
            type_: rec.type_.into_owned(),
            reason: refused.reason,
        });
    }

    /// What folding in a record (admitted and checked, at `events.len()`) does
    /// besides the fold itself, noted before the fold changes the live list.
    fn note(&mut self, body: &Body, line: LineRef, envelope: usize) {
        let event = self.fold.events.len();
        let fold = &self.fold;
        let notes = &mut self.notes;
        match body {
            Body::Compaction(Ok(c)) => {
                let Some(cut) = fold.position(&c.through) else {
                    return;
                };
                let by = notes.removers.len();
                notes.removers.push(Remover {
                    event,
                    rewind: false,
                });
                let through = fold.live.get(..=cut).unwrap_or_default();
                let by = narrow(by);
                (notes.removed).extend(
                    (through.iter())
                        .filter(|m| !m.sticky)
                        .map(|m| (narrow(m.event), by)),
                );
            }
            Body::Rewind(Ok(to)) => {
                let keep = match to {
                    None => 0,
                    Some(to) => fold.position(to).map_or(fold.live.len(), |at| at + 1),
                };
                let by = notes.removers.len();
                notes.removers.push(Remover {
                    event,
                    rewind: true,
                });
                let (cut, by) = (fold.live.get(keep..).unwrap_or_default(), narrow(by));
                (notes.removed).extend(cut.iter().map(|m| (narrow(m.event), by)));
            }
            Body::Elision(Ok(items)) => {
                for (target, _) in items.iter().flatten() {
                    if let Some(m) = fold.position(target).and_then(|at| fold.live.get(at)) {
                        notes.elided.push((narrow(m.event), narrow(event)));
                    }
                }
            }
            Body::Grants(Ok(span)) => notes.grants.push((event, ValueRef { line, span: *span })),
            Body::Dispatched(Ok(call_id)) => {
                let op = notes.operations.len();
                let call = match notes.calls.push(call_id) {
                    Ok(()) => {
                        notes.call_first.push(narrow(op));
                        notes.call_last.push(narrow(op));
                        notes.calls.len() - 1
                    }
                    Err(call) => {
                        if let Some(last) = notes.call_last.get_mut(call) {
                            if let Some(before) = notes.operations.get_mut(*last as usize) {
                                before.next_in_call = narrow(op);
                            }
                            *last = narrow(op);
                        }
                        call
                    }
                };
                notes.operations.push(Operation {
                    line,
                    answer_line: NO_LINE,
                    settle_line: NO_LINE,
                    event: narrow(event),
                    envelope: narrow(envelope),
                    next_in_call: NONE,
                    grants: notes.grants.last().map_or(NONE, |g| narrow(g.0)),
                    answer_event: NONE,
                    settle_event: NONE,
                });
                notes.unanswered.add(call, op);
            }
            Body::Settled(Ok(s)) => {
                // The fold's pending operations are the dispatches in order, as here.
                if let Some(op) = fold
                    .pending_at(&s.op_id)
                    .and_then(|at| notes.operations.get_mut(at))
                {
                    (op.settle_event, op.settle_line) = (narrow(event), line);
                }
            }
            Body::Message(Ok(m)) => {
                let Some(call) = m.tool_call_id.as_ref().and_then(|c| notes.calls.get(c)) else {
                    return;
                };
                let ops = notes.unanswered.take(call);
                if let Some(&first) = ops.first() {
                    notes.answers.push((narrow(event), narrow(first)));
                }
                for op in ops {
                    if let Some(op) = notes.operations.get_mut(op) {
                        (op.answer_event, op.answer_line) = (narrow(event), line);
                    }
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(id: &str, type_: &str, payload: &str) -> String {
        format!(r#"{{"id":"{id}","payload":{payload},"ts":"t-{id}","type":"{type_}","v":1}}"#)
            + "\n"
    }

    fn meta() -> String {
        line("m", "session-meta", r#"{"a":1}"#)
    }

    /// The read on one thread and on two, which must agree; None: nothing read.
    fn read_both(data: &str) -> Option<HistoryFold> {
        let bytes = data.as_bytes();
        let one = read_split_from(bytes, bytes.len() as u64, u64::MAX).unwrap();
        let two = read_split_from(bytes, bytes.len() as u64, 1).unwrap();
        let view = |h: &Option<HistoryFold>| {
            h.as_ref().map(|h| {
                (
                    h.notes.count,
                    h.notes.removed.clone(),
                    h.notes.removers.clone(),
                    h.notes.elided.clone(),
                    h.notes.grants.clone(),
                    h.notes.operations.clone(),
                    h.notes.problems.clone(),
                    h.fold.live.clone(),
                    h.fold.events.clone(),
                )
            })
        };
        assert_eq!(view(&one), view(&two));
        one
    }

    fn ids(h: &HistoryFold, events: impl IntoIterator<Item = usize>) -> Vec<&str> {
        events
            .into_iter()
            .filter_map(|e| h.fold.envelope_at.id_at(e))
            .collect()
    }

    #[test]
    fn notes_what_removed_elided_and_answered_each_line() {
        let data = [
            meta(),
            line("s", "message", r#"{"role":"system","sysprompt":true}"#),
            line("a", "message", r#"{"role":"user"}"#),
            line("g", "grants", r#"{"grants":{"x":1}}"#),
            line("d", "tool-dispatched", r#"{"call-id":"c","tool":"bash"}"#),
            line("t", "message", r#"{"role":"tool","tool_call_id":"c"}"#),
            line("x", "tool-settled", r#"{"op-id":"d","outcome":"failed"}"#),
            line(
                "c",
                "compaction",
                r#"{"summary":"s","replaces-through-id":"a"}"#,
            ),
            line(
                "e",
                "elision",
                r#"{"items":[{"id":"t","stub":"-"},{"id":"t","stub":"+"}]}"#,
            ),
            line("b", "message", r#"{"role":"user"}"#),
            line("w", "rewind", r#"{"to-id":"t"}"#),
            line("d2", "tool-dispatched", r#"{"call-id":"c","tool":"bash"}"#),
        ]
        .concat();
        let h = read_both(&data).unwrap();
        assert_eq!(h.notes.count, 12);
        assert!(h.notes.problems.is_empty());
        let removed: Vec<(&str, u32)> = h
            .notes
            .removed
            .iter()
            .map(|&(e, by)| (h.fold.envelope_at.id_at(e as usize).unwrap(), by))
            .collect();
        assert_eq!(removed, vec![("a", 0), ("b", 1)]);
        assert!(h.notes.removers[1].rewind && !h.notes.removers[0].rewind);
        let elided: Vec<usize> = h.notes.elided.iter().map(|e| e.0 as usize).collect();
        assert_eq!(ids(&h, elided), vec!["t", "t"]);
        let [done, open] = &h.notes.operations[..] else {
            panic!("two operations")
        };
        assert_eq!(done.settle().map(|s| s.event), Some(6));
        assert_eq!(
            (done.pending_state(), done.grants()),
            ("result-recorded", Some(3))
        );
        assert_eq!(ids(&h, done.answered_by().map(|a| a.event)), vec!["t"]);
        assert_eq!(h.notes.answers, vec![(5, 0)]);
        let calls = call_ops(&h.notes.call_first, &h.notes.operations, 0);
        assert_eq!(calls.collect::<Vec<_>>(), vec![0, 1]);
        assert_eq!((open.pending_state(), open.envelope()), ("dispatched", 11));
        assert_eq!(
            (open.settle(), open.answered_by(), open.next_in_call()),
            (None, None, None)
        );
        assert_eq!(done.next_in_call(), Some(1));
        let unanswered: Vec<(&str, Vec<usize>)> = h
            .notes
            .unanswered()
            .into_iter()
            .map(|(c, ops)| (c, ops.to_vec()))
            .collect();
        assert_eq!(unanswered, vec![("c", vec![1])]);
    }

    #[test]
    fn a_refused_envelope_is_a_problem_and_the_rest_is_read() {
        let data = [
            meta(),
            "not json\n".to_owned(),
            line("a", "message", r#"{"role":"user"}"#),
            line("a", "message", r#"{"role":"user"}"#),
            line("x", "tool-settled", r#"{"op-id":"q","outcome":"failed"}"#),
            line("w", "rewind", r#"{"to-id":"q"}"#),
            line("k", "message", r#"{"role":1}"#),
            line("b", "message", r#"{"role":"user"}"#),
            line(
                "z",
                "compaction",
                r#"{"summary":"s","replaces-through-id":"k"}"#,
            ),
        ]
        .concat();
        let h = read_both(&data).unwrap();
        let problems: Vec<(usize, &str, &str)> = h
            .notes
            .problems
            .iter()
            .map(|p| (p.envelope, p.id.as_str(), p.reason.as_str()))
            .collect();
        assert_eq!(
            problems,
            vec![
                (2, "a", "duplicate envelope id a (an earlier line has it)"),
                (
                    3,
                    "x",
                    "tool-settled names operation q, which was never dispatched"
                ),
                (
                    4,
                    "w",
                    "rewind to-id q names no message in the live conversation"
                ),
                (5, "k", "message payload has no string role"),
                (
                    7,
                    "z",
                    "compaction replaces-through-id k names no message in the live conversation"
                ),
            ]
        );
        assert_eq!(h.notes.count, 8);
        assert_eq!(h.notes.duplicates, vec![2]);
        // A refused envelope keeps its id: the indices of events and ids stay one.
        assert_eq!(h.fold.events.len(), 7);
        assert_eq!(h.fold.envelope_at.get("b"), Some(5));
        let live: Vec<&str> = h.fold.live.iter().map(|m| m.id.as_str()).collect();
        assert_eq!(live, vec!["a", "b"]);
    }

    #[test]
    fn nothing_is_read_unless_the_first_line_is_a_session_meta() {
        let body = line("a", "message", r#"{"role":"user"}"#);
        for data in [
            String::new(),
            " \n\n".to_owned(),
            body.clone() + &meta(),
            "{\n".to_owned() + &meta(),
            meta().trim_end().to_owned(),
        ] {
            assert!(read_both(&data).is_none(), "{data:?}");
        }
        // The line after the last `\n` is not read (peek leaves it for later).
        let h = read_both(&(meta() + &body + "  \n" + body.trim_end())).unwrap();
        assert_eq!(h.notes.count, 2);
        assert!(h.notes.problems.is_empty());
    }

    #[test]
    fn two_threads_read_what_one_reads_across_the_split() {
        let mut data = meta();
        for i in 0..3000 {
            data += &line(
                &format!("i{i}"),
                "message",
                r#"{"role":"user","content":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}"#,
            );
            if i % 500 == 7 {
                data += "{bad\n";
                data += &line("i3", "message", r#"{"role":"user"}"#);
                data += &line(
                    &format!("c{i}"),
                    "compaction",
                    &format!(r#"{{"summary":"s","replaces-through-id":"i{i}"}}"#),
                );
            }
        }
        let h = read_both(&data).unwrap();
        assert_eq!(h.notes.problems.len(), 6);
        assert_eq!(h.notes.removers.len(), 6);
    }

    #[test]
    fn a_file_of_more_envelopes_than_a_read_holds_is_an_error() {
        // As if a read held at most 3 envelopes (in truth 2^32 - 1: its notes'
        // indices are u32s).
        let data = [meta(), line("a", "message", r#"{"role":"user"}"#)].concat();
        let bytes = (data.clone() + &line("b", "message", r#"{"role":"user"}"#)).into_bytes();
        for split in [u64::MAX, 1] {
            let held = read_at_most(data.as_bytes(), data.len() as u64, split, 3).unwrap();
            assert_eq!(held.map(|h| h.notes.count), Some(2));
            let held = read_at_most(&bytes[..], bytes.len() as u64, split, 3).unwrap();
            assert_eq!(held.map(|h| h.notes.count), Some(3));
            let mut more = bytes.clone();
            more.extend_from_slice(line("c", "message", r#"{"role":"user"}"#).as_bytes());
            let Err(CoreError::Io(e)) = read_at_most(&more[..], more.len() as u64, split, 3) else {
                panic!("a read of 4 envelopes, at most 3");
            };
            assert_eq!(e.kind(), std::io::ErrorKind::OutOfMemory);
            assert!(e.to_string().contains("more than 3 envelopes"), "{e}");
        }
    }
}
