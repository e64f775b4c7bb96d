//! Envelopes built on access: `Session.events` after a native replay, and peek's
//! `envelopes` and `messages`.
//!
//! A `LineIndex` holds where each line is, a read-only descriptor of its own and,
//! for peek's envelopes, the header of each line as the scan decoded it
//! (`scan::headers`). The descriptor is a new open file description (`/proc/self/fd/N` opened
//! afresh), never a `dup` of the session's: `flock` belongs to the open file
//! description, and a dup would keep the session's lock alive after `close()`.
//!
//! Iterating peek's envelopes takes each header from there, without a read;
//! otherwise an access re-reads its line and builds the envelope's header (`id`,
//! `type`, `ts`) or a peek Message's role, tool calls and flags from it, found by their
//! brackets (`envelope_skim`, `json::view`: the scan validated the line, and
//! validating it again doubled the cost of iterating a peek). The big part, an
//! Event's payload or a Message's content, is a `Deferred`: built on first read
//! from the line read again and validated in full. A file changed under an
//! unlocked reader (peek) gives a `ValueError` or a line that is not what it was;
//! never a panic.

use std::collections::{BTreeSet, HashMap};

use crate::replay::id::IdTable;
use std::fs::File;
use std::sync::Arc;

use pyo3::exceptions::{PyIndexError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::{PyDict, PyIterator, PyList, PyString, PyTuple};

use crate::envelope::{parse_envelope_fields, LineProblem};
use crate::envelope_skim::skim_header;
use crate::file_io::{read_full, BorrowedFile};
use crate::index::lines::Lines;
use crate::json::grammar::{Kind, Span};
use crate::json::view::token;
use crate::json::view::{self as json_view, Entry, Item};
use crate::replay::fold::{LineRef, MessageExtras, SectionRef};
use crate::scan::headers::{Cursor, Header, Headers, TypeName, Unpacked};

use super::build::Builder;
use super::index::Earlier;
use super::named::{PyName, EVENT, MESSAGE, MESSAGE_DEFAULTS, OBJECT};

/// Another open file description of the file `fd` is open on, close-on-exec and
/// numbered 3 or more (docs/durability.md: with stdio closed, `open` would hand out 0, 1 or 2,
/// where stray reads and writes of stdio would meet it).
///
/// Through Linux's `/proc/self/fd/N`, or, given `by_path` (the Python side's
/// `_platform.reopen_path`: not Linux, `/proc` unmounted, or the fallbacks forced),
/// by opening that path and keeping it only if it is the same inode as `fd`
/// (`st_dev`, `st_ino`): a file renamed over the path meanwhile is an error, and the
/// caller then builds everything at once instead.
pub fn reopen(fd: i32, by_path: Option<&str>) -> std::io::Result<File> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::MetadataExt;
    let file = match by_path {
        Some(path) => {
            let file = File::open(path)?;
            let (mine, theirs) = (BorrowedFile::new(fd)?.metadata()?, file.metadata()?);
            if (mine.dev(), mine.ino()) != (theirs.dev(), theirs.ino()) {
                return Err(std::io::Error::other(
                    "the path names another file than the descriptor",
                ));
            }
            file
        }
        None if cfg!(target_os = "linux") => File::open(format!("/proc/self/fd/{fd}"))?,
        None => return Err(std::io::Error::from(std::io::ErrorKind::Unsupported)),
    };
    if file.as_raw_fd() >= 3 {
        return Ok(file);
    }
    // `try_clone` duplicates with F_DUPFD_CLOEXEC from 3 up; a duplicate of our
    // own read-only description, never of the session's locked one.
    file.try_clone()
}

/// The bytes of one line.
pub fn read_line(file: &File, at: LineRef) -> PyResult<Vec<u8>> {
    let mut buf = vec![0u8; line_len(at)?];
    read_covering(file, &mut buf, at)?;
    Ok(buf)
}

fn line_len(at: LineRef) -> PyResult<usize> {
    usize::try_from(at.len).map_err(|_| PyValueError::new_err("line too long"))
}

