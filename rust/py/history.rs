//! `History.read` on the native core: the lenient fold of `replay::history` runs
//! without the GIL, then its notes become the reference's structures (the fields of
//! `_core.HistoryRead`, as `_history_fold.HistoryFold.feed` leaves them), with the
//! `FoldState` a load would build (`survivors::fold_state`).
//!
//! The two big ones stay notes: `removed` (an entry for most messages of a long
//! transcript) and `operations` (a quarter of its lines) are `_history_fold.ReadMapping`s
//! over `RemovedRows` and `OperationRows`, which build an entry when it is first asked
//! for. Built at once, they were most of the read's time and memory on top of the
//! fold (at 1 GB, ~150 MB of Python objects: the read's peak RSS was 0.30x the file).
//! The rest (elisions, grants snapshots, problems, the call ids still waiting) is small
//! and built now.

use std::fs::File;
use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};

use crate::envelope::parse_envelope_fields;
use crate::file_io::{BorrowedFile, Source};
use crate::json::view as json_view;
use crate::replay::fold::LineRef;
use crate::replay::history::{self as history_core, HistoryFold, Operation};
use crate::replay::id::IdTable;

use super::build::Builder;
use super::lazy::{self, read_line, EnvelopeIds};
use super::named::{self, call_kw};
use super::survivors::{self, value_at, GilTurns, LastLine};
use super::{os_error, to_pyerr};

/// The `HistoryRead` of the envelopes peek lists in the first `size` bytes of `fd`,
/// or None when it lists none (the first line is not a session-meta envelope).
/// `reopen_path`: see `lazy::reopen`.
#[pyfunction]
#[pyo3(signature = (fd, size, reopen_path=None))]
pub fn history<'py>(
    py: Python<'py>,
    fd: i32,
    size: u64,
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
    }) = read.map_err(|e| to_pyerr(py, e))?
    else {
        return Ok(py.None().into_bound(py));
    };
    let file = BorrowedFile::new(fd).map_err(|e| os_error(py, e))?;
    let own = lazy::reopen(fd, reopen_path).ok().map(Arc::new);
    let mut b = Builder::new(py);
    let mut last = LastLine::default();
    // What the notes only point to: a remover's time, a grants snapshot.
    let at = |event: usize| fold.events.get(event).copied().ok_or_else(lost);
    let removal = named::REMOVAL.get(py)?;
    let mut removals = Vec::with_capacity(notes.removers.len());
    for r in &notes.removers {
        let (id, ts) = header(&file, at(r.event)?)?;
        let kind = if r.rewind { "rewind" } else { "compaction" };
        removals.push(removal.call1((id, kind, ts))?.unbind());
    }
    let ids = &fold.envelope_at;
    let id = |event: usize| -> PyResult<Bound<'py, PyString>> {
        Ok(PyString::new(py, ids.id_at(event).ok_or_else(lost)?))
    };
    let elided = PyDict::new(py);
    for &(entry, by) in &notes.elided {
        let key = id(entry)?;
        match elided.get_item(&key)? {
            Some(list) => list.downcast::<PyList>()?.append(id(by)?)?,
            None => elided.set_item(key, PyList::new(py, [id(by)?])?)?,
        }
    }
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
            waiting.append(id(notes.operations.get(op).ok_or_else(lost)?.event)?)?;
        }
        unanswered.set_item(call_id, waiting)?;
    }
    let envelope_at = Bound::new(py, EnvelopeIds::new(std::mem::take(&mut fold.envelope_at)))?;
    let state = survivors::fold_state(py, &file, &mut fold, own.clone(), envelope_at.clone())?;
    if let Some((_, grants)) = &grants {
        // The grants in force are the last grants envelope's snapshot, one object, as
        // the reference's fold leaves them.
        state.setattr(intern!(py, "grants"), grants)?;
    }
    let read_mapping = named::READ_MAPPING.get(py)?;
    let removed = RemovedRows::new(
        envelope_at.clone().unbind(),
        std::mem::take(&mut notes.removed),
        removals,
        fold.events.len(),
    );
    let removed = read_mapping.call1((Bound::new(py, removed)?,))?;
    let rows = std::mem::take(&mut notes.operations);
    let operations = match own {
        Some(own) => {
            let rows = OperationRows {
                file: own,
                ids: envelope_at.clone().unbind(),
                rows,
            };
            read_mapping.call1((Bound::new(py, rows)?,))?
        }
        // No descriptor of our own to read them later by: every operation now.
        None => {
            let all = PyDict::new(py);
            let mut turn = GilTurns::default();
            for row in &rows {
                turn.take(py);
                let op = operation(&mut b, &file, envelope_at.get().table(), row)?;
                all.set_item(op.getattr(intern!(py, "op_id"))?, op)?;
            }
            all.into_any()
        }
    };
    let seen = named::IDS_SINCE_READ.get(py)?.call1((&envelope_at,))?;
    let fed = notes.count;
    // What is left of the fold and the notes is freed without the GIL (see `replay`).
    py.allow_threads(move || drop((fold, notes)));
    call_kw!(
        py,
        named::HISTORY_READ.get(py)?,
        state = state,
        fed = fed,
        removed = removed,
        elided = elided,
        operations = operations,
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

/// The `Operation` of a row: its dispatch's and its settle's lines read again and
/// validated (each must still be the envelope the read folded), the rest from the row.
fn operation<'py>(
    b: &mut Builder<'py>,
    file: &File,
    ids: &IdTable,
    row: &Operation,
) -> PyResult<Bound<'py, PyAny>> {
    let py = b.py();
    let id = |event: usize| ids.id_at(event).ok_or_else(lost);
    let raw = read_line(file, row.line)?;
    let mut fields = Vec::new();
    let env =
        parse_envelope_fields(&raw, row.line.offset, &mut fields).map_err(|_| changed(row.line))?;
    if env.id != id(row.event)? {
        return Err(changed(row.line));
    }
    let mut member = |key: &str| match json_view::get(&raw, &fields, key) {
        Some(item) => b.value(&raw, item),
        None => Ok(py.None().into_bound(py)),
    };
    let (call_id, tool, arguments) = (member("call-id")?, member("tool")?, member("arguments")?);
    let (state, settled_id, settled_at, settle) = match row.settle {
        Some(s) => {
            let raw = read_line(file, s.line)?;
            let mut fields = Vec::new();
            let env = parse_envelope_fields(&raw, s.line.offset, &mut fields)
                .map_err(|_| changed(s.line))?;
            if env.id != id(s.event)? {
                return Err(changed(s.line));
            }
            let payload = b.dict(&raw, &fields)?;
            // The fold checked it is one of the three outcomes.
            let outcome = payload
                .get_item(intern!(py, "outcome"))?
                .ok_or_else(|| changed(s.line))?;
            let (id, ts) = (env.id.into_owned(), env.ts.into_owned());
            (outcome, Some(id), Some(ts), payload)
        }
        None => (
            PyString::intern(py, row.pending_state()).into_any(),
            None,
            None,
            PyDict::new(py),
        ),
    };
    call_kw!(
        py,
        named::OPERATION.get(py)?,
        op_id = env.id.as_ref(),
        call_id = call_id,
        tool = tool,
        arguments = arguments,
        dispatched_at = env.ts.as_ref(),
        index = row.envelope,
        grants_id = row.grants.map(id).transpose()?,
        state = state,
        answered_by = row.answered_by.map(id).transpose()?,
        settled_id = settled_id,
        settled_at = settled_at,
        settle = settle,
    )
}

