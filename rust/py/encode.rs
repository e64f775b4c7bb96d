//! The write path's serialiser: one envelope line from a Python payload, with its id
//! and timestamp, in one walk (issue #17: an append near the cost of a write).
//!
//! The reference is `canonical.py` (`validate`, `dumps`, `envelope_line`, `new_id`,
//! `now_ts`), which the pure backend runs: keys sorted, `,`/`:`, UTF-8 as itself
//! except U+2028/U+2029, control characters escaped as `json` escapes them. The bytes
//! are the reference's exactly. Whatever this walk does not handle itself (a value
//! JSON cannot carry, a subclass of a JSON type, an integer past 4,300 digits, a
//! nesting too deep) answers `None`, and the caller takes the reference's path,
//! which either writes the same bytes or raises its own exact error: refusals are
//! never worded twice.
//!
//! Why not serde_json, which the design names: its output differs from the
//! reference's where exactness is the contract. Floats: ryu writes `1e16`, `1e-5`,
//! Python's `repr` (the reference) `1e+16`, `1e-05`; integers past 64 bits need
//! Python's own digits; U+2028/U+2029 need a custom formatter. Every scalar but
//! strings would go through a raw fragment, and the walk over Python objects (not
//! the escaping) is the cost (measured: see this file's commit history and
//! benches/RESULTS.md, "append").

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

use crate::line_format::{format_ts, new_id_at, now, write_string};

/// Containers deeper than this (the payload itself counting as 1) are refused on
/// write (the reference's `MAX_WRITE_DEPTH`).
pub(super) const MAX_WRITE_DEPTH: usize = 100;

/// A value this walk leaves to the reference.
pub(super) struct Unsupported;

/// `(id, ts, line, payload copy)`.
type Encoded<'py> = (String, String, Bound<'py, PyBytes>, Bound<'py, PyAny>);

/// `(id, ts, line, payload copy)`, or `None` when the reference's path must run.
/// `id` is made here (UUIDv7) unless given; the timestamp always is.
#[pyfunction]
#[pyo3(signature = (type_, payload, id=None))]
pub fn encode_envelope<'py>(
    py: Python<'py>,
    type_: &str,
    payload: &Bound<'py, PyDict>,
    id: Option<String>,
) -> PyResult<Option<Encoded<'py>>> {
    let mut body = Vec::with_capacity(256);
    let Ok(copy) = write_value(py, &mut body, payload.as_any(), 1) else {
        return Ok(None);
    };
    let (id, ts, line) = envelope_line(type_, &body, id, None)?;
    Ok(Some((id, ts, PyBytes::new(py, &line), copy)))
}

/// `(id, ts, line)`: the envelope line around a payload's canonical JSON `body`
/// (`\n` included), the reference's `envelope_line`; `id` made here (UUIDv7) unless
/// given, the timestamp `ts` if given (already in the line format's form), else now.
pub(super) fn envelope_line(
    type_: &str,
    body: &[u8],
    id: Option<String>,
    ts: Option<String>,
) -> PyResult<(String, String, Vec<u8>)> {
    let (ms, micros) = now();
    let id = match id {
        Some(id) => id,
        None => new_id_at(ms).map_err(|e| pyo3::exceptions::PyOSError::new_err(e.to_string()))?,
    };
    let ts = match ts {
        Some(ts) if is_line_ts(&ts) => ts,
        Some(ts) => {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "{ts:?} is not a timestamp of the line format (YYYY-MM-DDTHH:MM:SS.ffffffZ)"
            )))
        }
        None => format_ts(micros),
    };
    let mut line = Vec::with_capacity(body.len() + 128);
    line.extend_from_slice(b"{\"id\":");
    write_string(&mut line, &id, false);
    line.extend_from_slice(b",\"payload\":");
    line.extend_from_slice(body);
    line.extend_from_slice(b",\"ts\":\"");
    line.extend_from_slice(ts.as_bytes());
    line.extend_from_slice(b"\",\"type\":");
    write_string(&mut line, type_, false);
    line.extend_from_slice(b",\"v\":1}\n");
    Ok((id, ts, line))
}

/// Whether `ts` has the line format's shape, `YYYY-MM-DDTHH:MM:SS.ffffffZ` (digits where
/// digits go): a given timestamp is written between quotes as it is.
fn is_line_ts(ts: &str) -> bool {
    let b = ts.as_bytes();
    b.len() == 27
        && b.iter().enumerate().all(|(i, &c)| match i {
            4 | 7 => c == b'-',
            10 => c == b'T',
            13 | 16 => c == b':',
            19 => c == b'.',
            26 => c == b'Z',
            _ => c.is_ascii_digit(),
        })
}