/// Fill `buf` from the line `at` on (as far as the file goes); how many bytes came,
/// never fewer than the line's own.
fn read_covering(file: &File, buf: &mut [u8], at: LineRef) -> PyResult<usize> {
    let got = read_full(file, buf, at.offset)?;
    if got < line_len(at)? {
        return Err(PyValueError::new_err(
            "the transcript is shorter than when it was read (truncated under a lazy read)",
        ));
    }
    Ok(got)
}

/// `Message(...)` of a message payload (the reference's `message_from_payload`):
/// the message keys of docs/FORMAT.md, `message`, extras dropped; `content` replaced when given.
pub fn message_from_fields<'py>(
    b: &mut Builder<'py>,
    raw: &[u8],
    fields: &[Entry],
    content: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = b.py();
    // Every message key, with its default when absent: `messages.MESSAGE_DEFAULTS`.
    let keys = message_defaults(py)?;
    let mut values = Vec::with_capacity(keys.len());
    for (key, default) in keys {
        let value = match (key.name.as_str(), &content) {
            ("content", Some(given)) => given.clone(),
            (name, _) => match json_view::get(raw, fields, name) {
                Some(item) => b.value(raw, item)?,
                None => default.bind(py).clone(),
            },
        };
        values.push((key.pyname.bind(py), value));
    }
    bare_instance(py, maker(py, &MESSAGE_MAKER, &MESSAGE)?, values)
}

/// One message key, as Rust reads it and as the instance's `__dict__` holds it.
struct MessageKey {
    name: String,
    pyname: Py<PyString>,
}

static MESSAGE_DEFAULT_LIST: GILOnceCell<Vec<(MessageKey, Py<PyAny>)>> = GILOnceCell::new();

/// `messages.MESSAGE_DEFAULTS`, read once: the keys and defaults are spelled there alone.
fn message_defaults(py: Python<'_>) -> PyResult<&[(MessageKey, Py<PyAny>)]> {
    let list = MESSAGE_DEFAULT_LIST.get_or_try_init(py, || {
        let mut out = Vec::new();
        for pair in MESSAGE_DEFAULTS.get(py)?.try_iter()? {
            let (name, default): (String, Py<PyAny>) = pair?.extract()?;
            let pyname = PyString::intern(py, &name).unbind();
            out.push((MessageKey { name, pyname }, default));
        }
        Ok::<_, PyErr>(out)
    })?;
    Ok(list.as_slice())
}

/// `object.__new__` and the arguments that make one instance of a class built here.
struct Maker {
    new: Py<PyAny>,
    args: Py<PyTuple>,
}

static EVENT_MAKER: GILOnceCell<Maker> = GILOnceCell::new();
static MESSAGE_MAKER: GILOnceCell<Maker> = GILOnceCell::new();

/// The `Maker` of `name`'s class, looked up once (not once an instance).
fn maker<'a>(py: Python<'_>, cell: &'a GILOnceCell<Maker>, name: &PyName) -> PyResult<&'a Maker> {
    cell.get_or_try_init(py, || {
        Ok(Maker {
            new: OBJECT.get(py)?.getattr(intern!(py, "__new__"))?.unbind(),
            args: PyTuple::new(py, [name.get(py)?])?.unbind(),
        })
    })
}

