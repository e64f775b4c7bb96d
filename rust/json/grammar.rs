//! The grammar: one line's JSON, read exactly as CPython's `json.loads` reads it.
//!
//! The reference is `python/llm_agent_session/_pure/lines.py`, which calls
//! `json.loads` (CPython's C scanner). This module reproduces its verdicts:
//!
//! * RFC 8259 grammar; whitespace is space, tab, LF, CR; one value, then only
//!   whitespace. A BOM is not whitespace (CPython refuses a leading one outright).
//! * Strings: raw control characters (< 0x20) refused; escapes `\" \\ \/ \b \f \n \r
//!   \t \uXXXX` (hex in any case). A lone surrogate escape is grammatical
//!   (`simd`, `surrogates`).
//! * Numbers: `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?` (`numbers`).
//! * `NaN`, `Infinity`, `-Infinity` are not JSON (the reference refuses them through
//!   `parse_constant`).
//! * Strict mode (the reference's `decode_json`) also refuses a float literal that
//!   overflows to ±inf; integers of any length are read exactly, so never refused.
//!
//! The parser is iterative (an explicit stack), so no input can overflow the
//! native stack; nesting is bounded by `depth::MAX_READ_DEPTH`, and a line that fails
//! gets the reference's token scan (`depth`) to tell "too deep" from "malformed".

use super::buffers::{self, Scratch};
use super::depth::{nesting_depth_exceeds, MAX_DEPTH};
use super::numbers::scan_number;
use super::simd::{scan_string, Width};
use super::view::{skip_ws, skip_ws_within_line};

pub use super::shapes::{Kind, Member, Mode, ParseProblem, Parsed, Span, Verdict};

/// A line is blank when it holds only space, tab and CR.
pub fn is_blank(raw: &[u8]) -> bool {
    raw.iter().all(|&b| matches!(b, b' ' | b'\t' | b'\r'))
}

/// The reference's `classify`: UTF-8, then depth, then grammar.
pub fn classify(raw: &[u8]) -> Verdict {
    match parse(raw, Mode::Grammar) {
        // A line that parses is valid UTF-8 (see `Parser::string`).
        Ok(_) => Verdict::Whole,
        Err(_) if std::str::from_utf8(raw).is_err() => Verdict::Torn,
        Err(ParseProblem::TooDeep) => Verdict::TooDeep,
        Err(_) => Verdict::Torn,
    }
}

/// Parse one JSON value spanning the whole of `raw` (surrounding whitespace allowed).
///
/// Bytes >= 0x80 are accepted only inside strings and only as valid UTF-8 (the
/// whole line is validated once the grammar accepts it), so a line that parses is
/// valid UTF-8. A line that does not may also be invalid
/// UTF-8, which the reference reports first: callers check that on failure.
///
/// The reference checks depth in a pass of its own before parsing. Here the parser
/// counts its own depth (on the valid prefix it has read, its depth is the token
/// scan's), and only a line that fails to parse gets the separate token scan, to
/// tell "too deep" from "malformed": on a valid line the pass would only repeat
/// what the parse already knows.
pub fn parse(raw: &[u8], mode: Mode) -> Result<Parsed, ParseProblem> {
    parse_using(raw, mode, Width::detect())
}

/// The line at the start of `buf`, which may hold more bytes after it, parsed in
/// strict mode without looking for its end first: a valid value, then spaces, tabs
/// or CRs, then the `\n` that ends the line. The parsed line and its length (the
/// index of that `\n`), or None when the line is not exactly that (malformed, too
/// deep, cut short by the end of `buf`, no `\n`): the caller then finds the line's
/// end and parses it alone, which gives every verdict. A value cannot hold a `\n`
/// here (strings refuse control bytes, and between tokens it is not whitespace), so
/// the line this finds is the line up to the first `\n`: the one the caller would
/// have cut. It saves the separate search for every line's end.
pub fn parse_line_at_start(buf: &[u8]) -> Option<(Parsed, usize)> {
    parse_in_scratch(buf, Mode::Strict, Width::detect(), &mut NoSink, true).ok()
}

/// [`parse`] with the string scan's block width given (the tests run every width).
pub fn parse_using(raw: &[u8], mode: Mode, width: Width) -> Result<Parsed, ParseProblem> {
    let mut sink = NoSink;
    match parse_with(raw, mode, width, &mut sink) {
        Err(ParseProblem::Malformed | ParseProblem::NumberTooLarge)
            if nesting_depth_exceeds(raw) =>
        {
            Err(ParseProblem::TooDeep)
        }
        other => other,
    }
}

