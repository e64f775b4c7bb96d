//! `find_lines` and `find_hits`: the viewer's search over a whole file
//! (`crate::search`), for Python; `search_files`: a batch of transcripts read
//! whole by a search across them, in one call.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::path::PathBuf;

use crate::file_io::BorrowedFile;
use crate::search;

/// `(lines, next)`: the start offsets of the lines starting in `[start, end)` of
/// `fd` that contain `needle` (ASCII letters folded with `ignore_case`), at most
/// `limit` of them, and the start of the first line not examined. The reference is
/// `_pure/search.py::find_lines`.
#[pyfunction]
#[pyo3(signature = (fd, needle, start, end, ignore_case=false, limit=usize::MAX))]
pub fn find_lines(
    py: Python<'_>,
    fd: i32,
    needle: &[u8],
    start: u64,
    end: u64,
    ignore_case: bool,
    limit: usize,
) -> PyResult<(Vec<u64>, u64)> {
    refuse_empty_or_multiline(needle)?;
    let needle = needle.to_vec();
    let found = py.allow_threads(move || {
        let file = BorrowedFile::new(fd)?;
        search::find_lines(&*file, &needle, start, end, ignore_case, limit)
    });
    let found = found.map_err(|e| super::os_error(py, e))?;
    Ok((found.lines, found.next))
}

/// `(lines, groups, next)`: as [`find_lines`], and for each line the groups of its
/// envelope in which the text whose written form is `needle` is (bits: content 1,
/// arguments 2, results 4, extras 8; -1 for a line that is not JSON). The
/// reference is `_pure/search.py::find_hits`.
#[pyfunction]
#[pyo3(signature = (fd, needle, start, end, ignore_case=false, limit=usize::MAX))]
pub fn find_hits(
    py: Python<'_>,
    fd: i32,
    needle: &[u8],
    start: u64,
    end: u64,
    ignore_case: bool,
    limit: usize,
) -> PyResult<(Vec<u64>, Vec<i8>, u64)> {
    refuse_empty_or_multiline(needle)?;
    let text = search::Text::new(needle, ignore_case).map_err(PyValueError::new_err)?;
    let needle = needle.to_vec();
    let found = py.allow_threads(move || {
        let file = BorrowedFile::new(fd)?;
        search::find_hits(&*file, &needle, &text, start, end, limit)
    });
    let found = found.map_err(|e| super::to_pyerr(py, e))?;
    Ok((found.lines, found.groups, found.next))
}

/// One file of [`search_files`]' answer: `(identity, regular, part, tail)`.
type SearchedFile = (
    (u64, u64, u64, i64, i64),
    bool,
    Option<(Py<PyBytes>, bool, Vec<u64>, Vec<i8>, u64)>,
    Option<(u64, Py<PyBytes>)>,
);

/// For each path, an `OSError` (it could not be opened or read) or
/// `(identity, regular, part, tail)`: `fstat`'s `(dev, ino, size, mtime_ns,
/// ctime_ns)`, whether it is a regular file, and for one of at most `largest` bytes
/// `part`, `(head, meta, lines, groups, next)` (its first `head` bytes, whether its
/// first line is a session-meta envelope by the quick look, `find_hits` over the
/// whole file) and with `tail` > 0 `(resume, last bytes)`. One GIL release for the
/// batch. The reference is `_pure/search.py::search_files`.
#[pyfunction]
#[pyo3(signature = (paths, needle, largest, ignore_case=false, head=4096, tail=0))]
pub fn search_files(
    py: Python<'_>,
    paths: Vec<PathBuf>,
    needle: &[u8],
    largest: u64,
    ignore_case: bool,
    head: usize,
    tail: usize,
) -> PyResult<Vec<PyObject>> {
    refuse_empty_or_multiline(needle)?;
    let text = search::Text::new(needle, ignore_case).map_err(PyValueError::new_err)?;
    let needle = needle.to_vec();
    let open_flags: i32 = py.import("os")?.getattr("O_NONBLOCK")?.extract()?;
    let (head, tail) = (head.min(ENDS_MAX), tail.min(ENDS_MAX));
    let searched = py.allow_threads(move || {
        let ask = search::Ask {
            needle: &needle,
            text: &text,
            largest,
            head,
            tail,
            open_flags,
        };
        search::search_files(&paths, &ask)
    });
    searched
        .into_iter()
        .map(|one| match one {
            Err(e) => Ok(super::to_pyerr(py, e).into_value(py).into_any()),
            Ok(file) => {
                let part = file.part.map(|p| {
                    (
                        PyBytes::new(py, &p.head).unbind(),
                        p.meta,
                        p.found.lines,
                        p.found.groups,
                        p.found.next,
                    )
                });
                let tail = file
                    .tail
                    .map(|(resume, bytes)| (resume, PyBytes::new(py, &bytes).unbind()));
                let answer: SearchedFile = (file.identity, file.regular, part, tail);
                Ok(answer.into_pyobject(py)?.into_any().unbind())
            }
        })
        .collect()
}

/// The most `search_files` keeps of a file's start or end (a caller's mistake must
/// not allocate gigabytes a file).
const ENDS_MAX: usize = 1 << 20;

/// The needle both searches refuse, with the reference's error: no line holds a `\n`.
fn refuse_empty_or_multiline(needle: &[u8]) -> PyResult<()> {
    if needle.is_empty() || needle.contains(&b'\n') {
        return Err(PyValueError::new_err(
            "the text searched for must not be empty or hold a newline",
        ));
    }
    Ok(())
}