/// An instance made without `__init__`, its fields set one by one.
///
/// `__init__` of a frozen dataclass goes through `object.__setattr__` once a field
/// (a third of the time of building a peek Message), and a field may be deferred.
/// `PyObject_GenericSetAttr` is the plain attribute store that the frozen
/// `__setattr__` refuses; it keeps the values in the instance itself, where a
/// `__dict__` asked for and filled would make a dict for every instance.
fn bare_instance<'py, 'a>(
    py: Python<'py>,
    maker: &Maker,
    fields: impl IntoIterator<Item = (&'a Bound<'py, PyString>, Bound<'py, PyAny>)>,
) -> PyResult<Bound<'py, PyAny>>
where
    'py: 'a,
{
    let instance = maker.new.bind(py).call1(maker.args.bind(py))?;
    for (name, value) in fields {
        // SAFETY: three valid object pointers, borrowed for the call; the GIL is held.
        let done = unsafe {
            pyo3::ffi::PyObject_GenericSetAttr(instance.as_ptr(), name.as_ptr(), value.as_ptr())
        };
        if done != 0 {
            return Err(PyErr::fetch(py));
        }
    }
    Ok(instance)
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
    /// Shared with what a load through a side index looks ids up by (`index::Earlier`).
    lines: Arc<Lines>,
    /// Which of `lines` are its items (peek's messages of an index), when not all.
    subset: Option<Vec<u32>>,
    /// Where each line's payload lies, when the scan recorded it (else empty).
    payloads: Vec<(u32, u32)>,
    /// Each line's header as the scan decoded it, when kept: iterating builds
    /// Events from these without reading the file.
    headers: Option<Headers>,
    builds: Builds,
}

impl LineIndex {
    pub fn events(file: Arc<File>, lines: Arc<Lines>, payloads: Vec<(u32, u32)>) -> Self {
        LineIndex {
            file,
            lines,
            subset: None,
            payloads,
            headers: None,
            builds: Builds::Events,
        }
    }

    /// The Messages of the lines `subset` picks out of `lines` (a side index's).
    pub fn messages_of(file: Arc<File>, lines: Arc<Lines>, subset: Vec<u32>) -> Self {
        LineIndex {
            file,
            lines,
            subset: Some(subset),
            payloads: Vec::new(),
            headers: None,
            builds: Builds::Messages,
        }
    }

    fn count(&self) -> usize {
        self.subset.as_ref().map_or(self.lines.len(), Vec::len)
    }

    /// The line of item `i`.
    fn line(&self, i: usize) -> Option<LineRef> {
        match &self.subset {
            Some(s) => self.lines.get(*s.get(i)? as usize),
            None => self.lines.get(i),
        }
    }

    fn last_line(&self) -> Option<LineRef> {
        match &self.subset {
            Some(s) => self.lines.get(*s.last()? as usize),
            None => self.lines.last(),
        }
    }

    /// Iterate with the headers the scan kept (one a line, in order).
    pub fn with_headers(self, headers: Option<Headers>) -> Self {
        let headers = headers.filter(|h| h.len() == self.count());
        LineIndex { headers, ..self }
    }

    pub fn messages(file: Arc<File>, lines: Vec<LineRef>, payloads: Vec<(u32, u32)>) -> Self {
        LineIndex {
            file,
            lines: Arc::new(Lines::from(lines)),
            subset: None,
            payloads,
            headers: None,
            builds: Builds::Messages,
        }
    }
}

/// `Event(id, type, ts, 1, payload)` of the line at `at`, its payload built now.
pub fn event_at<'py>(
    b: &mut Builder<'py>,
    file: &File,
    at: LineRef,
) -> PyResult<Bound<'py, PyAny>> {
    let raw = read_line(file, at)?;
    let mut fields = Vec::new();
    let env = parse_envelope_fields(&raw, at.offset, &mut fields).map_err(|p| no_longer(at, &p))?;
    let payload = b.dict(&raw, &fields)?;
    let py = b.py();
    let type_ = PyString::new(py, &env.type_);
    new_event(
        py,
        &env.id,
        type_,
        &env.ts,
        intern!(py, "payload"),
        payload.into_any(),
    )
}

/// The same Event with its payload built on first access (the field's descriptor,
/// `messages._BuiltOnAccess`, calls the `Deferred` it holds): the header is skimmed, not validated again, and
/// iterating a whole peek costs what its types cost.
fn deferred_event<'py>(
    py: Python<'py>,
    file: &Arc<File>,
    at: LineRef,
    raw: &[u8],
    payload: Option<Span>,
) -> PyResult<Bound<'py, PyAny>> {
    let env = match skim_header(raw, payload) {
        Some(env) => env,
        None => {
            let mut fields = Vec::new();
            parse_envelope_fields(raw, at.offset, &mut fields).map_err(|p| no_longer(at, &p))?
        }
    };
    let type_ = PyString::new(py, &env.type_);
    deferred_payload_event(py, file, at, &env.id, type_, &env.ts)
}

/// An Event of the header given, its payload deferred to the line at `at`.
fn deferred_payload_event<'py>(
    py: Python<'py>,
    file: &Arc<File>,
    at: LineRef,
    id: &str,
    type_: Bound<'py, PyString>,
    ts: &str,
) -> PyResult<Bound<'py, PyAny>> {
    let source = Deferred {
        file: file.clone(),
        at,
        part: Part::Payload,
    };
    new_event(
        py,
        id,
        type_,
        ts,
        intern!(py, "_deferred_payload"),
        Bound::new(py, source)?.into_any(),
    )
}

