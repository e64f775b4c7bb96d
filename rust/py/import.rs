//! The importers' native reader and writer (issue #16): a Claude Code or Codex source's
//! lines as the Python objects `json.loads` gives, and the envelope lines of the
//! transcript made from them, byte for byte what `canonical` writes.
//!
//! The reference is `importers/_source.py` (`json.loads` per line, `NaN` refused) and
//! `importers/_bulk.py` (`canonical.dumps` + `envelope_line`). An import copies most
//! of the source's bytes (tool output, thinking, signatures) from a source string
//! into a transcript string, so the reader remembers where each string it built came
//! from, and the writer copies a string's escaped source bytes verbatim when they are
//! already what the canonical encoder would write (the same escapes: `\"`, `\\`,
//! `\n`, `\r`, `\t`, `\b`, `\f`, lowercase `\u00xx` for the other controls,
//! `\u2028`/`\u2029`; everything else as itself). What the writer meets for the first
//! time is escaped by `line_format::write_string`, as `py/encode.rs` does.
//!
//! Only the plain case is answered natively: a line whose top value is an object,
//! with no lone surrogate escape, no float past `f64`, nested at most
//! `NATIVE_DEPTH` deep; a payload of exact `str`/`int` (64-bit)/`float`/`bool`/
//! `None`/`list`/`tuple`/`dict` (str keys), within the write depth. Everything else
//! answers `None`, and the caller runs the reference, so every verdict, refusal and
//! error message stays the reference's own.

use std::borrow::Cow;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyList, PyString, PyTuple};

use super::build::Builder;
use super::encode::{envelope_line, write_scalar, Unsupported, MAX_WRITE_DEPTH};
use crate::json::buffers::recycle;
use crate::json::grammar::{self, Kind, Mode};
use crate::json::strings::decode_string;
use crate::json::view::skip_ws;
use crate::line_format::write_string;

/// Lines nested deeper are left to the reference's decoder (this builder recurses).
const NATIVE_DEPTH: usize = 128;
/// Keys longer than this are not shared (they rarely repeat).
const SHARED_KEY_MAX: usize = 64;
/// String values this short are shared (types, roles, names), while the cache has room.
const SHARED_VALUE_MAX: usize = 24;
const SHARED_CAP: usize = 8192;
/// Strings from this many bytes on are remembered for a verbatim copy; shorter ones
/// are cheaper to escape again than to look up in a table that outgrows the cache.
const LONG_MIN: usize = 64;
/// The fewest characters a remembered long string can have (`\u00xx` is 6 bytes).
const LONG_MIN_CHARS: usize = LONG_MIN / 6;

/// Where a string the reader built came from: its bytes between the quotes, and
/// whether they hold no escape (then they are its UTF-8 too).
#[derive(Clone, Copy)]
struct Verbatim {
    start: usize,
    end: usize,
    plain: bool,
}

