//! Envelopes built on access: `Session.events` after a native replay, and peek's
//! `envelopes` and `messages`.
//!
//! A `LineIndex` holds only where each line is and a read-only descriptor of its
//! own. The descriptor is a new open file description (`/proc/self/fd/N` opened
//! afresh), never a `dup` of the session's: `flock` belongs to the open file
//! description, and a dup would keep the session's lock alive after `close()`.
//! Each access re-reads its line and validates it again, so a file changed under
//! an unlocked reader (peek) gives an error, never wrong data or a panic.

use std::collections::HashMap;
use std::fs::File;
use std::sync::Arc;

use pyo3::exceptions::{PyIndexError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::{PyDict, PyTuple, PyType};

use crate::envelope::parse_envelope_fields;
use crate::file_io::read_full;
use crate::json_view::token;
use crate::json_view::{self, Entry};
use crate::py_build::Builder;
use crate::replay::fold::{LineRef, SectionRef};

static EVENT: GILOnceCell<Py<PyType>> = GILOnceCell::new();
static MESSAGE: GILOnceCell<Py<PyType>> = GILOnceCell::new();

pub fn event_class(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    EVENT.import(py, "llm_agent_session.messages", "Event")
}

pub fn message_class(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    MESSAGE.import(py, "llm_agent_session.messages", "Message")
}

/// Another open file description of the file `fd` is open on (Linux `/proc`),
/// close-on-exec and numbered 3 or more (SPEC 3: with stdio closed, `open` would
/// hand out 0, 1 or 2, where stray reads and writes of stdio would meet it).
pub fn reopen(fd: i32) -> std::io::Result<File> {
    use std::os::fd::AsRawFd;
    let file = File::open(format!("/proc/self/fd/{fd}"))?;
    if file.as_raw_fd() >= 3 {
        return Ok(file);
    }
    // `try_clone` duplicates with F_DUPFD_CLOEXEC from 3 up; a duplicate of our
    // own read-only description, never of the session's locked one.
    file.try_clone()
}

/// The bytes of one line.
pub fn read_line(file: &File, at: LineRef) -> PyResult<Vec<u8>> {
    let len = usize::try_from(at.len).map_err(|_| PyValueError::new_err("line too long"))?;
    let mut buf = vec![0u8; len];
    let got = read_full(file, &mut buf, at.offset)?;
    if got < len {
        return Err(PyValueError::new_err(
            "the transcript is shorter than when it was read (truncated under a lazy read)",
        ));
    }
    Ok(buf)
}

/// `Message(...)` of a message payload (the reference's `message_from_payload`):
/// the message keys of SPEC 2.2, extras dropped; `content` replaced when given.
pub fn message_from_fields<'py>(
    b: &mut Builder<'py>,
    raw: &[u8],
    fields: &[Entry],
    content: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = b.py();
    let mut get = |key: &str| -> PyResult<Option<Bound<'py, PyAny>>> {
        match json_view::get(raw, fields, key) {
            Some(item) => b.value(raw, item).map(Some),
            None => Ok(None),
        }
    };
    let role = get("role")?.unwrap_or_else(|| py.None().into_bound(py));
    let content = match content {
        Some(c) => c,
        None => get("content")?.unwrap_or_else(|| py.None().into_bound(py)),
    };
    let kwargs = PyDict::new(py);
    for key in ["tool_calls", "tool_call_id", "name", "depth"] {
        if let Some(v) = get(key)? {
            kwargs.set_item(key, v)?;
        }
    }
    for key in ["sticky", "sysprompt"] {
        if let Some(v) = get(key)? {
            kwargs.set_item(key, v)?;
        }
    }
    message_class(py)?.call((role, content), Some(&kwargs))
}

/// What a `LineIndex` builds from each line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Builds {
    Events,
    Messages,
}

/// A sequence of envelopes (or of the Messages of message envelopes), each built
/// from its line on access. `llm_agent_session._events.LazyList` wraps it for
/// slicing, iteration and equality.
#[pyclass(frozen, module = "llm_agent_session._native")]
pub struct LineIndex {
    file: Arc<File>,
    lines: Vec<LineRef>,
    builds: Builds,
}

