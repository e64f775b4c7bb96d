//! The replay's survivors as Python objects: the `FoldState` a native replay ends in.
//!
//! Runs after the fold, with the GIL: only what survived is built (after
//! compactions, most of a long transcript is not in `messages`), each value read
//! back from its line by offset.

use std::fs::File;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};

use crate::json::grammar::Kind;
use crate::json::view::{self as json_view, Item};
use crate::replay::fold::{Fold, LineRef, MessageSource, ValueRef};

use super::build::Builder;
use super::index::Earlier;
use super::lazy::{
    message_from_fields, read_line, EnvelopeIds, KeptExtras, SectionTexts, SettledIds,
};
use super::named::{self, call_kw};

/// One line read back, kept while consecutive values come from it.
#[derive(Default)]
pub(super) struct LastLine {
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

pub(super) fn value_at<'py>(
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

/// `FoldState.from_parts(...)` of what survived `fold` (its sections are taken), of
/// `events` envelopes. `texts`: where the section texts are read lazily from
/// (`sections` and `section_lines` are `LazyTexts`); None builds both now (dicts).
/// `earlier`: after a load through a side index, the indexed envelopes.
pub fn fold_state<'py>(
    py: Python<'py>,
    file: &File,
    fold: &mut Fold,
    events: usize,
    texts: Option<Arc<File>>,
    envelope_at: Bound<'py, EnvelopeIds>,
    earlier: Option<Arc<Earlier>>,
) -> PyResult<Bound<'py, PyAny>> {
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
    let message_cls = named::MESSAGE.get(py)?;
    let mut turn = GilTurns::default();
    for m in &fold.live {
        turn.take(py);
        ids.append(m.id.as_str())?;
        let content = match m.stub {
            Some((stub, _)) => Some(value_at(&mut b, &mut last, file, stub)?),
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
                // Content parts or tool calls: kept read-only (`Message._frozen`, as the
                // pure fold keeps them), since `Session.messages` hands these very
                // objects out. A message of text alone needs no copy.
                let plain_content = match &content {
                    Some(stub) => stub.is_none() || stub.is_instance_of::<PyString>(),
                    None => matches!(
                        json_view::get(&raw, &fields, "content").map(|i| i.kind),
                        None | Some(Kind::String | Kind::Null)
                    ),
                };
                let no_calls = matches!(
                    json_view::get(&raw, &fields, "tool_calls").map(|i| i.kind),
                    None | Some(Kind::Null)
                );
                let message = message_from_fields(&mut b, &raw, &fields, content)?;
                if plain_content && no_calls {
                    message
                } else {
                    message.call_method0(pyo3::intern!(py, "_frozen"))?
                }
            }
            MessageSource::Summary(summary) => {
                let content = match content {
                    Some(c) => c,
                    None => value_at(&mut b, &mut last, file, summary)?,
                };
                let plain = content.is_none() || content.is_instance_of::<PyString>();
                let message = message_cls.call1(("user", content))?;
                if plain {
                    message
                } else {
                    message.call_method0(pyo3::intern!(py, "_frozen"))?
                }
            }
        };
        messages.append(message)?;
    }
    let grants = match fold.grants {
        Some(v) => object_at(&mut b, &mut last, file, v)?,
        None => PyDict::new(py).into_any(),
    };
    let pending = PyList::empty(py);
    let dispatched_operation = named::DISPATCHED_OPERATION.get(py)?;
    for op in fold.pending() {
        turn.take(py);
        let raw = read_line(file, op.line)?;
        let mut fields = Vec::new();
        let env = crate::envelope::parse_envelope_fields(&raw, op.line.offset, &mut fields)
            .map_err(|p| pyo3::exceptions::PyValueError::new_err(p.reason))?;
        // The op id is the dispatch line's id, the one the fold read there (the fold's
        // table holds it; an indexed envelope's id is only on its line).
        if let Some(at) = op.event.checked_sub(fold.first_read()) {
            if envelope_at.get().table().id_at(at) != Some(env.id.as_ref()) {
                return Err(pyo3::exceptions::PyValueError::new_err(
                    "the transcript changed under a read",
                ));
            }
        }
        let state = if op.recorded {
            "result-recorded"
        } else {
            "dispatched"
        };
        pending.append(call_kw!(
            py,
            dispatched_operation,
            op_id = env.id.as_ref(),
            ts = env.ts.as_ref(),
            payload = b.dict(&raw, &fields)?,
            state = state,
        )?)?;
    }
    let settled = Bound::new(
        py,
        SettledIds::new(
            envelope_at.clone().unbind(),
            events,
            &fold.settled,
            earlier.as_ref().map(|e| e.base.settled.bytes()),
        ),
    )?;
    let (sections, section_lines) = match texts {
        Some(texts) => {
            let index = Bound::new(
                py,
                SectionTexts::new(
                    texts,
                    std::mem::take(&mut fold.sections),
                    std::mem::take(&mut fold.section_at),
                    earlier.clone(),
                ),
            )?;
            let lazy = |lookup: &str| {
                named::LAZY_TEXTS
                    .get(py)?
                    .call1((index.clone(), index.getattr(lookup)?))
            };
            (lazy("get")?, lazy("line_of")?)
        }
        None => {
            let (sections, section_lines) = (PyDict::new(py), PyDict::new(py));
            for s in &fold.sections {
                turn.take(py);
                sections.set_item(&s.digest, value_at(&mut b, &mut last, file, s.text)?)?;
                section_lines.set_item(&s.digest, s.line_id.as_str())?;
            }
            (sections.into_any(), section_lines.into_any())
        }
    };
    call_kw!(
        py,
        named::FOLD_STATE
            .get(py)?
            .getattr(pyo3::intern!(py, "from_parts"))?,
        meta = meta,
        ids = ids,
        messages = messages,
        grants = grants,
        pending = pending,
        settled = settled,
        sections = sections,
        section_lines = section_lines,
        envelope_at = envelope_at,
        kept_extras = Bound::new(
            py,
            KeptExtras::new(std::mem::take(&mut fold.extras), earlier)
        )?,
    )
}

/// Building Python objects needs the GIL, and materialising a big transcript's
/// survivors keeps it for many milliseconds: an event loop on another thread
/// (AsyncSession) would stand still that long (benches/event_loop.py measures it).
/// Once a millisecond has passed since the last turn, the GIL is let go for
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
            // the waiter's switch interval (`sys.getswitchinterval`), so nothing changed.
            py.allow_threads(|| std::thread::sleep(Self::PAUSE));
            self.since = std::time::Instant::now();
        }
    }
}
