//! `History.read` on the native core: the lenient fold of `replay::history` runs
//! without the GIL, then its notes become the reference's structures (the fields of
//! `_core.HistoryRead`, as `_history_fold.HistoryFold.feed` leaves them), with the
//! `FoldState` a load would build (`survivors::fold_state`).
//!
//! The big ones stay notes: `removed` (an entry for most messages of a long
//! transcript), `elided`, `operations` (a quarter of its lines), `answers` and `calls`
//! (one entry for each operation, about) are `_history_fold.ReadMapping`s over
//! `HistoryRows`, which build an entry when it is first asked for. Built at once, they
//! were most of the read's time and memory on top of the fold (at 1 GB, ~150 MB of
//! Python objects: the read's peak RSS was 0.30x the file; `elided` alone, 92,541
//! entries, held 25 MB). The rest (grants snapshots, problems, the call ids still
//! waiting) is small and built now.

use std::fs::File;
use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};

use crate::envelope::{parse_envelope_fields, EnvelopeRef};
use crate::envelope_skim::skim_header;
use crate::file_io::{BorrowedFile, Source};
use crate::json::view as json_view;
use crate::replay::fold::LineRef;
use crate::replay::history::{
    self as history_core, call_ops, narrow, HistoryFold, Operation, NONE,
};
use crate::replay::id::IdTable;

use super::build::Builder;
use super::lazy::{self, read_line, EnvelopeIds};
use super::named::{self, call_kw};
use super::survivors::{self, value_at, GilTurns, LastLine};
use super::{os_error, to_pyerr};