/// `History.operations` after a native read, under a `ReadMapping`: each operation
/// in file order, built from its lines when first asked for (through a descriptor of
/// its own; a file rewritten in place since gives `ValueError`).
#[pyclass(frozen, module = "llm_agent_session._native")]
pub struct OperationRows {
    file: Arc<File>,
    ids: Py<EnvelopeIds>,
    /// In file order (of their dispatches' `event`).
    rows: Vec<Operation>,
}

#[pymethods]
impl OperationRows {
    fn __len__(&self) -> usize {
        self.rows.len()
    }

    /// Every op id, in file order.
    fn keys<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let ids = self.ids.bind(py).get().table();
        let keys = PyList::empty(py);
        for row in &self.rows {
            keys.append(ids.id_at(row.event).ok_or_else(lost)?)?;
        }
        Ok(keys)
    }

    /// Where the operation `op_id` is, if the read holds it.
    fn find(&self, py: Python<'_>, op_id: &str) -> Option<usize> {
        let event = self.ids.bind(py).get().table().get(op_id)?;
        self.rows.binary_search_by_key(&event, |row| row.event).ok()
    }

    /// The operation at `at` (from `find`), built now.
    fn build<'py>(&self, py: Python<'py>, at: usize) -> PyResult<Bound<'py, PyAny>> {
        let row = self.rows.get(at).ok_or_else(lost)?;
        operation(
            &mut Builder::new(py),
            &self.file,
            self.ids.bind(py).get().table(),
            row,
        )
    }
}

/// `History.removed` after a native read, under a `ReadMapping`: each entry taken
/// out of the live list, in the order they were taken out, with its `Removal` (one
/// object for each compaction or rewind, as the reference's fold shares them).
#[pyclass(frozen, module = "llm_agent_session._native")]
pub struct RemovedRows {
    ids: Py<EnvelopeIds>,
    /// (entry, remover): the entry by its index in `events`, the remover in `removals`.
    order: Vec<(usize, usize)>,
    /// For each envelope by its index in `events`: where it is in `order` (or MAX).
    at_event: Vec<usize>,
    removals: Vec<Py<PyAny>>,
}

impl RemovedRows {
    fn new(
        ids: Py<EnvelopeIds>,
        order: Vec<(usize, usize)>,
        removals: Vec<Py<PyAny>>,
        events: usize,
    ) -> Self {
        let mut at_event = vec![usize::MAX; events];
        for (at, &(entry, _)) in order.iter().enumerate() {
            if let Some(slot) = at_event.get_mut(entry) {
                *slot = at;
            }
        }
        RemovedRows {
            ids,
            order,
            at_event,
            removals,
        }
    }
}

#[pymethods]
impl RemovedRows {
    fn __len__(&self) -> usize {
        self.order.len()
    }

    /// Every entry's id, in the order they were taken out.
    fn keys<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let ids = self.ids.bind(py).get().table();
        let keys = PyList::empty(py);
        for &(entry, _) in &self.order {
            keys.append(ids.id_at(entry).ok_or_else(lost)?)?;
        }
        Ok(keys)
    }

    /// Where the entry `id` is, if the read took it out.
    fn find(&self, py: Python<'_>, id: &str) -> Option<usize> {
        let event = self.ids.bind(py).get().table().get(id)?;
        self.at_event
            .get(event)
            .copied()
            .filter(|&at| at != usize::MAX)
    }

    /// The `Removal` of the entry at `at` (from `find`).
    fn build<'py>(&self, py: Python<'py>, at: usize) -> PyResult<Bound<'py, PyAny>> {
        let &(_, by) = self.order.get(at).ok_or_else(lost)?;
        let removal = self.removals.get(by).ok_or_else(lost)?;
        Ok(removal.bind(py).clone())
    }
}