/// FNV-1a: the tables are keyed by short byte strings and object addresses, read
/// and written once per string of the source (SipHash's resistance to chosen keys
/// buys nothing here: the keys are this process's addresses and capped in number).
#[derive(Default)]
struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for &b in bytes {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = h;
    }
    fn write_usize(&mut self, n: usize) {
        // An address: its low bits are alignment; spread the rest over all 64.
        self.0 = ((n as u64) >> 4).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

type Map<K, V> = HashMap<K, V, BuildHasherDefault<Fnv>>;

/// A source read once: its lines' objects, and the strings copied verbatim on write.
#[pyclass(frozen)]
pub struct SourceReader {
    data: Py<PyBytes>,
    /// One entry per line from the offset: the line's dict, or `None`.
    lines: Py<PyList>,
    /// String object address -> its canonical source bytes, for the shared strings
    /// (keys, short values) and the long ones. Each object is kept alive in `keep`, so
    /// no address is reused by another object while this lives.
    small: Map<usize, Verbatim>,
    long: Map<usize, Verbatim>,
    #[allow(dead_code)] // held for the addresses above
    keep: Vec<Py<PyString>>,
}

#[pymethods]
impl SourceReader {
    /// Read `data[offset..]`, split at `\n` as the reference splits it (the last line,
    /// without `\n`, included when not empty).
    #[new]
    fn new(py: Python<'_>, data: Bound<'_, PyBytes>, offset: usize) -> PyResult<Self> {
        let bytes = data.as_bytes();
        let rest = bytes.get(offset..).unwrap_or(&[]);
        // Byte work first, without the GIL: where each line is and whether it is plain.
        let found: Vec<(usize, usize, bool)> = py.allow_threads(|| {
            let mut out = Vec::new();
            let mut pos = 0;
            while pos < rest.len() {
                let stop = memchr::memchr(b'\n', &rest[pos..]).map_or(rest.len(), |n| pos + n);
                let line = &rest[pos..stop];
                out.push((pos, stop, !grammar::is_blank(line) && plain(line)));
                pos = stop + 1;
            }
            out
        });
        let lines = PyList::empty(py);
        let mut build = Build {
            builder: Builder::new(py),
            s: bytes,
            shared: Map::default(),
            small: Map::default(),
            long: Map::default(),
            keep: Vec::new(),
        };
        for (start, stop, is_plain) in found {
            let value = if is_plain {
                build.line(offset + start, offset + stop)?
            } else {
                None
            };
            match value {
                Some(obj) => lines.append(obj)?,
                None => lines.append(py.None())?,
            }
        }
        let (small, long, keep) = (build.small, build.long, build.keep);
        Ok(SourceReader {
            data: data.clone().unbind(),
            lines: lines.unbind(),
            small,
            long,
            keep,
        })
    }

    /// One entry per line: the dict of a plain JSON object, or `None` where the
    /// reference's decoder must read the line.
    #[getter]
    fn lines<'py>(&self, py: Python<'py>) -> Bound<'py, PyList> {
        self.lines.bind(py).clone()
    }

    /// `(id, line)`: the envelope line of `payload` (`\n` included), with the id
    /// given or a new UUIDv7 and the timestamp given (the source record's, in the line
    /// format's form; ValueError if it is not) or of now; `None` where the reference
    /// must write it (or refuse it).
    #[pyo3(signature = (type_, payload, id=None, ts=None))]
    fn encode<'py>(
        &self,
        py: Python<'py>,
        type_: &str,
        payload: &Bound<'py, PyDict>,
        id: Option<String>,
        ts: Option<String>,
    ) -> PyResult<Option<(String, Bound<'py, PyBytes>)>> {
        let source = self.data.bind(py).as_bytes();
        let mut writer = Writer {
            source,
            small: &self.small,
            long: &self.long,
            out: Vec::with_capacity(256),
        };
        if writer.value(payload.as_any(), 1).is_err() {
            return Ok(None);
        }
        let (id, _, line) = envelope_line(type_, &writer.out, id, ts)?;
        Ok(Some((id, PyBytes::new(py, &line))))
    }
}

/// Whether the reader builds the line itself (the plain case above).
fn plain(raw: &[u8]) -> bool {
    match grammar::parse(raw, Mode::Strict) {
        Ok(parsed) => {
            let plain = parsed.top == Kind::Object && !parsed.lone_surrogate_seen;
            recycle(parsed);
            plain
        }
        Err(_) => false,
    }
}

/// Whether a string's source bytes (between its quotes, valid JSON) are what the
/// canonical encoder writes for its value.
fn canonical_escapes(content: &[u8]) -> bool {
    // A raw U+2028/U+2029 is written escaped.
    let mut at = 0;
    while let Some(n) = content
        .get(at..)
        .and_then(|rest| memchr::memchr(0xe2, rest))
    {
        let i = at + n;
        if content.get(i + 1) == Some(&0x80) && matches!(content.get(i + 2), Some(0xa8 | 0xa9)) {
            return false;
        }
        at = i + 1;
    }
    let mut at = 0;
    while let Some(n) = content
        .get(at..)
        .and_then(|rest| memchr::memchr(b'\\', rest))
    {
        let i = at + n;
        match content.get(i + 1) {
            Some(b'"' | b'\\' | b'n' | b'r' | b't' | b'b' | b'f') => at = i + 2,
            Some(b'u') => {
                let hex = content.get(i + 2..i + 6).unwrap_or_default();
                let ok = match hex {
                    [b'0', b'0', a, b] => {
                        matches!(a, b'0' | b'1')
                            && matches!(b, b'0'..=b'9' | b'a'..=b'f')
                            // Those five are written short (`\b`, `\t`, `\n`, `\f`, `\r`).
                            && !(*a == b'0' && matches!(b, b'8' | b'9' | b'a' | b'c' | b'd'))
                    }
                    b"2028" | b"2029" => true,
                    _ => false,
                };
                if !ok {
                    return false;
                }
                at = i + 6;
            }
            _ => return false, // `\/`
        }
    }
    true
}

/// Python objects from a line the grammar accepted, in one pass.
struct Build<'py, 's> {
    builder: Builder<'py>,
    s: &'s [u8],
    /// Raw bytes -> the one string object of each key and short value.
    shared: Map<&'s [u8], Bound<'py, PyString>>,
    small: Map<usize, Verbatim>,
    long: Map<usize, Verbatim>,
    keep: Vec<Py<PyString>>,
}