/// The `HistoryRead` of the envelopes peek lists in the first `size` bytes of `fd`
/// (by `HistoryFold(keep_payloads)`), or None when it lists none (the first line is
/// not a session-meta envelope). `reopen_path`: see `lazy::reopen`.
#[pyfunction]
#[pyo3(signature = (fd, size, keep_payloads=true, reopen_path=None))]
pub fn history<'py>(
    py: Python<'py>,
    fd: i32,
    size: u64,
    keep_payloads: bool,
    reopen_path: Option<&str>,
) -> PyResult<Bound<'py, PyAny>> {
    let read = py.allow_threads(move || {
        if size == 0 {
            // Like the reference, an empty read never touches the descriptor.
            return Ok(None);
        }
        let file = BorrowedFile::new(fd)?;
        // Like peek, a file shorter than `size` is read as far as it goes.
        let size = size.min(file.size()?);
        history_core::read(&*file, size)
    });
    let Some(HistoryFold {
        mut fold,
        mut notes,
        ..
    }) = read.map_err(|e| to_pyerr(py, e))?
    else {
        return Ok(py.None().into_bound(py));
    };
    let file = BorrowedFile::new(fd).map_err(|e| os_error(py, e))?;
    let own = lazy::reopen(fd, reopen_path).ok().map(Arc::new);
    let mut b = Builder::new(py);
    let mut last = LastLine::default();
    let removal = named::REMOVAL.get(py)?;
    let mut removals = Vec::with_capacity(notes.removers.len());
    for r in &notes.removers {
        let at = fold.events.get(r.event).ok_or_else(lost)?;
        let (id, ts) = header(&file, at)?;
        let kind = if r.rewind { "rewind" } else { "compaction" };
        removals.push(removal.call1((id, kind, ts))?.unbind());
    }
    let ids = &fold.envelope_at;
    let id = |event: usize| -> PyResult<Bound<'py, PyString>> {
        Ok(PyString::new(py, ids.id_at(event).ok_or_else(lost)?))
    };
    let grants_by_id = PyDict::new(py);
    let mut grants = None;
    for &(event, snapshot) in &notes.grants {
        let (key, value) = (id(event)?, value_at(&mut b, &mut last, &file, snapshot)?);
        grants_by_id.set_item(&key, &value)?;
        grants = Some((key, value));
    }
    let problem = named::PROBLEM.get(py)?;
    let problems = PyList::empty(py);
    for p in &notes.problems {
        problems.append(problem.call1((p.envelope, p.id.as_str(), &p.type_, &p.reason))?)?;
    }
    let unanswered = PyDict::new(py);
    for (call_id, ops) in notes.unanswered() {
        let waiting = PyList::empty(py);
        for &op in ops {
            waiting.append(id(notes.operations.get(op).ok_or_else(lost)?.event())?)?;
        }
        unanswered.set_item(call_id, waiting)?;
    }
    if !keep_payloads {
        // The reference leaves a run-context line out of the fold then: no texts.
        fold.sections = Vec::new();
        fold.section_at = Default::default();
    }
    let envelope_at = Bound::new(py, EnvelopeIds::new(std::mem::take(&mut fold.envelope_at)))?;
    let events = fold.events.len();
    let state = survivors::fold_state(
        py,
        &file,
        &mut fold,
        events,
        own.clone(),
        envelope_at.clone(),
        None,
    )?;
    if let Some((_, grants)) = &grants {
        // The grants in force are the last grants envelope's snapshot, one object, as
        // the reference's fold leaves them.
        state.setattr(intern!(py, "grants"), grants)?;
    }
    let removed = std::mem::take(&mut notes.removed);
    // Stable: of two places of one entry (there are none), the later is found, as the
    // reference's dict keeps the last value set.
    let mut removed_by_entry: Vec<u32> = (0..removed.len()).map(narrow).collect();
    removed_by_entry.sort_by_key(|&at| removed.get(at as usize).map(|r| r.0));
    let read = Arc::new(Read {
        ids: envelope_at.clone().unbind(),
        file: own,
        keep_payloads,
        operations: std::mem::take(&mut notes.operations),
        calls: std::mem::take(&mut notes.calls),
        call_first: std::mem::take(&mut notes.call_first),
        answers: std::mem::take(&mut notes.answers),
        removed,
        removed_by_entry,
        removals,
        elided: Elided::new(std::mem::take(&mut notes.elided)),
    });
    let mapping = |rows: Rows| -> PyResult<Bound<'py, PyAny>> {
        let rows = HistoryRows {
            read: read.clone(),
            rows,
        };
        named::READ_MAPPING.get(py)?.call1((Bound::new(py, rows)?,))
    };
    let operations = match read.file {
        Some(_) => mapping(Rows::Operations)?,
        // No descriptor of our own to read them by later: every operation now.
        None => {
            let all = PyDict::new(py);
            let mut turn = GilTurns::default();
            for op in &read.operations {
                turn.take(py);
                let ids = envelope_at.get().table();
                let built = read.operation(&mut b, &file, ids, op)?;
                all.set_item(ids.id_at(op.event()).ok_or_else(lost)?, built)?;
            }
            all.into_any()
        }
    };
    let seen = named::IDS_SINCE_READ
        .get(py)?
        .call1((&envelope_at, std::mem::take(&mut notes.duplicates)))?;
    let fed = notes.count;
    // What is left of the fold and the notes is freed without the GIL (see `replay`).
    py.allow_threads(move || drop((fold, notes)));
    call_kw!(
        py,
        named::HISTORY_READ.get(py)?,
        state = state,
        fed = fed,
        removed = mapping(Rows::Removed)?,
        elided = mapping(Rows::Elided)?,
        operations = operations,
        answers = mapping(Rows::Answers)?,
        calls = mapping(Rows::Calls)?,
        grants_by_id = grants_by_id,
        grants_id = grants.map(|(id, _)| id),
        problems = problems,
        seen = seen,
        unanswered = unanswered,
    )
}

fn lost() -> PyErr {
    PyValueError::new_err("a history read's notes name an envelope it does not hold")
}

fn changed(at: LineRef) -> PyErr {
    PyValueError::new_err(format!(
        "the transcript changed under a lazy read: the line at byte {} is not the envelope it was",
        at.offset
    ))
}

/// The id and ts of the envelope on the line at `at` (validated again).
fn header(file: &File, at: LineRef) -> PyResult<(String, String)> {
    let raw = read_line(file, at)?;
    let env = parse_envelope_fields(&raw, at.offset, &mut Vec::new()).map_err(|_| changed(at))?;
    Ok((env.id.into_owned(), env.ts.into_owned()))
}

/// What the mappings of one read build their entries from.
struct Read {
    ids: Py<EnvelopeIds>,
    /// A descriptor of our own, where operations are read from when asked for.
    file: Option<Arc<File>>,
    keep_payloads: bool,
    /// In file order (of their dispatches' `event`).
    operations: Vec<Operation>,
    calls: IdTable,
    call_first: Vec<u32>,
    /// (message, operation), in file order (of the messages' `event`).
    answers: Vec<(u32, u32)>,
    /// (entry, index in `removals`), in the order they were taken out.
    removed: Vec<(u32, u32)>,
    /// The places in `removed`, by entry: 4 bytes an entry removed, where a place for
    /// each envelope took 4 (8 as usizes) for every envelope read.
    removed_by_entry: Vec<u32>,
    removals: Vec<Py<PyAny>>,
    elided: Elided,
}