fn no_longer(at: LineRef, p: &LineProblem) -> PyErr {
    PyValueError::new_err(format!(
        "the transcript changed under a lazy read: the line at byte {} is no longer an envelope ({})",
        at.offset, p.reason
    ))
}

/// An Event, `payload` given under `payload_key` (`payload`, or `_deferred_payload`).
fn new_event<'py>(
    py: Python<'py>,
    id: &str,
    type_: Bound<'py, PyString>,
    ts: &str,
    payload_key: &Bound<'py, PyString>,
    payload: Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let fields = [
        (intern!(py, "id"), PyString::new(py, id).into_any()),
        (intern!(py, "type"), type_.into_any()),
        (intern!(py, "ts"), PyString::new(py, ts).into_any()),
        (intern!(py, "v"), 1i64.into_pyobject(py)?.into_any()),
        (payload_key, payload),
    ];
    bare_instance(py, maker(py, &EVENT_MAKER, &EVENT)?, fields)
}

/// Which part of a line a `Deferred` builds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Part {
    /// An Event's payload dict.
    Payload,
    /// A Message's content (the payload's `content`, or None).
    Content,
}

/// What an Event holds instead of its payload, or a peek Message instead of its
/// content, until first asked (`llm_agent_session.messages._BuiltOnAccess` calls
/// `build` once): the line is read again and validated in full, so a file changed
/// under an unlocked reader gives `ValueError`, never wrong data. Contents are most
/// of a transcript's bytes; a viewer listing roles or types never decodes them.
#[pyclass(frozen, module = "llm_agent_session._native")]
pub struct Deferred {
    file: Arc<File>,
    at: LineRef,
    part: Part,
}

#[pymethods]
impl Deferred {
    fn build<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let raw = read_line(&self.file, self.at)?;
        let mut fields = Vec::new();
        parse_envelope_fields(&raw, self.at.offset, &mut fields)
            .map_err(|p| no_longer(self.at, &p))?;
        let mut b = Builder::new(py);
        match self.part {
            Part::Payload => Ok(b.dict(&raw, &fields)?.into_any()),
            Part::Content => match json_view::get(&raw, &fields, "content") {
                Some(item) => b.value(&raw, item),
                None => Ok(py.None().into_bound(py)),
            },
        }
    }
}

/// A peek Message of the line at `at`: role, tool calls and flags now, the content
/// deferred.
fn deferred_message<'py>(
    b: &mut Builder<'py>,
    file: &Arc<File>,
    at: LineRef,
    raw: &[u8],
    payload: Option<Span>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = b.py();
    // The payload's members found by their brackets (the scan validated the line):
    // validating it again was ~70% of iterating a peek's messages.
    let skimmed = skim_header(raw, payload).and_then(|env| {
        let payload = Item {
            kind: Kind::Object,
            span: env.payload,
        };
        json_view::members(raw, payload)
    });
    let fields = match skimmed {
        Some(fields) => fields,
        None => {
            let mut fields = Vec::new();
            parse_envelope_fields(raw, at.offset, &mut fields).map_err(|p| no_longer(at, &p))?;
            fields
        }
    };
    let message = message_from_fields(b, raw, &fields, Some(py.None().into_bound(py)))?;
    let slots = message
        .getattr(intern!(py, "__dict__"))?
        .downcast_into::<PyDict>()?;
    slots.del_item(intern!(py, "content"))?;
    let source = Deferred {
        file: file.clone(),
        at,
        part: Part::Content,
    };
    slots.set_item(intern!(py, "_deferred_content"), Bound::new(py, source)?)?;
    Ok(message)
}

impl LineIndex {
    fn payload_at(&self, i: usize) -> Option<Span> {
        self.payloads
            .get(i)
            .map(|&(start, end)| (start as usize, end as usize))
    }

    /// The item of line `i`, whose bytes are `raw`.
    fn build<'py>(
        &self,
        b: &mut Builder<'py>,
        i: usize,
        raw: &[u8],
    ) -> PyResult<Bound<'py, PyAny>> {
        let at = self
            .line(i)
            .ok_or_else(|| PyIndexError::new_err("index out of range"))?;
        match self.builds {
            Builds::Events => deferred_event(b.py(), &self.file, at, raw, self.payload_at(i)),
            Builds::Messages => deferred_message(b, &self.file, at, raw, self.payload_at(i)),
        }
    }
}

