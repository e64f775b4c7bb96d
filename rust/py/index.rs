//! A load through a side index (`index::replay`), as `_core.IndexedReplay`: the state
//! and events a whole read gives, and the index to write next. What the fold left to
//! the indexed lines (their ids, extras and section texts) is [`Earlier`], read from
//! the file when first asked for.

use std::fs::File;
use std::sync::Arc;

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::envelope::parse_envelope_fields;
use crate::error::CoreError;
use crate::file_io::{BorrowedFile, Source};
use crate::index::format::{Identity, IndexData, Invalid};
use crate::index::hash::SipKey;
use crate::index::lines::Lines;
use crate::index::replay::{self as indexed, Ask, Use};
use crate::index::resume::{read_line, Base};
use crate::json::grammar::Span;
use crate::message_rules::extras_text;
use crate::replay::fold::LineRef;

use super::lazy::{self, EnvelopeIds, LineIndex};
use super::named::{self, call_kw};
use super::{lazy_list, survivors, to_pyerr};

/// The indexed envelopes of a load through a side index: what its fold did not read.
pub struct Earlier {
    pub base: Base,
    file: Arc<File>,
    /// Every envelope's line (the indexed ones first), shared with `events`.
    lines: Arc<Lines>,
}

/// A read of an indexed line failed: the file changed under the session (no writer of
/// this library does that), or the system call did.
fn lazy_error(e: CoreError) -> PyErr {
    match e {
        CoreError::Io(e) => PyOSError::new_err(e.to_string()),
        _ => PyValueError::new_err(
            "the transcript changed under a lazy read: an indexed line is no longer what it was",
        ),
    }
}

impl Earlier {
    pub fn find(&self, id: &str) -> PyResult<Option<usize>> {
        self.base
            .find(id, &*self.file, &self.lines)
            .map_err(lazy_error)
    }

    fn envelope(&self, event: usize) -> PyResult<Option<(Vec<u8>, LineRef)>> {
        let Some(at) = self.lines.get(event) else {
            return Ok(None);
        };
        Ok(Some((read_line(&*self.file, at).map_err(lazy_error)?, at)))
    }

    pub fn id_at(&self, event: usize) -> PyResult<Option<String>> {
        let Some((raw, at)) = self.envelope(event)? else {
            return Ok(None);
        };
        let mut fields = Vec::new();
        let env = parse_envelope_fields(&raw, at.offset, &mut fields)
            .map_err(|_| lazy_error(CoreError::ShorterThanSize))?;
        Ok(Some(env.id.into_owned()))
    }

    /// The extras text of the message line at `event`; None: not a message line.
    pub fn extras_text(&self, event: usize) -> PyResult<Option<Vec<u8>>> {
        let Some((raw, at)) = self.envelope(event)? else {
            return Ok(None);
        };
        let mut fields = Vec::new();
        let env = parse_envelope_fields(&raw, at.offset, &mut fields)
            .map_err(|_| lazy_error(CoreError::ShorterThanSize))?;
        if env.type_ != "message" {
            return Ok(None);
        }
        Ok(Some(
            extras_text(&raw, &fields).map_or_else(Vec::new, |t| t.into_vec()),
        ))
    }

    pub fn section(&self, digest: &str) -> PyResult<Option<(LineRef, Span, String)>> {
        let found = self
            .base
            .section(digest, &*self.file, &self.lines)
            .map_err(lazy_error)?;
        Ok(found.and_then(|(e, span, id)| Some((self.lines.get(e)?, span, id.to_string()))))
    }

    pub fn digests(&self) -> PyResult<Vec<String>> {
        self.base
            .digests(&*self.file, &self.lines)
            .map_err(lazy_error)
    }
}

/// `(st_dev, st_ino, st_size, st_mtime_ns, st_ctime_ns)`.
type Stat = (u64, u64, u64, i64, i64);