/// `History.elided` as rows: entry id -> the ids of the elisions that stubbed it, the
/// entries in the order each was first elided, as the reference's dict has them.
#[derive(Debug, Default)]
struct Elided {
    /// (entry, elision), by index in `events`, sorted by entry: each entry's
    /// elisions together, in file order.
    by_entry: Vec<(u32, u32)>,
    /// Each row's (entry's) first place in `by_entry`, in the rows' order.
    rows: Vec<u32>,
    /// (entry, its row), sorted by entry.
    row_of: Vec<(u32, u32)>,
}

impl Elided {
    /// Of `(entry, elision)` pairs in file order.
    fn new(elided: Vec<(u32, u32)>) -> Self {
        // Each pair's place in file order, by entry (stable: each entry's in file order).
        let mut order: Vec<u32> = (0..elided.len()).map(narrow).collect();
        order.sort_by_key(|&at| elided.get(at as usize).map(|e| e.0));
        let by_entry: Vec<(u32, u32)> = (order.iter())
            .filter_map(|&at| elided.get(at as usize).copied())
            .collect();
        // Each entry (in entry order): where it first came in file order, its first
        // place in by_entry.
        let mut groups: Vec<(u32, u32, u32)> = Vec::new();
        for (place, (&at, &(entry, _))) in order.iter().zip(&by_entry).enumerate() {
            if groups.last().map(|g| g.0) != Some(entry) {
                groups.push((entry, at, narrow(place)));
            }
        }
        let mut row_of: Vec<(u32, u32)> = groups.iter().map(|g| (g.0, NONE)).collect();
        // The rows: the entries in the order each first came.
        let mut by_first: Vec<usize> = (0..groups.len()).collect();
        by_first.sort_unstable_by_key(|&g| groups.get(g).map(|g| g.1));
        let mut rows = Vec::with_capacity(by_first.len());
        for (row, &group) in by_first.iter().enumerate() {
            if let (Some(g), Some(of)) = (groups.get(group), row_of.get_mut(group)) {
                rows.push(g.2);
                of.1 = narrow(row);
            }
        }
        Elided {
            by_entry,
            rows,
            row_of,
        }
    }

    fn len(&self) -> usize {
        self.rows.len()
    }

    /// The entry of a row.
    fn entry(&self, row: usize) -> Option<usize> {
        let start = *self.rows.get(row)?;
        Some(self.by_entry.get(start as usize)?.0 as usize)
    }

    /// The row of an entry.
    fn row(&self, entry: usize) -> Option<usize> {
        let at = (self.row_of)
            .binary_search_by_key(&entry, |r| r.0 as usize)
            .ok()?;
        Some(self.row_of.get(at)?.1 as usize)
    }

    /// A row's elisions, in file order.
    fn elisions(&self, row: usize) -> impl Iterator<Item = usize> + '_ {
        let start = self.rows.get(row).map_or(usize::MAX, |&s| s as usize);
        let entry = self.by_entry.get(start).map(|e| e.0);
        (self.by_entry.get(start..).unwrap_or_default().iter())
            .take_while(move |e| Some(e.0) == entry)
            .map(|e| e.1 as usize)
    }
}