impl LineIndex {
    pub fn events(file: Arc<File>, lines: Vec<LineRef>) -> Self {
        LineIndex {
            file,
            lines,
            builds: Builds::Events,
        }
    }

    pub fn messages(file: Arc<File>, lines: Vec<LineRef>) -> Self {
        LineIndex {
            file,
            lines,
            builds: Builds::Messages,
        }
    }
}

/// `Event(id, type, ts, 1, payload)` of the line at `at`.
pub fn event_at<'py>(
    b: &mut Builder<'py>,
    file: &File,
    at: LineRef,
) -> PyResult<Bound<'py, PyAny>> {
    let raw = read_line(file, at)?;
    let mut fields = Vec::new();
    let env = parse_envelope_fields(&raw, at.offset, &mut fields).map_err(|p| {
        PyValueError::new_err(format!(
            "the transcript changed under a lazy read: the line at byte {} is no longer an envelope ({})",
            at.offset, p.reason
        ))
    })?;
    let py = b.py();
    let payload = b.dict(&raw, &fields)?;
    let args = PyTuple::new(
        py,
        [
            env.id.into_pyobject(py)?.into_any(),
            env.type_.into_pyobject(py)?.into_any(),
            env.ts.into_pyobject(py)?.into_any(),
            1i64.into_pyobject(py)?.into_any(),
            payload.into_any(),
        ],
    )?;
    event_class(py)?.call1(args)
}

#[pymethods]
impl LineIndex {
    fn __len__(&self) -> usize {
        self.lines.len()
    }

    fn __getitem__<'py>(&self, py: Python<'py>, index: isize) -> PyResult<Bound<'py, PyAny>> {
        let n = self.lines.len() as isize;
        let i = if index < 0 { index + n } else { index };
        let at = usize::try_from(i)
            .ok()
            .and_then(|i| self.lines.get(i))
            .copied()
            .ok_or_else(|| PyIndexError::new_err("index out of range"))?;
        let mut b = Builder::new(py);
        match self.builds {
            Builds::Events => event_at(&mut b, &self.file, at),
            Builds::Messages => {
                let raw = read_line(&self.file, at)?;
                let mut fields = Vec::new();
                parse_envelope_fields(&raw, at.offset, &mut fields).map_err(|p| {
                    PyValueError::new_err(format!(
                        "the transcript changed under a lazy read ({})",
                        p.reason
                    ))
                })?;
                message_from_fields(&mut b, &raw, &fields, None)
            }
        }
    }
}

/// The run-context section texts (digest -> text) of a replay, each read from its
/// line when first asked for: a long run repeats its context in every run, and
/// building every text at load cost ~20% of a 256 MB transcript's load. Wrapped by
/// `llm_agent_session._events.LazyTexts`, which adds what appends store.
#[pyclass(frozen, module = "llm_agent_session._native")]
pub struct SectionTexts {
    file: Arc<File>,
    order: Vec<String>,
    at: HashMap<String, crate::replay::fold::ValueRef>,
}

impl SectionTexts {
    pub fn new(file: Arc<File>, sections: &[SectionRef]) -> Self {
        SectionTexts {
            file,
            order: sections.iter().map(|s| s.digest.clone()).collect(),
            at: sections
                .iter()
                .map(|s| (s.digest.clone(), s.text))
                .collect(),
        }
    }
}

#[pymethods]
impl SectionTexts {
    fn __len__(&self) -> usize {
        self.order.len()
    }

    /// The digests, in the order their texts first appeared.
    fn keys(&self) -> Vec<String> {
        self.order.clone()
    }

    /// The text of `digest`, or None when no line carries it.
    fn get<'py>(&self, py: Python<'py>, digest: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
        let Some(v) = self.at.get(digest) else {
            return Ok(None);
        };
        let raw = read_line(&self.file, v.line)?;
        let item = token(&raw, v.span)
            .ok_or_else(|| PyValueError::new_err("the transcript changed under a lazy read"))?;
        Builder::new(py).value(&raw, item).map(Some)
    }
}
