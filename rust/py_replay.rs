//! The replay's survivors as Python objects: what `FoldState.from_parts` takes.
//!
//! Runs after the fold, with the GIL: only what survived is built (after
//! compactions, most of a long transcript is not in `messages`), each value read
//! back from its line by offset.

use std::fs::File;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::{PyDict, PyList, PyType};

use crate::json::grammar::Kind;
use crate::json::view::{self as json_view, Item};
use crate::lazy_events::{message_class, message_from_fields, read_line, SectionTexts};
use crate::py_build::Builder;
use crate::replay::fold::{Fold, LineRef, MessageSource, ValueRef};

static PENDING: GILOnceCell<Py<PyType>> = GILOnceCell::new();

/// One line read back, kept while consecutive values come from it.
struct LastLine {
    at: Option<LineRef>,
    bytes: Vec<u8>,
}

impl LastLine {
    fn get(&mut self, file: &File, at: LineRef) -> PyResult<&[u8]> {
        if self.at != Some(at) {
            self.bytes = read_line(file, at)?;
            self.at = Some(at);
        }
        Ok(&self.bytes)
    }
}

/// `(meta, ids, messages, grants, pending, settled, sections, section_lines)`;
/// `sections` is a dict or a [`SectionTexts`].
pub type Parts<'py> = (
    Bound<'py, PyAny>,
    Bound<'py, PyList>,
    Bound<'py, PyList>,
    Bound<'py, PyAny>,
    Bound<'py, PyList>,
    Bound<'py, PyList>,
    Bound<'py, PyAny>,
    Bound<'py, PyDict>,
);

fn object_at<'py>(
    b: &mut Builder<'py>,
    last: &mut LastLine,
    file: &File,
    v: ValueRef,
) -> PyResult<Bound<'py, PyAny>> {
    let raw = last.get(file, v.line)?;
    b.value(
        raw,
        Item {
            kind: Kind::Object,
            span: v.span,
        },
    )
}

fn value_at<'py>(
    b: &mut Builder<'py>,
    last: &mut LastLine,
    file: &File,
    v: ValueRef,
) -> PyResult<Bound<'py, PyAny>> {
    let raw = last.get(file, v.line)?;
    let item = json_view::token(raw, v.span).ok_or_else(|| {
        pyo3::exceptions::PyValueError::new_err("the transcript changed under a read")
    })?;
    b.value(raw, item)
}

/// `texts`: where the section texts are read lazily from; None builds them now.
pub fn materialise<'py>(
    py: Python<'py>,
    file: &File,
    fold: &Fold,
    texts: Option<Arc<File>>,
) -> PyResult<Parts<'py>> {
    let mut b = Builder::new(py);
    let mut last = LastLine {
        at: None,
        bytes: Vec::new(),
    };
    let meta = match fold.meta {
        Some(v) => object_at(&mut b, &mut last, file, v)?,
        None => PyDict::new(py).into_any(),
    };
    let ids = PyList::empty(py);
    let messages = PyList::empty(py);
    let message_cls = message_class(py)?;
    let mut turn = GilTurns::default();
    for m in &fold.live {
        turn.take(py);
        ids.append(&m.id)?;
        let content = match m.stub {
            Some(stub) => Some(value_at(&mut b, &mut last, file, stub)?),
            None => None,
        };
        let message = match m.source {
            MessageSource::Line { line, payload } => {
                let raw = read_line(file, line)?;
                let fields = json_view::members(
                    &raw,
                    Item {
                        kind: Kind::Object,
                        span: payload,
                    },
                )
                .ok_or_else(|| {
                    pyo3::exceptions::PyValueError::new_err("the transcript changed under a read")
                })?;
                message_from_fields(&mut b, &raw, &fields, content)?
            }
            MessageSource::Summary(summary) => {
                let content = match content {
                    Some(c) => c,
                    None => value_at(&mut b, &mut last, file, summary)?,
                };
                message_cls.call1(("user", content))?
            }
        };
        messages.append(message)?;
    }
    let grants = match fold.grants {
        Some(v) => object_at(&mut b, &mut last, file, v)?,
        None => PyDict::new(py).into_any(),
    };
    let pending = PyList::empty(py);
    let pending_cls = PENDING.import(py, "llm_agent_session.messages", "PendingToolOperation")?;
    for op in fold.pending() {
        turn.take(py);
        let raw = read_line(file, op.line)?;
        let mut fields = Vec::new();
        let env = crate::envelope::parse_envelope_fields(&raw, op.line.offset, &mut fields)
            .map_err(|p| pyo3::exceptions::PyValueError::new_err(p.reason))?;
        let kwargs = PyDict::new(py);
        kwargs.set_item("op_id", &op.op_id)?;
        for (key, name) in [
            ("call-id", "call_id"),
            ("tool", "tool"),
            ("arguments", "arguments"),
            ("arguments-digest", "arguments_digest"),
            ("idempotency", "idempotency"),
            ("run-id", "run_id"),
            ("round", "round"),
        ] {
            let value = match json_view::get(&raw, &fields, key) {
                Some(item) => b.value(&raw, item)?,
                None => py.None().into_bound(py),
            };
            kwargs.set_item(name, value)?;
        }
        kwargs.set_item("dispatched_at", env.ts.as_ref())?;
        kwargs.set_item(
            "state",
            if op.recorded {
                "result-recorded"
            } else {
                "dispatched"
            },
        )?;
        pending.append(pending_cls.call((), Some(&kwargs))?)?;
    }
    let settled = PyList::empty(py);
    for id in &fold.settled {
        turn.take(py);
        settled.append(id)?;
    }
    let section_lines = PyDict::new(py);
    for s in &fold.sections {
        turn.take(py);
        section_lines.set_item(&s.digest, &s.line_id)?;
    }
    let sections = match texts {
        Some(texts) => Bound::new(py, SectionTexts::new(texts, &fold.sections))?.into_any(),
        None => {
            let sections = PyDict::new(py);
            for s in &fold.sections {
                sections.set_item(&s.digest, value_at(&mut b, &mut last, file, s.text)?)?;
            }
            sections.into_any()
        }
    };
    Ok((
        meta,
        ids,
        messages,
        grants,
        pending,
        settled,
        sections,
        section_lines,
    ))
}

/// Building Python objects needs the GIL, and materialising a 256 MB bench transcript
/// (288 live messages, some 100 KB tool results, 31,565 settled ids, 10,070 sections)
/// kept it for ~15 ms: an event loop on another thread (AsyncSession) stood still that
/// long. Once a millisecond has passed since the last turn, the GIL is let go for
/// 0.1 ms, so a thread that asked for it gets its turn.
pub struct GilTurns {
    since: std::time::Instant,
}

impl Default for GilTurns {
    fn default() -> Self {
        GilTurns {
            since: std::time::Instant::now(),
        }
    }
}

impl GilTurns {
    const EVERY: std::time::Duration = std::time::Duration::from_millis(1);
    const PAUSE: std::time::Duration = std::time::Duration::from_micros(100);

    pub fn take(&mut self, py: Python<'_>) {
        if self.since.elapsed() >= Self::EVERY {
            // A sleep, not a yield: a thread waiting for the GIL must wake and take it.
            // A bare release let this thread take it back first, and each release reset
            // the waiter's 5 ms switch timer (stalls stayed at ~15 ms).
            py.allow_threads(|| std::thread::sleep(Self::PAUSE));
            self.since = std::time::Instant::now();
        }
    }
}