#[pymethods]
impl LineIndex {
    fn __len__(&self) -> usize {
        self.count()
    }

    fn __getitem__<'py>(&self, py: Python<'py>, index: isize) -> PyResult<Bound<'py, PyAny>> {
        let i = position(self.count(), index)?;
        let at = self
            .line(i)
            .ok_or_else(|| PyIndexError::new_err("index out of range"))?;
        let raw = read_line(&self.file, at)?;
        self.build(&mut Builder::new(py), i, &raw)
    }

    /// Every item in order, the lines read a window at a time (Events whose
    /// header the scan kept are built without a read).
    fn __iter__(slf: Bound<'_, Self>) -> LineIter {
        let py = slf.py();
        let types = slf
            .get()
            .headers
            .as_ref()
            .map(|h| {
                h.types()
                    .iter()
                    .map(|t| PyString::new(py, t).unbind())
                    .collect()
            })
            .unwrap_or_default();
        LineIter {
            index: slf.unbind(),
            next: 0,
            window: Vec::new(),
            window_at: 0,
            headers: Cursor::default(),
            types,
            scratch: Unpacked::default(),
        }
    }
}

/// Iterating a `LineIndex`: Events from the kept headers, else one read per window
/// of consecutive lines instead of one per line (the gains are in the commits that
/// added them).
#[pyclass(module = "llm_agent_session._native")]
pub struct LineIter {
    index: Py<LineIndex>,
    next: usize,
    window: Vec<u8>,
    window_at: u64,
    /// Where in the index's kept headers the next line's is.
    headers: Cursor,
    /// The kept headers' types, each made once.
    types: Vec<Py<PyString>>,
    /// Where packed headers are unpacked.
    scratch: Unpacked,
}

/// The Event of line `at`, from the header the scan kept (None when it kept none);
/// `cursor` moves on to the next line's.
fn kept_event<'py>(
    py: Python<'py>,
    index: &LineIndex,
    at: LineRef,
    cursor: &mut Cursor,
    scratch: &mut Unpacked,
    types: &[Py<PyString>],
) -> Option<PyResult<Bound<'py, PyAny>>> {
    let headers = index.headers.as_ref()?;
    let Header { id, ts, type_ } = headers.next(cursor, scratch)?;
    let type_ = match type_ {
        TypeName::Known(k) => types.get(k)?.bind(py).clone(),
        TypeName::Other(text) => PyString::new(py, text),
    };
    Some(deferred_payload_event(py, &index.file, at, id, type_, ts))
}

/// Bytes read at once while iterating.
const WINDOW: usize = 256 << 10;

#[pymethods]
impl LineIter {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let index = self.index.bind(py).get();
        let i = self.next;
        let Some(at) = index.line(i) else {
            return Ok(None);
        };
        self.next += 1;
        if let Some(event) = kept_event(
            py,
            index,
            at,
            &mut self.headers,
            &mut self.scratch,
            &self.types,
        ) {
            return event.map(Some);
        }
        let start = at.offset.checked_sub(self.window_at).map(|s| s as usize);
        let in_window = start
            .zip(usize::try_from(at.len).ok())
            .and_then(|(s, len)| self.window.get(s..s.checked_add(len)?));
        let raw = match in_window {
            Some(raw) => raw,
            None => {
                let len = line_len(at)?;
                // A window, but no further than the last line ends (a peek of the
                // last turn reads ~67 KiB; zeroing 256 KiB for it cost more).
                let to_last = index
                    .last_line()
                    .and_then(|l| {
                        usize::try_from((l.offset + l.len).saturating_sub(at.offset)).ok()
                    })
                    .unwrap_or(WINDOW);
                self.window.resize(len.max(WINDOW.min(to_last)), 0);
                let got = read_covering(&index.file, &mut self.window, at)?;
                self.window.truncate(got);
                self.window_at = at.offset;
                self.window.get(..len).unwrap_or_default()
            }
        };
        index.build(&mut Builder::new(py), i, raw).map(Some)
    }
}