/// Where the parser reports structure, in file order; the no-op sink compiles away.
/// Spans index the parsed bytes: a key's is its content (between the quotes), a
/// scalar's its whole token (an empty object or array is reported as a scalar).
pub trait Sink {
    fn open(&mut self, _kind: Kind) {}
    fn key(&mut self, _raw: &[u8], _content: Span, _lone: bool) {}
    fn scalar(&mut self, _raw: &[u8], _kind: Kind, _token: Span, _lone: bool) {}
    fn close(&mut self) {}
}

struct NoSink;
impl Sink for NoSink {}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    mode: Mode,
    lone_seen: bool,
    width: Width,
    /// `s` may go on past the line, which a `\n` ends ([`parse_line_at_start`]).
    newline_ends: bool,
}

impl Parser<'_> {
    #[inline]
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    #[inline]
    fn skip_ws(&mut self) {
        self.i = if self.newline_ends {
            skip_ws_within_line(self.s, self.i)
        } else {
            skip_ws(self.s, self.i)
        };
    }

    fn starts_with(&self, lit: &[u8]) -> bool {
        self.s
            .get(self.i..)
            .is_some_and(|rest| rest.starts_with(lit))
    }

    fn literal(&mut self, lit: &[u8]) -> Result<(), ParseProblem> {
        if self.starts_with(lit) {
            self.i += lit.len();
            Ok(())
        } else {
            Err(ParseProblem::Malformed)
        }
    }

    /// A string starting at its opening quote; returns whether it holds a lone
    /// surrogate escape, and leaves `i` past its closing quote.
    fn string(&mut self) -> Result<bool, ParseProblem> {
        let end = scan_string(self.width, self.s, self.i + 1).ok_or(ParseProblem::Malformed)?;
        Ok(self.string_ends(end.after, end.lone))
    }

    #[inline]
    fn string_ends(&mut self, end: usize, lone: bool) -> bool {
        self.i = end;
        self.lone_seen |= lone;
        lone
    }

    /// A number starting at `-` or a digit; leaves `i` past it.
    #[inline]
    fn number(&mut self) -> Result<(), ParseProblem> {
        self.i = scan_number(self.s, self.i, self.mode)?;
        Ok(())
    }

    /// NaN, Infinity, -Infinity: CPython recognises them by prefix and hands them to
    /// `parse_constant`, which the reference makes refuse them as malformed.
    fn is_constant(&self) -> bool {
        [&b"NaN"[..], b"Infinity", b"-Infinity"]
            .iter()
            .any(|lit| self.starts_with(lit))
    }

    /// `"key"` `:` with the whitespace around the colon, leaving `i` at the value.
    fn member_key<S: Sink>(&mut self, sink: &mut S) -> Result<Span, ParseProblem> {
        if self.peek() != Some(b'"') {
            return Err(ParseProblem::Malformed);
        }
        let start = self.i + 1;
        let lone = self.string()?;
        let span = (start, self.i - 1);
        sink.key(self.s, span, lone);
        self.skip_ws();
        if self.peek() != Some(b':') {
            return Err(ParseProblem::Malformed);
        }
        self.i += 1;
        self.skip_ws();
        Ok(span)
    }
}

/// Where the parse stands in the top-level object and in the objects that are its
/// members' values: the member whose value is being read, and where that value
/// started (strict mode records both levels; see [`Parsed`]).
#[derive(Default)]
struct Place {
    key: Span,
    value_start: usize,
    inner_key: Span,
    inner_start: usize,
}

impl Place {
    /// A key at nesting `depth` (1: the top-level object) ended; its value starts at `at`.
    #[inline]
    fn key_read(&mut self, depth: usize, key: Span, at: usize) {
        if depth == 1 {
            self.key = key;
            self.value_start = at;
        } else if depth == 2 {
            self.inner_key = key;
            self.inner_start = at;
        }
    }
}

/// [`parse`] reporting the structure to `sink` as it goes (no depth pass on failure).
pub fn parse_with<S: Sink>(
    raw: &[u8],
    mode: Mode,
    width: Width,
    sink: &mut S,
) -> Result<Parsed, ParseProblem> {
    parse_in_scratch(raw, mode, width, sink, false).map(|(parsed, _)| parsed)
}

