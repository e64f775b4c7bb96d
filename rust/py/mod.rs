//! The PyO3 module `llm_agent_session._native`: everything that knows Python is under
//! `py/` (see `lib.rs`), and this file is the module itself.
//!
//! Each function converts its arguments to owned Rust values, releases the GIL for
//! the byte work, answers the `llm_agent_session._core` named types (`named`), and
//! turns the core's error data into exceptions here, in one place:
//! `CoreFailure` (from `llm_agent_session.errors`) for refusals, `OSError` with the
//! errno and the C library's message (as `os.pread`/`os.write` raise it) for system
//! calls, `LineProblem` (a `ValueError`) for one line's verdict.

mod build;
mod columns;
mod encode;
mod history;
mod import;
mod index;
mod lazy;
mod named;
mod search;
mod secrets;
mod survivors;

use std::io;
use std::sync::Arc;

use pyo3::create_exception;
use pyo3::exceptions::{PyMemoryError, PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};

use crate::envelope::parse_envelope;
use crate::error::CoreError;
use crate::file_io::{BorrowedFile, Source};
use crate::index::lines::Lines;
use crate::json::grammar::classify;
use crate::repair_copy;
use crate::replay as replay_core;
use crate::replay::fold::LineRef;
use crate::scan as scan_core;

use lazy::{EnvelopeIds, LineIndex};
use named::call_kw;

create_exception!(
    _native,
    LineProblem,
    PyValueError,
    "Why a line is not an envelope: args are (kind, reason), kind \"corrupt\" or \"version\"."
);

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