fn identity(s: Stat) -> Identity {
    Identity {
        dev: s.0,
        ino: s.1,
        size: s.2,
        mtime_ns: s.3,
        ctime_ns: s.4,
    }
}

/// `(k0, k1)`, as Python hands a key over.
fn sip_key((k0, k1): (u64, u64)) -> SipKey {
    SipKey { k0, k1 }
}

/// The index file open at `fd` (just opened: read from its start) decoded, if sealed
/// with `secret`, or why it is none; None when it holds more than `max` bytes.
fn read_index(
    fd: i32,
    max: u64,
    secret: SipKey,
) -> std::io::Result<Option<Result<IndexData, Invalid>>> {
    crate::index::read::read_index(&*BorrowedFile::new(fd)?, max, secret)
}

/// Replay the first `size` bytes of `fd` through the side index open at `index_fd`
/// (untrusted; None: none; read if it holds at most `index_max` bytes, and used if
/// sealed with `secret`), which must describe the file `then` names; with `write`,
/// also make the index of the file as read (named `now`, sealed with `secret`; when an
/// index served, only if `extend`), `key` its fingerprints' key (None: random). An
/// `_core.IndexedReplay`, or `CoreFailure` as `replay` raises it.
#[pyfunction]
#[pyo3(signature = (fd, size, then, now, secret, index_fd=None, index_max=0, write=false, extend=true, key=None, reopen_path=None))]
#[allow(clippy::too_many_arguments)]
pub fn replay_indexed<'py>(
    py: Python<'py>,
    fd: i32,
    size: u64,
    then: Stat,
    now: Stat,
    secret: (u64, u64),
    index_fd: Option<i32>,
    index_max: u64,
    write: bool,
    extend: bool,
    key: Option<(u64, u64)>,
    reopen_path: Option<&str>,
) -> PyResult<Bound<'py, PyAny>> {
    // What the fold leaves to the indexed lines is read through a descriptor of the
    // session's file of its own; where none can be had, the index is not used.
    let own = lazy::reopen(fd, reopen_path).ok().map(Arc::new);
    let index_fd = index_fd.filter(|_| own.is_some());
    let (then, now) = (identity(then), identity(now));
    let key = key.map(sip_key);
    let secret = sip_key(secret);
    let done = py.allow_threads(move || {
        let index = match index_fd {
            Some(ifd) => read_index(ifd, index_max, secret)?,
            None => None,
        };
        let ask = Ask {
            index,
            then,
            now,
            write,
            extend,
            key,
            secret,
        };
        let file = BorrowedFile::new(fd)?;
        let size = size.min(file.size()?);
        indexed::replay(&*file, size, ask)
    });
    let done = done.map_err(|e| to_pyerr(py, e))?;
    let indexed::Replay {
        mut fold,
        base,
        used,
        index: new_index,
        read,
    } = done;
    let file = BorrowedFile::new(fd).map_err(|e| to_pyerr(py, CoreError::Io(e)))?;
    let lines = Arc::new(std::mem::take(&mut fold.events));
    let earlier = match (base, &own) {
        (Some(base), Some(own)) => Some(Arc::new(Earlier {
            base,
            file: own.clone(),
            lines: lines.clone(),
        })),
        _ => None,
    };
    let ids = std::mem::take(&mut fold.envelope_at);
    let envelope_at = Bound::new(py, EnvelopeIds::after(ids, earlier.clone()))?;
    let state = survivors::fold_state(
        py,
        &file,
        &mut fold,
        lines.len(),
        own.clone(),
        envelope_at,
        earlier,
    )?;
    let events = match own {
        Some(own) => lazy_list(py, LineIndex::events(own, lines, Vec::new()))?,
        None => super::all_events(py, &file, &lines)?,
    };
    py.allow_threads(move || drop(fold));
    let used = match used {
        Use::None => "none".to_owned(),
        Use::Used => "used".to_owned(),
        Use::Ignored(why) => format!("ignored: {why}"),
    };
    call_kw!(
        py,
        named::INDEXED_REPLAY.get(py)?,
        state = state,
        events = events,
        index_bytes = new_index.map(|b| PyBytes::new(py, &b)),
        used = used,
        read = read,
    )
}