/// A scan's `(line, offset, length)` of each envelope, as tuples on access:
/// `llm_agent_session._events.LazyList` wraps it. A list of them was ~150 bytes and
/// four objects an envelope, made and freed with the GIL held.
#[pyclass(frozen, module = "llm_agent_session._native")]
pub struct Spans {
    spans: Vec<(u64, u64, u64)>,
}

impl Spans {
    pub fn new(spans: Vec<(u64, u64, u64)>) -> Self {
        Spans { spans }
    }
}

#[pymethods]
impl Spans {
    fn __len__(&self) -> usize {
        self.spans.len()
    }

    fn __getitem__(&self, index: isize) -> PyResult<(u64, u64, u64)> {
        item_at(&self.spans, index).map(|(_, span)| span)
    }
}

/// The place `index` names in a sequence of `len` items, as Python indexes one
/// (negative from the end); IndexError past either end.
fn position(len: usize, index: isize) -> PyResult<usize> {
    let i = if index < 0 {
        index.checked_add_unsigned(len)
    } else {
        Some(index)
    };
    i.and_then(|i| usize::try_from(i).ok())
        .filter(|&i| i < len)
        .ok_or_else(|| PyIndexError::new_err("index out of range"))
}

/// `items[index]` as Python indexes a sequence (negative from the end), with its
/// place; IndexError past either end.
fn item_at<T: Copy>(items: &[T], index: isize) -> PyResult<(usize, T)> {
    let i = if index < 0 {
        index.checked_add_unsigned(items.len())
    } else {
        Some(index)
    };
    i.and_then(|i| usize::try_from(i).ok())
        .and_then(|i| Some((i, *items.get(i)?)))
        .ok_or_else(|| PyIndexError::new_err("index out of range"))
}

/// The run-context sections of a replay by digest: the text, read from its line when
/// first asked for, and the id of the line that carries it. A long run repeats its
/// context in every run: building every text at load was a large share of a big
/// transcript's load, and a dict of the line ids was ~40,000 pairs of strings at 1 GB.
/// Wrapped twice by `llm_agent_session._events.LazyTexts` (texts; line ids), which
/// adds what appends store.
#[pyclass(frozen, module = "llm_agent_session._native")]
pub struct SectionTexts {
    file: Arc<File>,
    /// In the order their texts first appeared.
    sections: Vec<SectionRef>,
    /// digest -> its index in `sections`.
    at: HashMap<String, usize>,
    /// After a load through a side index: the sections of the indexed lines, which
    /// come before `sections`.
    earlier: Option<Arc<Earlier>>,
}

impl SectionTexts {
    /// The fold's sections and their index, taken over as they are.
    pub fn new(
        file: Arc<File>,
        sections: Vec<SectionRef>,
        at: HashMap<String, usize>,
        earlier: Option<Arc<Earlier>>,
    ) -> Self {
        SectionTexts {
            file,
            sections,
            at,
            earlier,
        }
    }

    /// Where the text of `digest` is: its line, the text's span, the line's id.
    fn section(&self, digest: &str) -> PyResult<Option<(LineRef, Span, String)>> {
        if let Some(s) = self.at.get(digest).and_then(|&i| self.sections.get(i)) {
            return Ok(Some((s.text.line, s.text.span, s.line_id.to_string())));
        }
        match &self.earlier {
            Some(earlier) => earlier.section(digest),
            None => Ok(None),
        }
    }
}

#[pymethods]
impl SectionTexts {
    fn __len__(&self) -> usize {
        self.sections.len() + self.earlier.as_ref().map_or(0, |e| e.base.sections.len())
    }

    /// The digests, in the order their texts first appeared.
    fn keys(&self) -> PyResult<Vec<String>> {
        let mut out = match &self.earlier {
            Some(earlier) => earlier.digests()?,
            None => Vec::new(),
        };
        out.extend(self.sections.iter().map(|s| s.digest.clone()));
        Ok(out)
    }

    /// The text of `digest`, or None when no line carries it.
    fn get<'py>(&self, py: Python<'py>, digest: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
        let Some((line, span, _)) = self.section(digest)? else {
            return Ok(None);
        };
        let raw = read_line(&self.file, line)?;
        let item = token(&raw, span)
            .ok_or_else(|| PyValueError::new_err("the transcript changed under a lazy read"))?;
        Builder::new(py).value(&raw, item).map(Some)
    }

    /// The id of the first line that carries the text of `digest`, or None.
    fn line_of(&self, digest: &str) -> PyResult<Option<String>> {
        Ok(self.section(digest)?.map(|s| s.2))
    }
}

