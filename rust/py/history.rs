//! `History.read` on the native core: the lenient fold of `replay::history` runs
//! without the GIL, then its notes become the reference's structures (the fields of
//! `_core.HistoryRead`, as `_history_fold.HistoryFold.feed` leaves them), with the
//! `FoldState` a load would build (`survivors::fold_state`).
//!
//! The notes are indices; the strings come from the fold's id table, each made once
//! (an operation's id serves as its key, in `unanswered`, ...). What is most of a
//! line, an operation's `arguments` and its settle's payload, is a `Deferred`, built
//! on first access (`_BuiltOnAccess` on `Operation`); where no descriptor of our own
//! can be had (see `lazy::reopen`), they are built now.

use std::collections::HashMap;
use std::fs::File;
use std::sync::Arc;

use pyo3::exceptions::PyValueError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::{PyDict, PyList, PyString};

use crate::file_io::{BorrowedFile, Source};
use crate::replay::fold::LineRef;
use crate::replay::history::{self as history_core, HistoryFold, Notes};
use crate::replay::id::IdTable;

use super::build::Builder;
use super::lazy::{self, bare_instance, build_part, maker, Deferred, EnvelopeIds, Maker, Part};
use super::named::{self, call_kw};
use super::survivors::{self, value_at, GilTurns, LastLine};
use super::{os_error, to_pyerr};

static OPERATION_MAKER: GILOnceCell<Maker> = GILOnceCell::new();

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
    let Some(HistoryFold { mut fold, notes }) = read.map_err(|e| to_pyerr(py, e))? else {
        return Ok(py.None().into_bound(py));
    };
    let file = BorrowedFile::new(fd).map_err(|e| os_error(py, e))?;
    let own = lazy::reopen(fd, reopen_path).ok().map(Arc::new);
    let mut made = Made::new(py, &file, own.clone(), &fold.envelope_at);
    let removed = made.removed(&notes)?;
    let elided = made.elided(&notes)?;
    let (grants_by_id, grants_ids, last_grants) = made.grants(&notes)?;
    let (operations, op_ids) = made.operations(&notes, &grants_ids)?;
    let problems = made.problems(&notes)?;
    let unanswered = PyDict::new(py);
    for (call_id, ops) in notes.unanswered() {
        let ids = PyList::empty(py);
        for &op in ops {
            ids.append(op_ids.get(op).ok_or_else(lost)?)?;
        }
        unanswered.set_item(call_id, ids)?;
    }
    drop(made);
    let envelope_at = Bound::new(py, EnvelopeIds::new(std::mem::take(&mut fold.envelope_at)))?;
    let state = survivors::fold_state(py, &file, &mut fold, own, envelope_at.clone())?;
    if let Some(grants) = last_grants {
        // The grants in force are the last grants envelope's snapshot, one object, as
        // the reference's fold leaves them.
        state.setattr(intern!(py, "grants"), grants)?;
    }
    let seen = named::IDS_SINCE_READ.get(py)?.call1((envelope_at,))?;
    let count = notes.count;
    // What is left of the fold and the notes is freed without the GIL (see `replay`).
    py.allow_threads(move || drop((fold, notes)));
    call_kw!(
        py,
        named::HISTORY_READ.get(py)?,
        state = state,
        fed = count,
        removed = removed,
        elided = elided,
        operations = operations,
        grants_by_id = grants_by_id,
        grants_id = grants_ids.last(),
        problems = problems,
        seen = seen,
        unanswered = unanswered,
    )
}

/// What builds the structures: the id table, the file, the descriptor lazy values
/// read through (None: values are built now).
struct Made<'py, 'a> {
    py: Python<'py>,
    file: &'a File,
    own: Option<Arc<File>>,
    ids: &'a IdTable,
    b: Builder<'py>,
    last: LastLine,
    turn: GilTurns,
}

impl<'py, 'a> Made<'py, 'a> {
    fn new(py: Python<'py>, file: &'a File, own: Option<Arc<File>>, ids: &'a IdTable) -> Self {
        Made {
            py,
            file,
            own,
            ids,
            b: Builder::new(py),
            last: LastLine::default(),
            turn: GilTurns::default(),
        }
    }