/// A side index's `(line, offset, length)` of each envelope, made on access (the
/// line numbers counted from its gaps): `_events.LazyList` wraps it.
#[pyclass(frozen, module = "llm_agent_session._native")]
pub struct IndexedSpans {
    lines: Arc<Lines>,
    /// The envelopes after blank lines, ascending, and how many blank lines came
    /// before each of them in all (a running sum).
    gap_events: Vec<u64>,
    lines_before: Vec<u64>,
}

#[pymethods]
impl IndexedSpans {
    fn __len__(&self) -> usize {
        self.lines.len()
    }

    fn __getitem__(&self, index: isize) -> PyResult<(u64, u64, u64)> {
        let n = self.lines.len();
        let i = if index < 0 {
            index.checked_add_unsigned(n)
        } else {
            Some(index)
        };
        let Some((e, at)) = i
            .and_then(|i| usize::try_from(i).ok())
            .and_then(|e| Some((e, self.lines.get(e)?)))
        else {
            return Err(pyo3::exceptions::PyIndexError::new_err(
                "index out of range",
            ));
        };
        let gaps = self.gap_events.partition_point(|&g| g <= e as u64);
        let blank = gaps
            .checked_sub(1)
            .and_then(|k| self.lines_before.get(k))
            .copied();
        Ok((e as u64 + 1 + blank.unwrap_or(0), at.offset, at.len))
    }

    /// The byte offsets of envelopes `[start, stop)` (clamped to those there are), eight
    /// bytes little-endian apiece: a viewer places search hits by them without building a
    /// span an envelope. Asked for in pieces, so that no one call holds the GIL long.
    fn offsets<'py>(&self, py: Python<'py>, start: usize, stop: usize) -> Bound<'py, PyBytes> {
        let lines = self.lines.clone();
        let out = py.allow_threads(move || {
            let stop = stop.min(lines.len());
            let n = stop.saturating_sub(start);
            let mut out = Vec::with_capacity(n * 8);
            for at in lines.iter_from(start).take(n) {
                out.extend_from_slice(&at.offset.to_le_bytes());
            }
            out
        });
        PyBytes::new(py, &out)
    }
}

