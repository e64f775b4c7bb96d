//! `dataset_pass`: the dataset pass (`crate::columns`) for Python, as a `_core.DatasetPass`:
//! the first pass and the fold run when it is made, each run of rows when iterated,
//! both without the GIL; every column handed over as `_core.Column` buffers.

use std::sync::{Mutex, PoisonError};

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::columns::buffers::Column;
use crate::columns::lines::First;
use crate::columns::{self, Cursor, Pass, Tables};
use crate::file_io::{BorrowedFile, FromOffset, Source};

use super::named::{self, call_kw};
use super::to_pyerr;

/// One transcript's dataset rows: `summary`, then the runs of rows as
/// `{table: {column: Column}}`.
///
/// Frozen: an export makes the next run on a thread of its own, without the GIL, while
/// it writes this one (`dataset.rows.read_ahead`); a pass borrowed mutably for that run
/// failed every other use meanwhile (`summary` on the writing thread: "Already mutably
/// borrowed"). What changes from run to run is behind a lock taken without the GIL:
/// `summary` and `id_digest` answer at any time, and runs asked for from two threads
/// are made one at a time, in order.
#[pyclass(module = "llm_agent_session._native", frozen)]
pub struct DatasetPass {
    pass: Pass,
    fd: i32,
    /// Where the range starts in the file: the pass's offsets count from it.
    start: u64,
    extras: bool,
    at: Mutex<RunsAt>,
    summary: Py<PyAny>,
}

/// Where the iteration is: the next run, and the cursor carried from run to run.
#[derive(Default)]
struct RunsAt {
    next: usize,
    cursor: Cursor,
}

/// Read and fold bytes `[start, stop)` of `fd` as a file of their own (the twin of
/// `_pure.columns.dataset_pass`).
#[pyfunction]
#[pyo3(signature = (fd, stop, final_line, extras, chunk, start = 0))]
pub fn dataset_pass(
    py: Python<'_>,
    fd: i32,
    stop: u64,
    final_line: bool,
    extras: bool,
    chunk: u64,
    start: u64,
) -> PyResult<DatasetPass> {
    let pass = py.allow_threads(move || {
        if stop <= start {
            return columns::pass(&[][..], 0, final_line, chunk);
        }
        let file = BorrowedFile::new(fd)?;
        let src = FromOffset::new(&*file, start);
        let stop = (stop - start).min(src.size()?);
        columns::pass(&src, stop, final_line, chunk)
    });
    let pass = pass.map_err(|e| to_pyerr(py, e))?;
    let (first_type, meta) = match &pass.first {
        First::Envelope { type_, meta } => (Some(type_.clone()), meta.clone()),
        _ => (None, None),
    };
    let usage = usage_totals(py, &pass.usage)?;
    let meta_id = meta
        .as_ref()
        .and_then(|_| pass.lines.first())
        .map(|l| l.id.to_string());
    let summary = call_kw!(
        py,
        named::DATASET_SUMMARY.get(py)?,
        envelopes = pass.lines.len(),
        skipped = pass.skipped,
        refused = pass.fold.refused,
        first_type = first_type,
        meta_id = meta_id,
        meta_ts = meta.as_ref().map(|m| m.0.clone()),
        meta = meta.map(|m| m.1),
        model = pass.model.clone(),
        first_ts = pass.first_ts,
        last_ts = pass.last_ts,
        elisions = pass.elisions,
        grants = pass.grants.clone(),
        lines = pass.line_count,
        usage = usage,
    )?
    .unbind();
    Ok(DatasetPass {
        pass,
        fd,
        start,
        extras,
        at: Mutex::default(),
        summary,
    })
}

/// A counted response: the envelope id of the line it is counted at, its response id
/// (or None), input, output, cache read, cache write.
type Response = (
    String,
    Option<String>,
    Option<i64>,
    Option<i64>,
    Option<i64>,
    Option<i64>,
);

/// `(totals, responses)`: the token usage of bytes `[0, stop)` of `fd`, as
/// `dataset_pass(fd, stop, final_line, ...)` counts it (its `summary.usage` and
/// `responses()`), each line kept as its id, usage and role only
/// (`crate::columns::usage_pass`; the twin of `_pure.columns.usage_pass`).
#[pyfunction]
pub fn usage_pass(
    py: Python<'_>,
    fd: i32,
    stop: u64,
    final_line: bool,
) -> PyResult<(Py<PyAny>, Vec<Response>)> {
    let pass = py.allow_threads(move || {
        let file = BorrowedFile::new(fd)?;
        let stop = stop.min(file.size()?);
        columns::usage_pass::pass(&*file, stop, final_line)
    });
    let pass = pass.map_err(|e| to_pyerr(py, e))?;
    let responses = pass
        .responses()
        .map(|(line, s)| {
            let [i, o, r, w] = s.figures;
            (line.id.to_string(), s.response_id.clone(), i, o, r, w)
        })
        .collect();
    Ok((usage_totals(py, &pass.totals)?, responses))
}