/// A new id (the reference's `new_id`, from the same generator as the lines').
#[pyfunction]
pub fn new_id() -> PyResult<String> {
    new_id_at(now().0).map_err(|e| pyo3::exceptions::PyOSError::new_err(e.to_string()))
}

/// Write `v` as canonical JSON; answer its fresh copy (what `copy_json` gives).
fn write_value<'py>(
    py: Python<'py>,
    out: &mut Vec<u8>,
    v: &Bound<'py, PyAny>,
    depth: usize,
) -> Result<Bound<'py, PyAny>, Unsupported> {
    if let Ok(s) = v.downcast_exact::<PyString>() {
        write_string(out, &s.to_cow().map_err(|_| Unsupported)?, true);
        return Ok(v.clone());
    }
    match write_scalar(out, v) {
        Ok(true) => return Ok(v.clone()),
        Ok(false) => {}
        Err(Unsupported) if v.downcast_exact::<PyInt>().is_ok() => {
            // Past 64 bits: Python's own digits; past its int-to-str limit the
            // reference's path writes them in chunks.
            let text = v.str().map_err(|_| Unsupported)?;
            out.extend_from_slice(text.to_cow().map_err(|_| Unsupported)?.as_bytes());
            return Ok(v.clone());
        }
        Err(e) => return Err(e),
    }
    if depth > MAX_WRITE_DEPTH {
        return Err(Unsupported);
    }
    if let Ok(d) = v.downcast_exact::<PyDict>() {
        let copy = PyDict::new(py);
        // `to_cow`, not `to_str`: the stable ABI of CPython 3.9 (the wheel's) has no
        // borrowed UTF-8 view of a str, so keys may be copied there.
        let mut entries: Vec<(std::borrow::Cow<'_, str>, Bound<'py, PyAny>)> =
            Vec::with_capacity(d.len());
        // Keys are borrowed from the dict, which `copy` keeps alive with them.
        let mut keys = Vec::with_capacity(d.len());
        for (k, item) in d.iter() {
            let key = k.downcast_exact::<PyString>().map_err(|_| Unsupported)?;
            copy.set_item(key, &item).map_err(|_| Unsupported)?;
            keys.push((key.clone(), item));
        }
        for (key, item) in &keys {
            entries.push((key.to_cow().map_err(|_| Unsupported)?, item.clone()));
        }
        // Code point order is UTF-8 byte order.
        entries.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        out.push(b'{');
        for (n, (key, item)) in entries.iter().enumerate() {
            if n > 0 {
                out.push(b',');
            }
            write_string(out, key, true);
            out.push(b':');
            let child = write_value(py, out, item, depth + 1)?;
            if !child.is(item) {
                copy.set_item(key.as_ref(), child)
                    .map_err(|_| Unsupported)?;
            }
        }
        out.push(b'}');
        return Ok(copy.into_any());
    }
    let items: Vec<Bound<'py, PyAny>> = if let Ok(l) = v.downcast_exact::<PyList>() {
        l.iter().collect()
    } else if let Ok(t) = v.downcast_exact::<PyTuple>() {
        t.iter().collect()
    } else {
        return Err(Unsupported);
    };
    out.push(b'[');
    let mut copies = Vec::with_capacity(items.len());
    for (n, item) in items.iter().enumerate() {
        if n > 0 {
            out.push(b',');
        }
        copies.push(write_value(py, out, item, depth + 1)?);
    }
    out.push(b']');
    PyList::new(py, copies)
        .map(Bound::into_any)
        .map_err(|_| Unsupported)
}

/// Write `v` if it is `None`, a `bool`, an `int` of 64 bits or a finite `float` (exact
/// types) as the reference writes it, and say whether it was one (`Unsupported`: a
/// longer `int`, a NaN or an infinity); strings and containers are the caller's.
pub(super) fn write_scalar(out: &mut Vec<u8>, v: &Bound<'_, PyAny>) -> Result<bool, Unsupported> {
    if v.is_none() {
        out.extend_from_slice(b"null");
    } else if let Ok(b) = v.downcast_exact::<PyBool>() {
        out.extend_from_slice(if b.is_true() { b"true" } else { b"false" });
    } else if v.downcast_exact::<PyInt>().is_ok() {
        let i: i64 = v.extract().map_err(|_| Unsupported)?;
        out.extend_from_slice(i.to_string().as_bytes());
    } else if let Ok(f) = v.downcast_exact::<PyFloat>() {
        if !f.value().is_finite() {
            return Err(Unsupported);
        }
        // float.__repr__, as the reference's encoder writes floats.
        let text = v.repr().map_err(|_| Unsupported)?;
        out.extend_from_slice(text.to_cow().map_err(|_| Unsupported)?.as_bytes());
    } else {
        return Ok(false);
    }
    Ok(true)
}