/// What peek takes from the side index open at `index_fd` (read if it holds at most
/// `index_max` bytes, and used if sealed with `secret`) when it still describes the
/// first `size` bytes of `fd` (`then`: as `fstat` saw the file): an
/// `_core.IndexTable`, or None.
#[pyfunction]
#[pyo3(signature = (fd, size, then, secret, index_fd, index_max, want_survey=false, reopen_path=None))]
#[allow(clippy::too_many_arguments)]
pub fn index_table<'py>(
    py: Python<'py>,
    fd: i32,
    size: u64,
    then: Stat,
    secret: (u64, u64),
    index_fd: i32,
    index_max: u64,
    want_survey: bool,
    reopen_path: Option<&str>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let Ok(own) = lazy::reopen(fd, reopen_path).map(Arc::new) else {
        return Ok(None);
    };
    let then = identity(then);
    let secret = sip_key(secret);
    let found = py.allow_threads(move || {
        let index = match read_index(index_fd, index_max, secret)? {
            Some(Ok(index)) => index,
            Some(Err(invalid)) => return Ok(Err(invalid.0)),
            None => return Ok(Err(String::new())),
        };
        let file = BorrowedFile::new(fd)?;
        let size = size.min(file.size()?);
        crate::index::table::table(&*file, size, index, then, want_survey)
    });
    let Ok(found) = found.map_err(|e| to_pyerr(py, e))? else {
        return Ok(None);
    };
    let crate::index::table::Table {
        index,
        messages,
        survey,
    } = found;
    let lines = Arc::new(index.events.clone());
    let Some(first) = lines.get(0) else {
        return Ok(None);
    };
    let raw = read_line(&*own, first).map_err(lazy_error)?;
    let mut fields = Vec::new();
    let meta = match parse_envelope_fields(&raw, first.offset, &mut fields) {
        Ok(_) => super::build::Builder::new(py).dict(&raw, &fields)?,
        Err(_) => return Ok(None),
    };
    let mut lines_before = Vec::with_capacity(index.gaps.len());
    let mut sum = 0;
    for g in &index.gaps {
        sum += g.lines;
        lines_before.push(sum);
    }
    let spans = IndexedSpans {
        lines: lines.clone(),
        gap_events: index.gaps.iter().map(|g| g.event).collect(),
        lines_before,
    };
    let survey = match survey {
        Some(v) => call_kw!(
            py,
            named::SURVEY_COUNTS.get(py)?,
            types = v.types,
            roles = v.roles,
            live = v.live,
            problem = py.None(),
            open = v.open,
            rewound = v.rewound,
        )?,
        None => py.None().into_bound(py),
    };
    let kind_table: Vec<(String, Option<String>)> = index
        .kind_table
        .iter()
        .map(|k| (k.type_.clone(), k.role.clone()))
        .collect();
    call_kw!(
        py,
        named::INDEX_TABLE.get(py)?,
        events = lazy_list(
            py,
            LineIndex::events(own.clone(), lines.clone(), Vec::new())
        )?,
        spans = named::LAZY_LIST.get(py)?.call1((Bound::new(py, spans)?,))?,
        messages = lazy_list(py, LineIndex::messages_of(own, lines, messages))?,
        kinds = PyBytes::new(py, index.kinds.bytes()),
        kind_table = kind_table,
        end = index.end,
        lines = index.lines,
        meta = meta,
        survey = survey,
        times = PyBytes::new(py, index.times.bytes()),
        failed = PyBytes::new(py, index.failed.bytes()),
        fingerprints = PyBytes::new(py, index.fingerprints.bytes()),
        id_key = (index.key.k0, index.key.k1),
    )
    .map(Some)
}

/// The index of the first `size` bytes of `fd`, made as `replay_indexed` makes it
/// (through the index open at `index_fd` when it still describes the file, `then`;
/// else from the whole file), and nothing else: no Python object is built, the GIL is
/// held only to hand the bytes over. A session's refresh runs it on a thread beside
/// the appending one. `(bytes or None, what became of the index)`; `CoreFailure` as
/// `replay` raises it.
#[pyfunction]
#[pyo3(signature = (fd, size, then, now, secret, index_fd=None, index_max=0, key=None))]
#[allow(clippy::too_many_arguments)]
pub fn make_index<'py>(
    py: Python<'py>,
    fd: i32,
    size: u64,
    then: Stat,
    now: Stat,
    secret: (u64, u64),
    index_fd: Option<i32>,
    index_max: u64,
    key: Option<(u64, u64)>,
) -> PyResult<(Option<Bound<'py, PyBytes>>, String)> {
    let (then, now) = (identity(then), identity(now));
    let key = key.map(sip_key);
    let secret = sip_key(secret);
    let done = py.allow_threads(move || {
        let index = match index_fd {
            Some(ifd) => read_index(ifd, index_max, secret)?,
            None => None,
        };
        let ask = Ask {
            index,
            then,
            now,
            write: true,
            extend: true,
            key,
            secret,
        };
        let file = BorrowedFile::new(fd)?;
        let size = size.min(file.size()?);
        indexed::replay(&*file, size, ask).map(|r| (r.index, r.used))
    });
    let (bytes, used) = done.map_err(|e| to_pyerr(py, e))?;
    let used = match used {
        Use::None => "none".to_owned(),
        Use::Used => "used".to_owned(),
        Use::Ignored(why) => format!("ignored: {why}"),
    };
    Ok((bytes.map(|b| PyBytes::new(py, &b)), used))
}