/// `usage.UsageTotals` of `totals`.
fn usage_totals(py: Python<'_>, totals: &columns::usage::Totals) -> PyResult<Py<PyAny>> {
    let [input, output, cache_read, cache_write] = totals.figures;
    Ok(call_kw!(
        py,
        named::USAGE_TOTALS.get(py)?,
        input = input,
        output = output,
        cache_read = cache_read,
        cache_write = cache_write,
        responses = totals.responses,
        unmeasured = totals.unmeasured,
    )?
    .unbind())
}

#[pymethods]
impl DatasetPass {
    #[getter]
    fn summary(&self, py: Python<'_>) -> Py<PyAny> {
        self.summary.clone_ref(py)
    }

    /// The kept envelopes' ids' FNV-1a hashes, sorted, 8 bytes little-endian each
    /// (`Pass::id_digest`); the ids stay with the pass, so before or after the rows.
    fn id_digest<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        let pass = &self.pass;
        let digest = py.allow_threads(move || pass.id_digest());
        PyBytes::new(py, &digest)
    }

    /// The counted responses, in file order of the lines they are counted at: (that
    /// line's envelope id, response id or None, input, output, cache_read, cache_write)
    /// each (`_core.DatasetPass.responses`).
    #[allow(clippy::type_complexity)]
    fn responses(
        &self,
    ) -> Vec<(
        &str,
        Option<&str>,
        Option<i64>,
        Option<i64>,
        Option<i64>,
        Option<i64>,
    )> {
        self.pass
            .responses()
            .map(|(line, s)| {
                let [i, o, r, w] = s.figures;
                (line.id.as_str(), s.response_id.as_deref(), i, o, r, w)
            })
            .collect()
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let (pass, fd, start, extras, at) =
            (&self.pass, self.fd, self.start, self.extras, &self.at);
        let tables = py.allow_threads(move || -> crate::error::CoreResult<Option<Tables>> {
            // Poisoned only by a run that panicked part way: its cursor is not to be trusted.
            let mut at = at.lock().map_err(|_: PoisonError<_>| {
                crate::error::CoreError::Io(std::io::Error::other(
                    "a run of this dataset pass failed part way; its later rows cannot be made",
                ))
            })?;
            let run = at.next;
            if run >= pass.runs.len() {
                return Ok(None);
            }
            at.next += 1;
            if pass.lines.is_empty() {
                return pass.rows(&[][..], run, extras, &mut at.cursor).map(Some);
            }
            let file = BorrowedFile::new(fd)?;
            pass.rows(&FromOffset::new(&*file, start), run, extras, &mut at.cursor)
                .map(Some)
        });
        let Some(tables) = tables.map_err(|e| to_pyerr(py, e))? else {
            return Ok(None);
        };
        let out = PyDict::new(py);
        for (name, columns) in [
            ("messages", tables.messages),
            ("tool_calls", tables.tool_calls),
            ("compactions", tables.compactions),
            ("rewinds", tables.rewinds),
            ("grants", tables.grants),
        ] {
            let table = PyDict::new(py);
            for (column, data) in columns {
                table.set_item(column, column_object(py, data)?)?;
            }
            out.set_item(name, table)?;
        }
        Ok(Some(out))
    }
}

fn column_object(py: Python<'_>, c: Column) -> PyResult<Bound<'_, PyAny>> {
    call_kw!(
        py,
        named::COLUMN.get(py)?,
        kind = c.kind,
        length = c.len,
        values = buffer(py, c.values)?,
        offsets = c.offsets.map(|o| buffer(py, o)).transpose()?,
        validity = c.validity.map(|v| buffer(py, v)).transpose()?,
    )
}

/// The bytes of a column handed over without a copy: a `RowBuffer` that owns them (an
/// empty one as `b""`, which has no address to hand out).
fn buffer(py: Python<'_>, data: Vec<u8>) -> PyResult<Bound<'_, PyAny>> {
    if data.is_empty() {
        return Ok(PyBytes::new(py, b"").into_any());
    }
    Ok(Bound::new(py, RowBuffer { data })?.into_any())
}

/// Bytes a column's values are in, owned here and never changed: pyarrow wraps them
/// where they are (`pyarrow.foreign_buffer(address, len, base=this)`, which keeps this
/// object, so the bytes, alive as long as any array uses them). Copying each run's
/// columns into `bytes` instead was a tenth of an export (256 MB: 0.12 s of 1.4 s CPU).
#[pyclass(module = "llm_agent_session._native", frozen)]
pub struct RowBuffer {
    data: Vec<u8>,
}

#[pymethods]
impl RowBuffer {
    /// Where the bytes start (valid while this object lives).
    #[getter]
    fn address(&self) -> usize {
        self.data.as_ptr() as usize
    }

    fn __len__(&self) -> usize {
        self.data.len()
    }
}