/// [`parse_into`] with this thread's reused scratch buffers.
fn parse_in_scratch<S: Sink>(
    raw: &[u8],
    mode: Mode,
    width: Width,
    sink: &mut S,
    newline_ends: bool,
) -> Result<(Parsed, usize), ParseProblem> {
    let mut scratch = buffers::take();
    let result = parse_into(raw, mode, width, sink, &mut scratch, newline_ends);
    buffers::give_back_stack(scratch.stack);
    result
}

/// The parse of `raw` and where its line ends: `raw.len()`, or with `newline_ends`
/// the `\n` after the value.
fn parse_into<S: Sink>(
    raw: &[u8],
    mode: Mode,
    width: Width,
    sink: &mut S,
    scratch: &mut Scratch,
    newline_ends: bool,
) -> Result<(Parsed, usize), ParseProblem> {
    let mut p = Parser {
        s: raw,
        i: 0,
        mode,
        lone_seen: false,
        width,
        newline_ends,
    };
    let record = mode == Mode::Strict;
    let stack = &mut scratch.stack;
    stack.clear();
    let mut members = std::mem::take(&mut scratch.members);
    members.clear();
    let mut inner = std::mem::take(&mut scratch.inner);
    inner.clear();
    let mut place = Place::default();

    p.skip_ws();
    'value: loop {
        // A value starts at p.i.
        let start = p.i;
        if let Some(b'N' | b'I' | b'-') = p.peek() {
            if p.is_constant() {
                return Err(ParseProblem::Malformed);
            }
        }
        let mut kind = match p.peek() {
            Some(open @ (b'{' | b'[')) => {
                let (kind, close) = if open == b'{' {
                    (Kind::Object, b'}')
                } else {
                    (Kind::Array, b']')
                };
                p.i += 1;
                if stack.len() >= MAX_DEPTH {
                    return Err(ParseProblem::TooDeep);
                }
                p.skip_ws();
                if p.peek() == Some(close) {
                    p.i += 1;
                    sink.scalar(raw, kind, (start, p.i), false);
                    kind
                } else {
                    stack.push(open);
                    sink.open(kind);
                    if open == b'{' {
                        let k = p.member_key(sink)?;
                        place.key_read(stack.len(), k, p.i);
                    }
                    continue 'value;
                }
            }
            Some(b'"') => {
                let lone = p.string()?;
                sink.scalar(raw, Kind::String, (start, p.i), lone);
                Kind::String
            }
            Some(first @ (b'n' | b't' | b'f')) => {
                let (literal, kind) = match first {
                    b'n' => (&b"null"[..], Kind::Null),
                    b't' => (&b"true"[..], Kind::Bool),
                    _ => (&b"false"[..], Kind::Bool),
                };
                p.literal(literal)?;
                sink.scalar(raw, kind, (start, p.i), false);
                kind
            }
            Some(b'-' | b'0'..=b'9') => {
                p.number()?;
                sink.scalar(raw, Kind::Number, (start, p.i), false);
                Kind::Number
            }
            _ => return Err(ParseProblem::Malformed),
        };
        // A value just ended at p.i; close every container it completes.
        loop {
            if record && stack.first() == Some(&b'{') {
                if stack.len() == 1 {
                    members.push(Member {
                        key: place.key,
                        kind,
                        value: (place.value_start, p.i),
                    });
                } else if stack.len() == 2 && stack.get(1) == Some(&b'{') {
                    // The top-level member this object is the value of is pushed
                    // when the object closes: its index is the current length.
                    inner.push((
                        members.len(),
                        Member {
                            key: place.inner_key,
                            kind,
                            value: (place.inner_start, p.i),
                        },
                    ));
                }
            }
            let Some(&open) = stack.last() else {
                p.skip_ws();
                let line_ends = match newline_ends {
                    true => p.peek() == Some(b'\n'),
                    false => p.i == raw.len(),
                };
                if !line_ends {
                    return Err(ParseProblem::Malformed); // "Extra data"
                }
                // Outside strings only ASCII is grammatical; inside, any byte >= 0x80
                // passed the scan. One vectorised pass over the line (hot in cache)
                // makes a line that parses valid UTF-8; the callers report a failed
                // line's UTF-8 first, as the reference does.
                if simdutf8::basic::from_utf8(raw.get(..p.i).unwrap_or_default()).is_err() {
                    return Err(ParseProblem::Malformed);
                }
                let parsed = Parsed {
                    top: kind,
                    members,
                    inner,
                    lone_surrogate_seen: p.lone_seen,
                };
                return Ok((parsed, p.i));
            };
            p.skip_ws();
            match (open, p.peek()) {
                (_, Some(b',')) => {
                    p.i += 1;
                    p.skip_ws();
                    if open == b'{' {
                        let k = p.member_key(sink)?;
                        place.key_read(stack.len(), k, p.i);
                    }
                    continue 'value;
                }
                (b'[', Some(b']')) => kind = Kind::Array,
                (b'{', Some(b'}')) => kind = Kind::Object,
                _ => return Err(ParseProblem::Malformed),
            }
            p.i += 1;
            stack.pop();
            sink.close();
        }
    }
}

