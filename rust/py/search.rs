//! `find_lines` and `find_hits`: the viewer's search over a whole file
//! (`crate::search`), for Python.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

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

/// The needle both searches refuse, with the reference's error: no line holds a `\n`.
fn refuse_empty_or_multiline(needle: &[u8]) -> PyResult<()> {
    if needle.is_empty() || needle.contains(&b'\n') {
        return Err(PyValueError::new_err(
            "the text searched for must not be empty or hold a newline",
        ));
    }
    Ok(())
}