impl<'py, 's> Build<'py, 's> {
    /// The dict of the object in `s[start..stop]`, or `None` (left to the reference).
    fn line(&mut self, start: usize, stop: usize) -> PyResult<Option<Bound<'py, PyAny>>> {
        let at = skip_ws(self.s, start);
        match self.value(at, stop, 0) {
            Ok((value, _)) => Ok(Some(value)),
            Err(Some(e)) => Err(e),
            Err(None) => Ok(None),
        }
    }

    /// The value at `i` and the index just past it. `Err(None)`: declined.
    fn value(
        &mut self,
        i: usize,
        stop: usize,
        depth: usize,
    ) -> Result<(Bound<'py, PyAny>, usize), Option<PyErr>> {
        let py = self.builder.py();
        let s = self.s.get(..stop).ok_or(None)?;
        match s.get(i) {
            Some(b'"') => {
                let (text, end) = self.string(i, s)?;
                Ok((text.into_any(), end))
            }
            Some(b'{') => {
                if depth >= NATIVE_DEPTH {
                    return Err(None);
                }
                let dict = PyDict::new(py);
                let mut at = skip_ws(s, i + 1);
                if s.get(at) == Some(&b'}') {
                    return Ok((dict.into_any(), at + 1));
                }
                loop {
                    let (key, after) = self.key(at, s)?;
                    at = skip_ws(s, after);
                    if s.get(at) != Some(&b':') {
                        return Err(None);
                    }
                    let (value, after) = self.value(skip_ws(s, at + 1), stop, depth + 1)?;
                    dict.set_item(key, value).map_err(Some)?;
                    at = skip_ws(s, after);
                    match s.get(at) {
                        Some(b',') => at = skip_ws(s, at + 1),
                        Some(b'}') => return Ok((dict.into_any(), at + 1)),
                        _ => return Err(None),
                    }
                }
            }
            Some(b'[') => {
                if depth >= NATIVE_DEPTH {
                    return Err(None);
                }
                let list = PyList::empty(py);
                let mut at = skip_ws(s, i + 1);
                if s.get(at) == Some(&b']') {
                    return Ok((list.into_any(), at + 1));
                }
                loop {
                    let (value, after) = self.value(at, stop, depth + 1)?;
                    list.append(value).map_err(Some)?;
                    at = skip_ws(s, after);
                    match s.get(at) {
                        Some(b',') => at = skip_ws(s, at + 1),
                        Some(b']') => return Ok((list.into_any(), at + 1)),
                        _ => return Err(None),
                    }
                }
            }
            Some(b't') => Ok((PyBool::new(py, true).to_owned().into_any(), i + 4)),
            Some(b'f') => Ok((PyBool::new(py, false).to_owned().into_any(), i + 5)),
            Some(b'n') => Ok((py.None().into_bound(py), i + 4)),
            Some(b'-' | b'0'..=b'9') => {
                let len = s
                    .get(i..)
                    .unwrap_or_default()
                    .iter()
                    .position(|b| !matches!(b, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'))
                    .unwrap_or(s.len() - i);
                let text = s.get(i..i + len).ok_or(None)?;
                Ok((self.builder.number(text).map_err(Some)?, i + len))
            }
            _ => Err(None),
        }
    }

    /// The content span of the string whose opening quote is at `i`, and whether it
    /// holds an escape.
    fn string_span(s: &[u8], i: usize) -> Option<(usize, usize, bool)> {
        let mut at = i + 1;
        let mut escaped = false;
        loop {
            let n = memchr::memchr2(b'"', b'\\', s.get(at..)?)?;
            let j = at + n;
            if s.get(j) == Some(&b'"') {
                return Some((i + 1, j, escaped));
            }
            escaped = true;
            at = j + 2; // the escaped byte (a `\uXXXX`'s hex digits hold no quote or backslash)
        }
    }

    fn string(
        &mut self,
        i: usize,
        s: &'s [u8],
    ) -> Result<(Bound<'py, PyString>, usize), Option<PyErr>> {
        let (start, end, escaped) = Self::string_span(s, i).ok_or(None)?;
        let content = s.get(start..end).ok_or(None)?;
        if content.len() <= SHARED_VALUE_MAX && self.shared.len() < SHARED_CAP {
            return Ok((self.shared(content, start, end, escaped)?, end + 1));
        }
        let text = self.text(content, escaped)?;
        if content.len() >= LONG_MIN && canonical_escapes(content) {
            self.long.insert(
                text.as_ptr() as usize,
                Verbatim {
                    start,
                    end,
                    plain: !escaped,
                },
            );
            self.keep.push(text.clone().unbind());
        }
        Ok((text, end + 1))
    }

    fn key(
        &mut self,
        i: usize,
        s: &'s [u8],
    ) -> Result<(Bound<'py, PyString>, usize), Option<PyErr>> {
        if s.get(i) != Some(&b'"') {
            return Err(None);
        }
        let (start, end, escaped) = Self::string_span(s, i).ok_or(None)?;
        let content = s.get(start..end).ok_or(None)?;
        if content.len() > SHARED_KEY_MAX {
            return Ok((self.text(content, escaped)?, end + 1));
        }
        Ok((self.shared(content, start, end, escaped)?, end + 1))
    }

    /// The one string object of these raw bytes (made and remembered the first time).
    fn shared(
        &mut self,
        content: &'s [u8],
        start: usize,
        end: usize,
        escaped: bool,
    ) -> Result<Bound<'py, PyString>, Option<PyErr>> {
        if let Some(k) = self.shared.get(content) {
            return Ok(k.clone());
        }
        let text = self.text(content, escaped)?;
        if canonical_escapes(content) {
            self.small.insert(
                text.as_ptr() as usize,
                Verbatim {
                    start,
                    end,
                    plain: !escaped,
                },
            );
        }
        self.shared.insert(content, text.clone());
        Ok(text)
    }

    fn text(&self, content: &[u8], escaped: bool) -> Result<Bound<'py, PyString>, Option<PyErr>> {
        let py = self.builder.py();
        if !escaped {
            let text = simdutf8::basic::from_utf8(content).map_err(|_| None)?;
            return Ok(PyString::new(py, text));
        }
        // No lone surrogate on a plain line, so the decoding is UTF-8.
        let decoded = decode_string(content);
        let text = simdutf8::basic::from_utf8(&decoded).map_err(|_| None)?;
        Ok(PyString::new(py, text))
    }
}