/// Envelope id -> its index in `events`, as replay found them: how
/// `Session.message_extra` finds one line without reading the file again.
#[pyclass(frozen, module = "llm_agent_session._native")]
pub struct EnvelopeIds {
    at: IdTable,
    /// After a load through a side index: the indexed envelopes, which come before
    /// `at`'s (their ids by fingerprint, each confirmed by reading its line).
    earlier: Option<Arc<Earlier>>,
}

impl EnvelopeIds {
    pub fn new(at: IdTable) -> Self {
        EnvelopeIds { at, earlier: None }
    }

    pub fn after(at: IdTable, earlier: Option<Arc<Earlier>>) -> Self {
        EnvelopeIds { at, earlier }
    }

    pub(super) fn table(&self) -> &IdTable {
        &self.at
    }

    fn first(&self) -> usize {
        self.earlier.as_ref().map_or(0, |e| e.base.count)
    }

    /// The index in `events` of the envelope with this id.
    pub fn find(&self, id: &str) -> PyResult<Option<usize>> {
        if let Some(at) = self.at.get(id) {
            return Ok(Some(at + self.first()));
        }
        match &self.earlier {
            Some(earlier) => earlier.find(id),
            None => Ok(None),
        }
    }

    /// The id of the envelope at `event`.
    pub fn id_at(&self, event: usize) -> PyResult<Option<String>> {
        let first = self.first();
        if event >= first {
            return Ok(self.at.id_at(event - first).map(str::to_owned));
        }
        match &self.earlier {
            Some(earlier) => earlier.id_at(event),
            None => Ok(None),
        }
    }
}

impl Drop for EnvelopeIds {
    fn drop(&mut self) {
        // A pyclass is dropped with the GIL held, and returning a big table's pages takes
        // milliseconds: every other thread, an event loop among them, would wait. A big
        // table is freed on a thread of its own (if none can be started, it is freed here).
        if self.at.len() > 10_000 {
            let at = std::mem::take(&mut self.at);
            let _ = std::thread::Builder::new()
                .name("llm-agent-session-free".into())
                .spawn(move || drop(at));
        }
    }
}

#[pymethods]
impl EnvelopeIds {
    fn __len__(&self) -> usize {
        self.at.len() + self.first()
    }

    fn get(&self, id: &str) -> PyResult<Option<usize>> {
        self.find(id)
    }
}

/// The extras of every message line as the load read them (`fold::MessageExtras`), by
/// the line's index in `events`: what `Session.message_extra` answers after a native
/// load, from memory (the file may have changed since; the pure core keeps its events).
#[pyclass(frozen, module = "llm_agent_session._native")]
pub struct KeptExtras {
    kept: MessageExtras,
    /// After a load through a side index: the indexed lines' extras are read from
    /// their line when asked for.
    earlier: Option<Arc<Earlier>>,
}

impl KeptExtras {
    pub fn new(kept: MessageExtras, earlier: Option<Arc<Earlier>>) -> Self {
        KeptExtras { kept, earlier }
    }
}

impl Drop for KeptExtras {
    fn drop(&mut self) {
        // As `EnvelopeIds`: a big one is freed off the thread that holds the GIL.
        if self.kept.len() > 10_000 {
            let kept = std::mem::take(&mut self.kept);
            let _ = std::thread::Builder::new()
                .name("llm-agent-session-free".into())
                .spawn(move || drop(kept));
        }
    }
}

#[pymethods]
impl KeptExtras {
    fn __len__(&self) -> usize {
        self.kept.len()
    }