impl Read {
    /// The `Operation` of a row: its dispatch's, settle's and answer's lines read
    /// again (each must still be the envelope the read folded), the rest from the row.
    fn operation<'py>(
        &self,
        b: &mut Builder<'py>,
        file: &File,
        ids: &IdTable,
        op: &Operation,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = b.py();
        let id = |event: usize| ids.id_at(event).ok_or_else(lost);
        let raw = read_line(file, op.line)?;
        let mut fields = Vec::new();
        let env = parse_envelope_fields(&raw, op.line.offset, &mut fields)
            .map_err(|_| changed(op.line))?;
        if env.id != id(op.event())? {
            return Err(changed(op.line));
        }
        let mut member = |key: &str| match json_view::get(&raw, &fields, key) {
            Some(item) => b.value(&raw, item),
            None => Ok(py.None().into_bound(py)),
        };
        let (call_id, tool) = (member("call-id")?, member("tool")?);
        let (arguments, dispatch) = if self.keep_payloads {
            (member("arguments")?, b.dict(&raw, &fields)?)
        } else {
            (py.None().into_bound(py), PyDict::new(py))
        };
        let answered = match op.answered_by() {
            Some(answer) => {
                let raw = read_line(file, answer.line)?;
                let mut fields = Vec::new();
                let env = match skim_header(&raw, None) {
                    Some(env) => env,
                    None => parse_envelope_fields(&raw, answer.line.offset, &mut fields)
                        .map_err(|_| changed(answer.line))?,
                };
                if env.id != id(answer.event)? {
                    return Err(changed(answer.line));
                }
                Some((env.id.into_owned(), env.ts.into_owned()))
            }
            None => None,
        };
        let (state, settled, settle) = match op.settle() {
            Some(s) => {
                let raw = read_line(file, s.line)?;
                let mut fields = Vec::new();
                let env: EnvelopeRef<'_> = parse_envelope_fields(&raw, s.line.offset, &mut fields)
                    .map_err(|_| changed(s.line))?;
                if env.id != id(s.event)? {
                    return Err(changed(s.line));
                }
                // The fold checked it is one of the three outcomes.
                let outcome =
                    json_view::get(&raw, &fields, "outcome").ok_or_else(|| changed(s.line))?;
                let state = b.value(&raw, outcome)?;
                let settle = if self.keep_payloads {
                    b.dict(&raw, &fields)?
                } else {
                    PyDict::new(py)
                };
                let settled = (env.id.into_owned(), env.ts.into_owned());
                (state, Some(settled), settle)
            }
            None => (
                PyString::intern(py, op.pending_state()).into_any(),
                None,
                PyDict::new(py),
            ),
        };
        let (answered_by, answered_at) = answered.unzip();
        let (settled_id, settled_at) = settled.unzip();
        call_kw!(
            py,
            named::OPERATION.get(py)?,
            op_id = env.id.as_ref(),
            call_id = call_id,
            tool = tool,
            arguments = arguments,
            dispatched_at = env.ts.as_ref(),
            index = op.envelope(),
            grants_id = op.grants().map(id).transpose()?,
            state = state,
            answered_by = answered_by,
            answered_at = answered_at,
            dispatch = dispatch,
            settled_id = settled_id,
            settled_at = settled_at,
            settle = settle,
        )
    }
}

/// Which of a read's mappings a `HistoryRows` is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rows {
    /// entry id -> its `Removal`, in the order they were taken out.
    Removed,
    /// op id -> its `Operation`, in file order.
    Operations,
    /// tool message id -> the op id of the first operation it answered, in file order.
    Answers,
    /// entry id -> the ids of the elisions that stubbed it, in the order each entry
    /// was first elided.
    Elided,
    /// call id -> the op ids dispatched for it, in the order each call id first came.
    Calls,
}

/// One of a native read's big mappings (`History.removed`, `.elided`, `.operations`,
/// `.answers`, `.calls`), under a `ReadMapping`: its keys in order, each value built when asked for.
#[pyclass(frozen, module = "llm_agent_session._native")]
pub struct HistoryRows {
    read: Arc<Read>,
    rows: Rows,
}

#[pymethods]
impl HistoryRows {
    fn __len__(&self) -> usize {
        let read = &*self.read;
        match self.rows {
            Rows::Removed => read.removed.len(),
            Rows::Operations => read.operations.len(),
            Rows::Answers => read.answers.len(),
            Rows::Elided => read.elided.len(),
            Rows::Calls => read.calls.len(),
        }
    }

