//! The PyO3 module `llm_agent_session._native`: the only place that knows Python.
//!
//! Each function converts its arguments to owned Rust values, releases the GIL for
//! the byte work, and turns the core's error data into exceptions here, in one place:
//! `CoreFailure` (from `llm_agent_session.errors`) for refusals, `OSError` with the
//! errno and the C library's message (as `os.pread`/`os.write` raise it) for system
//! calls, `LineProblem` (a `ValueError`) for one line's verdict.

use std::io;

use pyo3::create_exception;
use pyo3::exceptions::{PyMemoryError, PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::{PyBytes, PyType};

use crate::envelope::parse_envelope;
use crate::error::CoreError;
use crate::file_io::BorrowedFile;
use crate::json_grammar::classify;
use crate::repair_copy;
use crate::tail;

create_exception!(
    _native,
    LineProblem,
    PyValueError,
    "Why a line is not an envelope: args are (kind, reason), kind \"corrupt\" or \"version\"."
);

static CORE_FAILURE: GILOnceCell<Py<PyType>> = GILOnceCell::new();

fn os_error(py: Python<'_>, e: io::Error) -> PyErr {
    match e.raw_os_error() {
        Some(errno) => {
            // OSError(errno, strerror) picks the subclass (FileNotFoundError, ...)
            // and reads exactly like the error of the reference's os calls.
            let message = py
                .import("os")
                .and_then(|os| os.getattr("strerror")?.call1((errno,))?.extract::<String>())
                .unwrap_or_else(|_| e.to_string());
            PyOSError::new_err((errno, message))
        }
        None if e.kind() == io::ErrorKind::OutOfMemory => PyMemoryError::new_err(e.to_string()),
        None => PyOSError::new_err(e.to_string()),
    }
}

fn to_pyerr(py: Python<'_>, e: CoreError) -> PyErr {
    match e {
        CoreError::Failure(f) => {
            let made = CORE_FAILURE
                .import(py, "llm_agent_session.errors", "CoreFailure")
                .and_then(|cls| cls.call1((f.kind.as_str(), f.line, f.offset, f.reason)));
            match made {
                Ok(exc) => PyErr::from_value(exc),
                Err(import_error) => import_error,
            }
        }
        CoreError::Io(e) => os_error(py, e),
        CoreError::ShorterThanSize => PyValueError::new_err(CoreError::ShorterThanSize.to_string()),
        e @ CoreError::Shrank { .. } => PyOSError::new_err(e.to_string()),
    }
}

/// `"whole"`, `"torn"` or `"too-deep"`: the tail check's verdict on one line.
#[pyfunction]
fn classify_line(py: Python<'_>, raw: &[u8]) -> &'static str {
    let raw = raw.to_vec();
    py.allow_threads(move || classify(&raw).as_str())
}

/// `(id, type, ts)` of an envelope line, or `LineProblem(kind, reason)`.
#[pyfunction]
fn parse_envelope_check(
    py: Python<'_>,
    raw: &[u8],
    line_offset: u64,
) -> PyResult<(String, String, String)> {
    let raw = raw.to_vec();
    py.allow_threads(move || parse_envelope(&raw, line_offset))
        .map(|env| (env.id, env.type_, env.ts))
        .map_err(|p| LineProblem::new_err((p.kind.as_str(), p.reason)))
}

/// `(kind, cut, line, excerpt)` for the first `size` bytes of `fd`; raises
/// `CoreFailure` when load must refuse the file.
#[pyfunction]
fn tail_check<'py>(
    py: Python<'py>,
    fd: i32,
    size: u64,
) -> PyResult<(&'static str, u64, u64, Bound<'py, PyBytes>)> {
    let verdict = py.allow_threads(move || {
        if size == 0 {
            // Like the reference, an empty read never touches the descriptor.
            return tail::tail_check(&[][..], 0);
        }
        let file = BorrowedFile::new(fd)?;
        tail::tail_check(&*file, size)
    });
    let v = verdict.map_err(|e| to_pyerr(py, e))?;
    Ok((v.kind.as_str(), v.cut, v.line, PyBytes::new(py, &v.excerpt)))
}

/// Copy bytes `[0, length)` of `src_fd` to `dst_fd` (at its current position).
#[pyfunction]
fn copy_prefix(py: Python<'_>, src_fd: i32, dst_fd: i32, length: u64) -> PyResult<()> {
    py.allow_threads(move || {
        if length == 0 {
            return Ok(());
        }
        let src = BorrowedFile::new(src_fd)?;
        let dst = BorrowedFile::new(dst_fd)?;
        repair_copy::copy_prefix(&*src, &*dst, length)
    })
    .map_err(|e| to_pyerr(py, e))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_function(wrap_pyfunction!(classify_line, m)?)?;
    m.add_function(wrap_pyfunction!(parse_envelope_check, m)?)?;
    m.add_function(wrap_pyfunction!(tail_check, m)?)?;
    m.add_function(wrap_pyfunction!(copy_prefix, m)?)?;
    let line_problem = py.get_type::<LineProblem>();
    line_problem.setattr("__module__", "llm_agent_session._native")?;
    m.add("LineProblem", line_problem)?;
    m.add("MAX_READ_DEPTH", crate::json_grammar::MAX_READ_DEPTH)?;
    Ok(())
}
