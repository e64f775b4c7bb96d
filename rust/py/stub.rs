//! The extension module where its file I/O is not ported (not Unix: Windows).
//!
//! It imports and offers no core function, so importing `_native_core` fails and
//! `_backend` runs the pure-Python core for everything (with its usual warning).

use pyo3::prelude::*;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("FILE_IO", false)?;
    Ok(())
}
