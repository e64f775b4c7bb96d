//! Python objects from validated JSON bytes, equal to what `json.loads` gives.
//!
//! * Objects: a dict filled member by member with `PyDict_SetItem`, as CPython's
//!   scanner does, so key order is first occurrence and the value is the last one.
//! * Integers: up to 18 digits through `i64`; longer ones through
//!   `llm_agent_session.canonical.str_to_int` (exact at any length, as the reference).
//! * Floats: Rust's `f64` parse is correctly rounded, as CPython's `float()` is.
//! * Strings: escapes decoded, surrogate pairs joined (`json::strings::decode_string`).
//!
//! Keys repeat across a transcript ("role", "content", "type", ...): a small cache
//! maps a key's raw bytes to one Python string, so each is decoded and allocated
//! once per build rather than once per object.

use std::collections::HashMap;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyList, PyString};

use crate::json::depth::MAX_READ_DEPTH;
use crate::json::grammar::Kind;
use crate::json::strings::decode_str;
use crate::json::view::{self as json_view, Entry, Item};

use super::named::STR_TO_INT;

/// Keys longer than this are not cached (they rarely repeat).
const CACHED_KEY_MAX: usize = 48;

pub struct Builder<'py> {
    py: Python<'py>,
    keys: HashMap<Vec<u8>, Bound<'py, PyString>>,
}

fn changed() -> PyErr {
    PyValueError::new_err(
        "the transcript changed under a lazy read: a line no longer holds the JSON it held when it was read",
    )
}

impl<'py> Builder<'py> {
    pub fn new(py: Python<'py>) -> Self {
        Builder {
            py,
            keys: HashMap::new(),
        }
    }

    pub fn py(&self) -> Python<'py> {
        self.py
    }

    /// The Python value of `item`, a value inside `s`.
    pub fn value(&mut self, s: &[u8], item: Item) -> PyResult<Bound<'py, PyAny>> {
        self.value_at(s, item, 0)
    }

    fn value_at(&mut self, s: &[u8], item: Item, depth: i64) -> PyResult<Bound<'py, PyAny>> {
        // The validator bounds nesting; this guard only stops changed bytes.
        if depth > MAX_READ_DEPTH + 1 {
            return Err(changed());
        }
        let py = self.py;
        let text = s.get(item.span.0..item.span.1).ok_or_else(changed)?;
        Ok(match item.kind {
            Kind::Null => py.None().into_bound(py),
            Kind::Bool => PyBool::new(py, text == b"true").to_owned().into_any(),
            Kind::Number => self.number(text)?,
            Kind::String => {
                let decoded = json_view::text(s, item).ok_or_else(changed)?;
                PyString::new(py, &decoded).into_any()
            }
            Kind::Array => {
                let list = PyList::empty(py);
                for element in json_view::elements(s, item).ok_or_else(changed)? {
                    list.append(self.value_at(s, element, depth + 1)?)?;
                }
                list.into_any()
            }
            Kind::Object => {
                let entries = json_view::members(s, item).ok_or_else(changed)?;
                self.dict_at(s, &entries, depth)?.into_any()
            }
        })
    }

    /// The dict of an object's members.
    pub fn dict(&mut self, s: &[u8], entries: &[Entry]) -> PyResult<Bound<'py, PyDict>> {
        self.dict_at(s, entries, 0)
    }

    fn dict_at(&mut self, s: &[u8], entries: &[Entry], depth: i64) -> PyResult<Bound<'py, PyDict>> {
        let dict = PyDict::new(self.py);
        for e in entries {
            let key = self.key(s, e)?;
            dict.set_item(key, self.value_at(s, e.value, depth + 1)?)?;
        }
        Ok(dict)
    }

    fn key(&mut self, s: &[u8], e: &Entry) -> PyResult<Bound<'py, PyString>> {
        let raw = s.get(e.key.0..e.key.1).ok_or_else(changed)?;
        if raw.len() <= CACHED_KEY_MAX {
            if let Some(k) = self.keys.get(raw) {
                return Ok(k.clone());
            }
        }
        let key = PyString::new(self.py, &decode_str(s, e.key));
        if raw.len() <= CACHED_KEY_MAX {
            self.keys.insert(raw.to_vec(), key.clone());
        }
        Ok(key)
    }

    pub fn number(&mut self, text: &[u8]) -> PyResult<Bound<'py, PyAny>> {
        let py = self.py;
        let is_float = text.iter().any(|b| matches!(b, b'.' | b'e' | b'E'));
        let as_str = std::str::from_utf8(text).map_err(|_| changed())?;
        if is_float {
            let f: f64 = as_str.parse().map_err(|_| changed())?;
            return Ok(PyFloat::new(py, f).into_any());
        }
        if text.len() <= 18 {
            let i: i64 = as_str.parse().map_err(|_| changed())?;
            return Ok(i.into_pyobject(py)?.into_any());
        }
        STR_TO_INT.get(py)?.call1((as_str,))
    }
}