    /// Every key, in order.
    fn keys<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let read = &*self.read;
        let ids = read.ids.bind(py).get().table();
        let keys = PyList::empty(py);
        let events = |events: &mut dyn Iterator<Item = usize>| -> PyResult<()> {
            for event in events {
                keys.append(ids.id_at(event).ok_or_else(lost)?)?;
            }
            Ok(())
        };
        match self.rows {
            Rows::Removed => events(&mut read.removed.iter().map(|r| r.0 as usize))?,
            Rows::Operations => events(&mut read.operations.iter().map(Operation::event))?,
            Rows::Answers => events(&mut read.answers.iter().map(|a| a.0 as usize))?,
            Rows::Elided => {
                events(&mut (0..read.elided.len()).filter_map(|row| read.elided.entry(row)))?
            }
            Rows::Calls => {
                for call in 0..read.calls.len() {
                    keys.append(read.calls.id_at(call).ok_or_else(lost)?)?;
                }
            }
        }
        Ok(keys)
    }

    /// Where the entry of `key` is, if the read holds one.
    fn find(&self, py: Python<'_>, key: &str) -> Option<usize> {
        let read = &*self.read;
        if self.rows == Rows::Calls {
            return read.calls.get(key);
        }
        let event = read.ids.bind(py).get().table().get(key)?;
        match self.rows {
            Rows::Removed => {
                let entry = |at: &u32| read.removed.get(*at as usize).map(|r| r.0 as usize);
                let after = (read.removed_by_entry).partition_point(|at| entry(at) <= Some(event));
                let at = *read.removed_by_entry.get(after.checked_sub(1)?)?;
                (entry(&at) == Some(event)).then_some(at as usize)
            }
            Rows::Operations => read
                .operations
                .binary_search_by_key(&event, Operation::event)
                .ok(),
            Rows::Answers => read
                .answers
                .binary_search_by_key(&event, |a| a.0 as usize)
                .ok(),
            Rows::Elided => read.elided.row(event),
            Rows::Calls => None,
        }
    }

    /// For `removed`: each value (a `Removal`, one for all the entries one compaction or
    /// rewind took out) with how many entries have it and the first of them, in the order
    /// they were taken out; None for the other mappings. No entry's id is made but the
    /// first's: a pass over the keys in Python made 2.5 million strings for the 10 GB
    /// transcript, and the few kept held 236 MB of their arenas.
    #[allow(clippy::type_complexity)]
    fn tally<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<Option<Vec<(Bound<'py, PyAny>, usize, Bound<'py, PyString>)>>> {
        if self.rows != Rows::Removed {
            return Ok(None);
        }
        let read = &*self.read;
        let ids = read.ids.bind(py).get().table();
        let mut seen: Vec<(usize, u32)> = vec![(0, 0); read.removals.len()];
        for &(entry, by) in &read.removed {
            let slot = seen.get_mut(by as usize).ok_or_else(lost)?;
            if slot.0 == 0 {
                slot.1 = entry;
            }
            slot.0 += 1;
        }
        let mut out = Vec::new();
        for (removal, &(n, first)) in read.removals.iter().zip(&seen) {
            if n > 0 {
                let first = ids.id_at(first as usize).ok_or_else(lost)?;
                out.push((removal.bind(py).clone(), n, PyString::new(py, first)));
            }
        }
        Ok(Some(out))
    }

    /// The value of the entry at `at` (from `find`), built now.
    fn build<'py>(&self, py: Python<'py>, at: usize) -> PyResult<Bound<'py, PyAny>> {
        let read = &*self.read;
        let ids = read.ids.bind(py).get().table();
        let op_id = |op: usize| -> PyResult<Bound<'py, PyAny>> {
            let event = read.operations.get(op).ok_or_else(lost)?.event();
            Ok(PyString::new(py, ids.id_at(event).ok_or_else(lost)?).into_any())
        };
        match self.rows {
            Rows::Removed => {
                let &(_, by) = read.removed.get(at).ok_or_else(lost)?;
                Ok(read
                    .removals
                    .get(by as usize)
                    .ok_or_else(lost)?
                    .bind(py)
                    .clone())
            }
            Rows::Operations => {
                let op = read.operations.get(at).ok_or_else(lost)?;
                let file = read.file.as_deref().ok_or_else(lost)?;
                read.operation(&mut Builder::new(py), file, ids, op)
            }
            Rows::Answers => op_id(read.answers.get(at).ok_or_else(lost)?.1 as usize),
            Rows::Elided => {
                let elisions = PyList::empty(py);
                for elision in read.elided.elisions(at) {
                    elisions.append(ids.id_at(elision).ok_or_else(lost)?)?;
                }
                Ok(elisions.into_any())
            }
            Rows::Calls => {
                let ops = PyList::empty(py);
                for op in call_ops(&read.call_first, &read.operations, at) {
                    ops.append(op_id(op)?)?;
                }
                Ok(ops.into_any())
            }
        }
    }
}