pub(crate) fn to_pyerr(py: Python<'_>, e: CoreError) -> PyErr {
    match e {
        CoreError::Failure(f) => {
            let made = named::CORE_FAILURE
                .get(py)
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

/// Whether the first line of `head` that is not blank ends within it and is a
/// `session-meta` envelope (`crate::search::first_line_is_meta`). A head of a few
/// KiB is read with the GIL held: let go and taken back, a search's look at each
/// file's first line waited behind the other search threads for it.
#[pyfunction]
fn first_line_is_meta(py: Python<'_>, head: &[u8]) -> bool {
    if head.len() <= HELD_LINE_MAX {
        return crate::search::first_line_is_meta(head);
    }
    let head = head.to_vec();
    py.allow_threads(move || crate::search::first_line_is_meta(&head))
}

/// The longest head `first_line_is_meta` reads with the GIL held.
const HELD_LINE_MAX: usize = 64 << 10;

/// The `TailVerdict` of the first `size` bytes of `fd`; raises `CoreFailure` when
/// load must refuse the file.
#[pyfunction]
fn tail_check(py: Python<'_>, fd: i32, size: u64) -> PyResult<Bound<'_, PyAny>> {
    // `crate::tail_check::tail_check` in full: this function's name is taken.
    let verdict = py.allow_threads(move || {
        if size == 0 {
            // Like the reference, an empty read never touches the descriptor.
            return crate::tail_check::tail_check(&[][..], 0);
        }
        let file = BorrowedFile::new(fd)?;
        // Like the reference, a file shorter than `size` is read as far as it goes.
        let size = size.min(file.size()?);
        crate::tail_check::tail_check(&*file, size)
    });
    let v = verdict.map_err(|e| to_pyerr(py, e))?;
    call_kw!(
        py,
        named::TAIL_VERDICT.get(py)?,
        kind = v.kind.as_str(),
        cut = v.cut,
        line = v.line,
        excerpt = PyBytes::new(py, &v.excerpt),
    )
}

/// How many leading items of `a` and `b` are the very same objects (`is`): the
/// identity pass of `Session.sync_messages`. It reads the two lists' item pointers
/// and touches no item (no reference count), so a 10,000-message list costs
/// microseconds; `_pure/core.py` has the reference.
#[pyfunction]
fn identical_prefix(a: &Bound<'_, PyList>, b: &Bound<'_, PyList>) -> usize {
    let n = a.len().min(b.len());
    let (a, b) = (a.as_ptr(), b.as_ptr());
    (0..n)
        .take_while(|&i| {
            // Below both lengths, so it fits.
            let i = i as pyo3::ffi::Py_ssize_t;
            // SAFETY: `a` and `b` are lists (PyO3 checked their type) that this call
            // holds with the GIL held; `i` is below both lengths, and nothing here runs
            // Python code that could shrink them. `PyList_GetItem` returns a borrowed
            // pointer, only compared, never dereferenced or kept.
            unsafe { pyo3::ffi::PyList_GetItem(a, i) == pyo3::ffi::PyList_GetItem(b, i) }
        })
        .count()
}

/// The size of `fd` if appending to it is still safe: it has a link, and `path`
/// (followed, as `os.stat` follows it) names the same inode; else -1 (deleted or
/// replaced). The check of every append (docs/durability.md), in one call: the reference is
/// `Session._writable_fd` (`os.fstat`, then `same_inode`, where only a missing path
/// means "replaced" and any other error of `stat` is raised).
#[pyfunction]
fn append_size(py: Python<'_>, fd: i32, path: std::path::PathBuf) -> PyResult<i64> {
    use std::os::unix::fs::MetadataExt;
    let checked = (|| -> io::Result<i64> {
        let mine = BorrowedFile::new(fd)?.metadata()?;
        if mine.nlink() == 0 {
            return Ok(-1);
        }
        match std::fs::metadata(&path) {
            Ok(now) if (now.dev(), now.ino()) == (mine.dev(), mine.ino()) => {
                Ok(i64::try_from(mine.size()).unwrap_or(i64::MAX))
            }
            Ok(_) => Ok(-1),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(-1),
            Err(e) => Err(e),
        }
    })();
    checked.map_err(|e| os_error(py, e))
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

/// Replay the first `size` bytes of `fd`: a `Replayed`, or `CoreFailure`. The byte
/// work (read, validate, fold) runs without the GIL; then only the survivors are
/// built. `reopen_path`: see `lazy::reopen`.
#[pyfunction]
#[pyo3(signature = (fd, size, reopen_path=None))]
fn replay<'py>(
    py: Python<'py>,
    fd: i32,
    size: u64,
    reopen_path: Option<&str>,
) -> PyResult<Bound<'py, PyAny>> {
    let folded = py.allow_threads(move || {
        if size == 0 {
            // Like the reference, an empty read never touches the descriptor.
            return replay_core::replay(&[][..], 0);
        }
        let file = BorrowedFile::new(fd)?;
        // Like the reference, a file shorter than `size` is read as far as it goes.
        let size = size.min(file.size()?);
        replay_core::replay(&*file, size)
    });
    let mut fold = folded.map_err(|e| to_pyerr(py, e))?;
    let envelope_at = std::mem::take(&mut fold.envelope_at);
    let file = BorrowedFile::new(fd).map_err(|e| os_error(py, e))?;
    // Lazy parts read through a descriptor of their own; where none can be had
    // (not the same inode at the path, no `/proc`), everything is built now.
    let own = lazy::reopen(fd, reopen_path).ok().map(Arc::new);
    let envelope_at = Bound::new(py, EnvelopeIds::new(envelope_at))?;
    let events = fold.events.len();
    let state =
        survivors::fold_state(py, &file, &mut fold, events, own.clone(), envelope_at, None)?;
    let lines = std::mem::take(&mut fold.events);
    let events = match own {
        Some(own) => lazy_list(py, LineIndex::events(own, Arc::new(lines), Vec::new()))?,
        None => all_events(py, &file, &lines)?,
    };
    // What is left of the fold (every settled id, the operation tables) is freed without
    // the GIL: at hundreds of MB that is milliseconds, a stall of every other thread
    // (AsyncSession; benches/event_loop.py measures it).
    py.allow_threads(move || drop(fold));
    call_kw!(py, named::REPLAYED.get(py)?, state = state, events = events)
}

/// `LazyList(index)`: the index's items built on access.
pub(crate) fn lazy_list(py: Python<'_>, index: LineIndex) -> PyResult<Bound<'_, PyAny>> {
    named::LAZY_LIST.get(py)?.call1((Bound::new(py, index)?,))
}

/// Every event built now, in a list.
pub(crate) fn all_events<'py>(
    py: Python<'py>,
    file: &std::fs::File,
    lines: &Lines,
) -> PyResult<Bound<'py, PyAny>> {
    let list = PyList::empty(py);
    let mut b = build::Builder::new(py);
    for at in lines.iter() {
        list.append(lazy::event_at(&mut b, file, at)?)?;
    }
    Ok(list.into_any())
}

/// The lenient scan of `[start, size)`: a `Scanned`, whose `events` and `messages`
/// are built on access and whose `survey` (`SurveyCounts`, see `survey::Survey`) is
/// None unless asked for. `reopen_path`: see `lazy::reopen`.
#[pyfunction]
#[pyo3(signature = (fd, start, size, final_line=false, want_ids=false, want_survey=false, reopen_path=None))]
#[allow(clippy::too_many_arguments)]
fn scan<'py>(
    py: Python<'py>,
    fd: i32,
    start: u64,
    size: u64,
    final_line: bool,
    want_ids: bool,
    want_survey: bool,
    reopen_path: Option<&str>,
) -> PyResult<Bound<'py, PyAny>> {
    let want = scan_core::Wanted {
        ids: want_ids,
        survey: want_survey,
        // Peek's Events are iterated; salvage and fork (which want ids) never do.
        headers: !want_ids,
    };
    let scanned = py.allow_threads(move || {
        if size == 0 || start >= size {
            // The reference's `end` for an empty range: `start`.
            return scan_core::scan(&[][..], 0, 0, final_line, want).map(|mut s| {
                s.end = start;
                s
            });
        }
        let file = BorrowedFile::new(fd)?;
        let size = size.min(file.size()?);
        if start >= size {
            return scan_core::scan(&[][..], 0, 0, final_line, want).map(|mut s| {
                s.end = start;
                s
            });
        }
        scan_core::scan(&*file, start, size, final_line, want)
    });
    let mut s = scanned.map_err(|e| to_pyerr(py, e))?;
    let headers = s.headers.take();
    let mut spans = Vec::with_capacity(s.found.len());
    let mut message_lines = Vec::new();
    let mut message_payloads = Vec::new();
    let bad_roles = PyList::empty(py);
    for f in &s.found {
        spans.push((f.line, f.at.offset, f.at.len));
        match f.message_role {
            Some(true) => {
                message_lines.push(f.at);
                message_payloads.push(f.payload);
            }
            Some(false) => bad_roles.append((f.line, f.at.offset))?,
            None => {}
        }
    }
    let problems = PyList::empty(py);
    for (line, offset, len, reason) in &s.problems {
        problems.append((*line, *offset, *len, reason))?;
    }
    let lines: Vec<LineRef> = s.found.iter().map(|f| f.at).collect();
    let payloads: Vec<(u32, u32)> = s.found.iter().map(|f| f.payload).collect();
    let (events, messages) = if s.found.is_empty() {
        (PyList::empty(py).into_any(), PyList::empty(py).into_any())
    } else {
        let file = BorrowedFile::new(fd).map_err(|e| os_error(py, e))?;
        match lazy::reopen(fd, reopen_path).map(Arc::new) {
            Ok(own) => (
                lazy_list(
                    py,
                    LineIndex::events(own.clone(), Arc::new(Lines::from(lines)), payloads)
                        .with_headers(headers),
                )?,
                lazy_list(
                    py,
                    LineIndex::messages(own, message_lines, message_payloads),
                )?,
            ),
            Err(_) => {
                let events = all_events(py, &file, &Lines::from(lines))?;
                let list = PyList::empty(py);
                let mut b = build::Builder::new(py);
                for at in message_lines {
                    let raw = lazy::read_line(&file, at)?;
                    let mut fields = Vec::new();
                    crate::envelope::parse_envelope_fields(&raw, at.offset, &mut fields)
                        .map_err(|p| PyValueError::new_err(p.reason))?;
                    list.append(lazy::message_from_fields(&mut b, &raw, &fields, None)?)?;
                }
                (events, list.into_any())
            }
        }
    };
    let ids = PyList::new(py, &s.ids)?;
    let survey = match s.survey {
        Some(v) => call_kw!(
            py,
            named::SURVEY_COUNTS.get(py)?,
            types = v
                .types
                .into_iter()
                .map(|t| (t.type_, t.lines, t.bytes))
                .collect::<Vec<_>>(),
            roles = v.roles,
            live = v.live,
            problem = v.problem,
            open = v.open,
            rewound = v.rewound,
        )?,
        None => py.None().into_bound(py),
    };
    call_kw!(
        py,
        named::SCANNED.get(py)?,
        events = events,
        spans = named::LAZY_LIST
            .get(py)?
            .call1((Bound::new(py, lazy::Spans::new(spans))?,))?,
        problems = problems,
        end = s.end,
        first_type = s.first_type,
        messages = messages,
        bad_roles = bad_roles,
        ids = ids,
        survey = survey,
    )
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(replay, m)?)?;
    m.add_function(wrap_pyfunction!(index::replay_indexed, m)?)?;
    m.add_function(wrap_pyfunction!(index::index_table, m)?)?;
    m.add_function(wrap_pyfunction!(index::make_index, m)?)?;
    m.add_class::<index::IndexedSpans>()?;
    m.add_function(wrap_pyfunction!(scan, m)?)?;
    m.add_function(wrap_pyfunction!(history::history, m)?)?;
    m.add_class::<history::HistoryRows>()?;
    m.add_class::<LineIndex>()?;
    m.add_class::<lazy::LineIter>()?;
    m.add_class::<lazy::Deferred>()?;
    m.add_class::<lazy::SectionTexts>()?;
    m.add_class::<lazy::Spans>()?;
    m.add_class::<EnvelopeIds>()?;
    m.add_class::<lazy::SettledIds>()?;
    m.add_class::<lazy::KeptExtras>()?;
    let py = m.py();
    m.add_function(wrap_pyfunction!(classify_line, m)?)?;
    m.add_function(wrap_pyfunction!(parse_envelope_check, m)?)?;
    m.add_function(wrap_pyfunction!(tail_check, m)?)?;
    m.add_function(wrap_pyfunction!(copy_prefix, m)?)?;
    m.add_function(wrap_pyfunction!(encode::encode_envelope, m)?)?;
    m.add_function(wrap_pyfunction!(encode::new_id, m)?)?;
    m.add_class::<import::SourceReader>()?;
    m.add_function(wrap_pyfunction!(append_size, m)?)?;
    m.add_function(wrap_pyfunction!(identical_prefix, m)?)?;
    m.add_function(wrap_pyfunction!(search::find_lines, m)?)?;
    m.add_function(wrap_pyfunction!(search::find_hits, m)?)?;
    m.add_function(wrap_pyfunction!(search::search_files, m)?)?;
    m.add_function(wrap_pyfunction!(first_line_is_meta, m)?)?;
    m.add_function(wrap_pyfunction!(secrets::secret_prefilter, m)?)?;
    m.add_class::<secrets::SecretPrefilter>()?;
    m.add_function(wrap_pyfunction!(columns::dataset_pass, m)?)?;
    m.add_function(wrap_pyfunction!(columns::usage_pass, m)?)?;
    m.add_class::<columns::DatasetPass>()?;
    m.add_class::<columns::RowBuffer>()?;
    let line_problem = py.get_type::<LineProblem>();
    line_problem.setattr("__module__", "llm_agent_session._native")?;
    m.add("LineProblem", line_problem)?;
    m.add("MAX_READ_DEPTH", crate::json::depth::MAX_READ_DEPTH)?;
    Ok(())
}