    /// A new dict of the extras of the message line at `event` (`{}` when it has none);
    /// None when that envelope is not a message line.
    fn get<'py>(&self, py: Python<'py>, event: usize) -> PyResult<Option<Bound<'py, PyDict>>> {
        let read;
        let text = match self.earlier.as_ref().filter(|e| event < e.base.count) {
            Some(earlier) => match earlier.extras_text(event)? {
                Some(text) => {
                    read = text;
                    &read[..]
                }
                None => return Ok(None),
            },
            None => match self.kept.get(event) {
                Some(text) => text,
                None => return Ok(None),
            },
        };
        let object = Item {
            kind: Kind::Object,
            span: (0, text.len()),
        };
        let entries = match json_view::members(text, object) {
            Some(entries) => entries,
            None if text.is_empty() => Vec::new(),
            None => {
                return Err(PyValueError::new_err(
                    "the extras kept from the load do not parse",
                ))
            }
        };
        Ok(Some(Builder::new(py).dict(text, &entries)?))
    }
}

/// The op ids of the settled tool operations (`FoldState.settled` after a native
/// load): a bit for each envelope of `events` (an op id is the id of the envelope
/// that dispatched it, found through `EnvelopeIds`), and the ops dispatched after
/// the load by their text. The Python set it replaces held a string for every
/// settle in the file, made while the load held the GIL.
#[pyclass(module = "llm_agent_session._native")]
pub struct SettledIds {
    envelopes: Py<EnvelopeIds>,
    /// Bit `e % 64` of word `e / 64`: the operation dispatched by envelope `e` is settled.
    dispatched_at: Vec<u64>,
    count: usize,
    later: BTreeSet<String>,
}

impl SettledIds {
    /// `settled`: the indices in `events` of the settled operations' dispatches; `earlier`:
    /// those of a side index, as its bitmap (a bit an envelope).
    pub fn new(
        envelopes: Py<EnvelopeIds>,
        events: usize,
        settled: &[usize],
        earlier: Option<&[u8]>,
    ) -> Self {
        let mut dispatched_at = vec![0u64; events.div_ceil(64)];
        let mut count = 0;
        for (word, bytes) in dispatched_at
            .iter_mut()
            .zip(earlier.unwrap_or_default().chunks(8))
        {
            let mut b = [0u8; 8];
            b[..bytes.len()].copy_from_slice(bytes);
            *word = u64::from_le_bytes(b);
            count += word.count_ones() as usize;
        }
        let mut ids = SettledIds {
            envelopes,
            dispatched_at,
            count,
            later: BTreeSet::new(),
        };
        for &e in settled {
            ids.mark(e);
        }
        ids
    }

    /// Mark envelope `e`'s operation settled (false: no such envelope).
    fn mark(&mut self, e: usize) -> bool {
        let Some(word) = self.dispatched_at.get_mut(e / 64) else {
            return false;
        };
        let bit = 1u64 << (e % 64);
        if *word & bit == 0 {
            *word |= bit;
            self.count += 1;
        }
        true
    }

    fn is_marked(&self, e: usize) -> bool {
        self.dispatched_at
            .get(e / 64)
            .is_some_and(|word| word & (1u64 << (e % 64)) != 0)
    }
}

#[pymethods]
impl SettledIds {
    fn __len__(&self) -> usize {
        self.count + self.later.len()
    }

    /// Like a set of strings: anything else is not in it.
    fn __contains__(&self, py: Python<'_>, op_id: &Bound<'_, PyAny>) -> PyResult<bool> {
        let Ok(op_id) = op_id.downcast::<PyString>() else {
            return Ok(false);
        };
        let op_id = op_id.to_cow()?;
        Ok(match self.envelopes.bind(py).get().find(&op_id)? {
            Some(e) => self.is_marked(e),
            None => self.later.contains(op_id.as_ref()),
        })
    }

    fn add(&mut self, py: Python<'_>, op_id: &str) -> PyResult<()> {
        let found = self.envelopes.bind(py).get().find(op_id)?;
        if !found.is_some_and(|e| self.mark(e)) {
            self.later.insert(op_id.to_owned());
        }
        Ok(())
    }

    /// The settled op ids: those of the file in file order, then the later ones.
    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyIterator>> {
        let envelopes = self.envelopes.bind(py).get();
        let list = PyList::empty(py);
        for (w, &word) in self.dispatched_at.iter().enumerate() {
            let mut bits = word;
            while bits != 0 {
                let e = w * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                if let Some(id) = envelopes.id_at(e)? {
                    list.append(id)?;
                }
            }
        }
        for id in &self.later {
            list.append(id)?;
        }
        list.try_iter()
    }
}
