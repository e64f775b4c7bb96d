//! `dataset_pass`: the dataset pass (`crate::columns`) for Python, as a `_core.DatasetPass`:
//! the first pass and the fold run when it is made, each run of rows when iterated,
//! both without the GIL; every column handed over as `_core.Column` buffers.

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
#[pyclass(module = "llm_agent_session._native")]
pub struct DatasetPass {
    pass: Pass,
    fd: i32,
    /// Where the range starts in the file: the pass's offsets count from it.
    start: u64,
    extras: bool,
    next: usize,
    cursor: Cursor,
    summary: Py<PyAny>,
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
    )?
    .unbind();
    Ok(DatasetPass {
        pass,
        fd,
        start,
        extras,
        next: 0,
        cursor: Cursor::default(),
        summary,
    })
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

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        if self.next >= self.pass.runs.len() {
            return Ok(None);
        }
        let run = self.next;
        self.next += 1;
        let (pass, fd, start, extras, cursor) = (
            &self.pass,
            self.fd,
            self.start,
            self.extras,
            &mut self.cursor,
        );
        let tables = py.allow_threads(move || -> crate::error::CoreResult<Tables> {
            if pass.lines.is_empty() {
                return pass.rows(&[][..], run, extras, cursor);
            }
            let file = BorrowedFile::new(fd)?;
            pass.rows(&FromOffset::new(&*file, start), run, extras, cursor)
        });
        let tables = tables.map_err(|e| to_pyerr(py, e))?;
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
