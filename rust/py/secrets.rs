//! `secret_prefilter`: the byte scan for secrets of one rule table (`crate::secrets`),
//! for Python (`_core.SecretPrefilter`; the reference is `_pure/secrets.py`).

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};

use crate::secrets::{Kind, Prefilter, Set, Trigger};

/// A rule table's byte scan: `lines(buf)` and `keeps(line)`.
#[pyclass(frozen, module = "llm_agent_session._native")]
pub struct SecretPrefilter {
    inner: Prefilter,
}

fn bytes_of(item: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<u8>> {
    let b = item
        .downcast::<PyBytes>()
        .map_err(|_| PyValueError::new_err(format!("a secret trigger's {what} must be bytes")))?;
    Ok(b.as_bytes().to_vec())
}

fn trigger(item: &Bound<'_, PyAny>) -> PyResult<Trigger> {
    let t = item
        .downcast::<PyTuple>()
        .map_err(|_| PyValueError::new_err("a secret trigger is a SecretTrigger"))?;
    if t.len() != 8 {
        return Err(PyValueError::new_err("a secret trigger has 8 fields"));
    }
    let kind: u8 = t.get_item(2)?.extract()?;
    Ok(Trigger {
        keyword: bytes_of(&t.get_item(0)?, "keyword")?,
        ignore_case: t.get_item(1)?.extract()?,
        kind: Kind::from_number(kind)
            .ok_or_else(|| PyValueError::new_err(format!("no secret trigger kind {kind}")))?,
        chars: Set::of(&bytes_of(&t.get_item(3)?, "chars")?),
        least: t.get_item(4)?.extract()?,
        gap: t.get_item(5)?.extract()?,
        left: Set::of(&bytes_of(&t.get_item(6)?, "left")?),
        left_least: t.get_item(7)?.extract()?,
    })
}

/// The byte scan of a `_core.SecretSpec` (`(triggers, unicode_escapes)`).
#[pyfunction]
pub fn secret_prefilter(spec: &Bound<'_, PyAny>) -> PyResult<SecretPrefilter> {
    let triggers_obj = spec.get_item(0)?;
    let mut triggers = Vec::new();
    for item in triggers_obj.try_iter()? {
        triggers.push(trigger(&item?)?);
    }
    let unicode_escapes: bool = spec.get_item(1)?.extract()?;
    let inner = Prefilter::new(triggers, unicode_escapes).map_err(PyValueError::new_err)?;
    Ok(SecretPrefilter { inner })
}

#[pymethods]
impl SecretPrefilter {
    /// `(start, end)` of every line of `buf` worth reading (`end` before its `\n`).
    fn lines(&self, py: Python<'_>, buf: &[u8]) -> Vec<(usize, usize)> {
        let inner = &self.inner;
        py.allow_threads(|| inner.lines(buf))
    }

    /// Whether the one line `line` (no `\n`) is worth reading.
    fn keeps(&self, line: &[u8]) -> bool {
        self.inner.keeps(line)
    }
}