/// [`parse`] in strict mode, for the tests of this folder.
#[cfg(test)]
pub(super) fn strict(raw: &[u8]) -> Result<Parsed, ParseProblem> {
    parse(raw, Mode::Strict)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::strings::decode_string;

    // The depth scan's and the number scanner's verdicts, as the grammar reports them.
    #[test]
    fn depth_counts_brackets_outside_strings() {
        let deep = |n: usize| {
            let mut v = "[".repeat(n).into_bytes();
            v.extend(std::iter::repeat_n(b']', n));
            v
        };
        assert_eq!(classify(&deep(512)), Verdict::Whole);
        assert_eq!(classify(&deep(513)), Verdict::TooDeep);
        // Cut short: still too deep, never torn.
        assert_eq!(classify(&deep(513)[..600]), Verdict::TooDeep);
        // Brackets inside a string do not count.
        let mut s = b"[\"".to_vec();
        s.extend(std::iter::repeat_n(b'[', 1000));
        s.extend_from_slice(b"\"]");
        assert_eq!(classify(&s), Verdict::Whole);
        // An escaped quote does not end the string.
        let mut s = b"[\"\\\"".to_vec();
        s.extend(std::iter::repeat_n(b'[', 1000));
        assert_eq!(classify(&s), Verdict::Torn);
        // Closing brackets first make the depth negative, then opens count from there.
        let mut s = b"]]".to_vec();
        s.extend(std::iter::repeat_n(b'[', 514));
        assert_eq!(classify(&s), Verdict::Torn);
        let mut s = b"]".to_vec();
        s.extend(std::iter::repeat_n(b'[', 514));
        assert_eq!(classify(&s), Verdict::TooDeep);
        // Invalid UTF-8 is checked before depth.
        let mut s = deep(600);
        s.push(0xff);
        assert_eq!(classify(&s), Verdict::Torn);
    }

    #[test]
    fn strict_number_limits() {
        assert_eq!(strict(b"1e400"), Err(ParseProblem::NumberTooLarge));
        assert_eq!(strict(b"-1e400"), Err(ParseProblem::NumberTooLarge));
        assert!(strict(b"1e308").is_ok());
        assert!(strict(b"1e-400").is_ok());
        // Integers of any length are read exactly.
        let big = format!("[-{}]", "9".repeat(10_000));
        assert!(strict(big.as_bytes()).is_ok());
        let big = format!("[{}e-4000]", "9".repeat(4301));
        assert!(strict(big.as_bytes()).is_ok());
        let big = format!("[{}.0]", "9".repeat(400));
        assert_eq!(strict(big.as_bytes()), Err(ParseProblem::NumberTooLarge));
        // First problem from the left wins.
        assert_eq!(strict(b"[1e999, x]"), Err(ParseProblem::NumberTooLarge));
        assert_eq!(strict(b"[x, 1e999]"), Err(ParseProblem::Malformed));
        assert_eq!(strict(b"[NaN]"), Err(ParseProblem::Malformed));
        assert_eq!(strict(b"[-Infinity, 1e999]"), Err(ParseProblem::Malformed));
        assert_eq!(strict(b"[-Inf]"), Err(ParseProblem::Malformed));
        // A backtracked exponent: the float before it is still converted first.
        assert_eq!(strict(b"[1.0e999e]"), Err(ParseProblem::NumberTooLarge));
        assert_eq!(strict(b"[9e999.]"), Err(ParseProblem::NumberTooLarge));
    }

    #[test]
    fn grammar_accepts_and_refuses() {
        for ok in [
            &b"{}"[..],
            b" [ ] ",
            b"\t{\"a\" : [1, -0, 0.5e-3, 1E+2, true, false, null, \"\\u00e9\\/\"]}\r\n",
            b"\"\\ud800\"",
            b"\"\\uDBFF\\uDFFF\"",
            b"1e400",
            b"-0",
            "\"caf\u{e9} \u{1F600}\"".as_bytes(),
            b"\"\x7f\"",
        ] {
            assert_eq!(
                classify(ok),
                Verdict::Whole,
                "{:?}",
                String::from_utf8_lossy(ok)
            );
        }
        for bad in [
            &b""[..],
            b"   ",
            b"{",
            b"{\"a\":1,}",
            b"[1,]",
            b"[1 2]",
            b"01",
            b"1.",
            b".5",
            b"1e",
            b"1e+",
            b"-",
            b"+1",
            b"NaN",
            b"-Infinity",
            b"Infinity",
            b"nul",
            b"nulll",
            b"\"a\tb\"",
            b"\"\\x\"",
            b"\"\\u12G4\"",
            b"\"abc",
            b"\"abc\\",
            b"{} {}",
            b"{'a':1}",
            b"\xef\xbb\xbf{}",
            b"\xff",
            b"[1]\x00",
        ] {
            assert_eq!(
                classify(bad),
                Verdict::Torn,
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn utf8_inside_strings_matches_std() {
        // Every 1-4 byte sequence starting with a byte >= 0x80, against std.
        let mut buf = Vec::new();
        for b0 in 0x80u8..=0xFF {
            for b1 in [0x00u8, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xFF] {
                for b2 in [0x80u8, 0xBF, 0x41] {
                    for b3 in [0x80u8, 0xBF, 0x41] {
                        for len in 1..=4 {
                            buf.clear();
                            buf.push(b'"');
                            buf.extend_from_slice(&[b0, b1, b2, b3][..len]);
                            buf.push(b'"');
                            let std_ok = std::str::from_utf8(&buf).is_ok();
                            assert_eq!(parse(&buf, Mode::Strict).is_ok(), std_ok, "{buf:x?}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn utf8_split_across_blocks_matches_std_at_every_width() {
        // A multi-byte character (whole, cut short, or with a bad continuation)
        // at every offset against 16- and 32-byte blocks, inside a string with
        // escapes around it: the verdict is std's at every width.
        let chars: [&[u8]; 9] = [
            "é".as_bytes(),
            "日".as_bytes(),
            "😀".as_bytes(),
            b"\xe6\x97",
            b"\xf0\x9f\x98",
            b"\xc3\x28",
            b"\xed\xa0\x80",
            b"\xf4\x90\x80\x80",
            b"\xc0\xaf",
        ];
        for ch in chars {
            for before in 0..70usize {
                for after in [0usize, 1, 5, 40] {
                    let mut line = b"[\"".to_vec();
                    line.extend(std::iter::repeat_n(b'a', before));
                    if before % 3 == 0 {
                        line.extend_from_slice(b"\\n");
                    }
                    line.extend_from_slice(ch);
                    line.extend(std::iter::repeat_n(b'z', after));
                    line.extend_from_slice(b"\\\"\"]");
                    let want = std::str::from_utf8(&line).is_ok();
                    for w in Width::all_supported() {
                        assert_eq!(
                            parse_using(&line, Mode::Strict, w).is_ok(),
                            want,
                            "{w:?} {line:x?}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn members_and_decoding() {
        let p = strict(b" {\"a\\u0062\" : [1,{\"x\":2}] , \"v\":1, \"a\":\"s\"} ").unwrap();
        assert_eq!(p.top, Kind::Object);
        assert_eq!(p.members.len(), 3);
        let raw = b" {\"a\\u0062\" : [1,{\"x\":2}] , \"v\":1, \"a\":\"s\"} ";
        let m = &p.members[0];
        assert_eq!(decode_string(&raw[m.key.0..m.key.1]), b"ab");
        assert_eq!(m.kind, Kind::Array);
        assert_eq!(&raw[m.value.0..m.value.1], b"[1,{\"x\":2}]");
        assert_eq!(&raw[p.members[1].value.0..p.members[1].value.1], b"1");
        let p = strict(b"{\"a\":{\"x\":[{\"y\":1}],\"z\":{}},\"b\":[{\"q\":1}],\"c\":{\"w\":2}}")
            .unwrap();
        let inner: Vec<(usize, Span)> =
            p.inner.iter().map(|(i, m)| (i.to_owned(), m.key)).collect();
        assert_eq!(inner, vec![(0, (7, 8)), (0, (21, 22)), (2, (48, 49))]);
    }
}