    /// The id of the envelope at `event` (its index in the fold's `events`).
    fn id(&self, event: usize) -> PyResult<Bound<'py, PyString>> {
        let id = self
            .ids
            .id_at(event)
            .ok_or_else(|| PyValueError::new_err("a history read lost an envelope's id"))?;
        Ok(PyString::new(self.py, id))
    }

    /// `removed`: entry id -> `Removal`, one `Removal` per compaction or rewind.
    fn removed(&mut self, notes: &Notes) -> PyResult<Bound<'py, PyDict>> {
        let py = self.py;
        let removal = named::REMOVAL.get(py)?;
        let mut removers = Vec::with_capacity(notes.removers.len());
        for r in &notes.removers {
            let kind = if r.rewind { "rewind" } else { "compaction" };
            removers.push(removal.call1((self.id(r.event)?, kind, &*r.ts))?);
        }
        let removed = PyDict::new(py);
        for &(entry, by) in &notes.removed {
            self.turn.take(py);
            let by = removers.get(by).ok_or_else(lost)?;
            removed.set_item(self.id(entry)?, by)?;
        }
        Ok(removed)
    }

    /// `elided`: entry id -> the ids of the elisions that stubbed it, in order.
    fn elided(&mut self, notes: &Notes) -> PyResult<Bound<'py, PyDict>> {
        let py = self.py;
        let elided = PyDict::new(py);
        let mut elision: Option<(usize, Bound<'py, PyString>)> = None;
        for &(entry, by) in &notes.elided {
            let by = match &elision {
                Some((at, id)) if *at == by => id.clone(),
                _ => {
                    let id = self.id(by)?;
                    elision = Some((by, id.clone()));
                    id
                }
            };
            let key = self.id(entry)?;
            match elided.get_item(&key)? {
                Some(list) => list.downcast::<PyList>()?.append(by)?,
                None => elided.set_item(key, PyList::new(py, [by])?)?,
            }
        }
        Ok(elided)
    }

    /// `grants_by_id`, each grants envelope's id (in order), and the last snapshot.
    #[allow(clippy::type_complexity)]
    fn grants(
        &mut self,
        notes: &Notes,
    ) -> PyResult<(
        Bound<'py, PyDict>,
        Vec<Bound<'py, PyString>>,
        Option<Bound<'py, PyAny>>,
    )> {
        let by_id = PyDict::new(self.py);
        let mut ids = Vec::with_capacity(notes.grants.len());
        let mut last = None;
        for &(event, value) in &notes.grants {
            self.turn.take(self.py);
            let id = self.id(event)?;
            let grants = value_at(&mut self.b, &mut self.last, self.file, value)?;
            by_id.set_item(&id, &grants)?;
            ids.push(id);
            last = Some(grants);
        }
        Ok((by_id, ids, last))
    }

    /// A part of the line at `at`: deferred to first access, or built now.
    fn part(&mut self, at: LineRef, part: Part) -> PyResult<Bound<'py, PyAny>> {
        match &self.own {
            Some(own) => Ok(Bound::new(self.py, Deferred::new(own.clone(), at, part))?.into_any()),
            None => build_part(&mut self.b, self.file, at, part),
        }
    }

    /// `operations`: op id -> `Operation`, in file order; and each one's id.
    fn operations(
        &mut self,
        notes: &Notes,
        grants_ids: &[Bound<'py, PyString>],
    ) -> PyResult<(Bound<'py, PyDict>, Vec<Bound<'py, PyString>>)> {
        let py = self.py;
        let operations = PyDict::new(py);
        let mut op_ids = Vec::with_capacity(notes.operations.len());
        // A transcript calls a few tools many times: one string for each.
        let mut tools: HashMap<&str, Bound<'py, PyString>> = HashMap::new();
        let none = py.None().into_bound(py);
        // Built now or on first access: which field of the instance holds it.
        let (arguments_key, settle_key) = if self.own.is_some() {
            (
                intern!(py, "_deferred_arguments"),
                intern!(py, "_deferred_settle"),
            )
        } else {
            (intern!(py, "arguments"), intern!(py, "settle"))
        };
        let maker = maker(py, &OPERATION_MAKER, &named::OPERATION)?;
        for op in &notes.operations {
            self.turn.take(py);
            let op_id = self.id(op.event)?;
            let tool = tools
                .entry(op.tool.as_ref())
                .or_insert_with(|| PyString::new(py, &op.tool))
                .clone();
            let grants_id = match op.grants {
                Some(g) => grants_ids.get(g).ok_or_else(lost)?.clone().into_any(),
                None => none.clone(),
            };
            let answered_by = match op.answered_by {
                Some(e) => self.id(e)?.into_any(),
                None => none.clone(),
            };
            let (settled_id, settled_at, settle) = match &op.settle {
                Some(s) => (
                    self.id(s.event)?.into_any(),
                    PyString::new(py, &s.ts).into_any(),
                    (settle_key, self.part(s.line, Part::Payload)?),
                ),
                None => (
                    none.clone(),
                    none.clone(),
                    (intern!(py, "settle"), PyDict::new(py).into_any()),
                ),
            };
            let fields = [
                (intern!(py, "op_id"), op_id.clone().into_any()),
                (
                    intern!(py, "call_id"),
                    PyString::new(py, &op.call_id).into_any(),
                ),
                (intern!(py, "tool"), tool.into_any()),
                (
                    arguments_key,
                    self.part(op.line, Part::Member("arguments"))?,
                ),
                (
                    intern!(py, "dispatched_at"),
                    PyString::new(py, &op.ts).into_any(),
                ),
                (
                    intern!(py, "index"),
                    op.envelope.into_pyobject(py)?.into_any(),
                ),
                (intern!(py, "grants_id"), grants_id),
                (
                    intern!(py, "state"),
                    PyString::intern(py, op.state()).into_any(),
                ),
                (intern!(py, "answered_by"), answered_by),
                (intern!(py, "settled_id"), settled_id),
                (intern!(py, "settled_at"), settled_at),
                settle,
            ];
            operations.set_item(&op_id, bare_instance(py, maker, fields)?)?;
            op_ids.push(op_id);
        }
        Ok((operations, op_ids))
    }

    /// `problems`: a `Problem` for each envelope the fold refused.
    fn problems(&mut self, notes: &Notes) -> PyResult<Bound<'py, PyList>> {
        let problem = named::PROBLEM.get(self.py)?;
        let problems = PyList::empty(self.py);
        for p in &notes.problems {
            problems.append(problem.call1((p.envelope, p.id.as_str(), &p.type_, &p.reason))?)?;
        }
        Ok(problems)
    }
}

fn lost() -> PyErr {
    PyValueError::new_err("a history read's notes name an entry they do not hold")
}