/// Canonical JSON of a payload, with the reader's strings copied verbatim.
struct Writer<'a> {
    source: &'a [u8],
    small: &'a Map<usize, Verbatim>,
    long: &'a Map<usize, Verbatim>,
    out: Vec<u8>,
}

impl<'a> Writer<'a> {
    /// The source bytes of a string the reader built, if canonical.
    fn known(&self, s: &Bound<'_, PyString>) -> Option<(&'a [u8], bool)> {
        let at = s.as_ptr() as usize;
        let v = match self.small.get(&at) {
            Some(v) => v,
            // Most strings are short: spare them a look into the big table.
            None if s.len().ok()? >= LONG_MIN_CHARS => self.long.get(&at)?,
            None => return None,
        };
        Some((self.source.get(v.start..v.end)?, v.plain))
    }

    fn string(&mut self, s: &Bound<'_, PyString>) -> Result<(), Unsupported> {
        if let Some((raw, _)) = self.known(s) {
            self.out.push(b'"');
            self.out.extend_from_slice(raw);
            self.out.push(b'"');
            return Ok(());
        }
        // A lone surrogate cannot be UTF-8: the reference refuses it.
        write_string(&mut self.out, &s.to_cow().map_err(|_| Unsupported)?, true);
        Ok(())
    }

    fn value(&mut self, v: &Bound<'_, PyAny>, depth: usize) -> Result<(), Unsupported> {
        if let Ok(s) = v.downcast_exact::<PyString>() {
            return self.string(s);
        }
        if write_scalar(&mut self.out, v)? {
            return Ok(());
        }
        if depth > MAX_WRITE_DEPTH {
            return Err(Unsupported);
        }
        if let Ok(d) = v.downcast_exact::<PyDict>() {
            let mut entries = Vec::with_capacity(d.len());
            for (k, item) in d.iter() {
                let key = k.downcast_exact::<PyString>().map_err(|_| Unsupported)?;
                let sort_key: Cow<'a, [u8]> = match self.known(key) {
                    Some((raw, true)) => Cow::Borrowed(raw),
                    _ => match key.to_cow().map_err(|_| Unsupported)? {
                        Cow::Borrowed(text) => Cow::Owned(text.as_bytes().to_vec()),
                        Cow::Owned(text) => Cow::Owned(text.into_bytes()),
                    },
                };
                entries.push((sort_key, key.clone(), item));
            }
            // Code point order is UTF-8 byte order.
            entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            self.out.push(b'{');
            for (n, (_, key, item)) in entries.iter().enumerate() {
                if n > 0 {
                    self.out.push(b',');
                }
                self.string(key)?;
                self.out.push(b':');
                self.value(item, depth + 1)?;
            }
            self.out.push(b'}');
            return Ok(());
        }
        let items: Vec<Bound<'_, PyAny>> = if let Ok(l) = v.downcast_exact::<PyList>() {
            l.iter().collect()
        } else if let Ok(t) = v.downcast_exact::<PyTuple>() {
            t.iter().collect()
        } else {
            return Err(Unsupported);
        };
        self.out.push(b'[');
        for (n, item) in items.iter().enumerate() {
            if n > 0 {
                self.out.push(b',');
            }
            self.value(item, depth + 1)?;
        }
        self.out.push(b']');
        Ok(())
    }
}
