//! The shapes the JSON reader hands out: verdicts, problems, kinds, spans and what a
//! parse learned. A leaf: every other file of `json/` may use it, and it uses none of
//! them, so the reader's files refer only downward (grammar -> numbers, strings, view,
//! buffers -> shapes).

/// The tail check's verdict on one non-blank line (the reference's `classify`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    Whole,
    Torn,
    TooDeep,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Whole => "whole",
            Verdict::Torn => "torn",
            Verdict::TooDeep => "too-deep",
        }
    }
}

/// Why a parse stopped; the first problem from the left wins, as in CPython, which
/// converts each number the moment it has scanned it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParseProblem {
    /// `json.JSONDecodeError`: malformed or cut short.
    Malformed,
    /// A float literal that overflows to ±inf (strict mode only).
    NumberTooLarge,
    /// Nested deeper than `depth::MAX_READ_DEPTH` by the
    /// reference's token scan; wins over the other two wherever it stands.
    TooDeep,
}

/// The JSON type of a value, named as the reference's `_type_name` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Null,
    Bool,
    Number,
    String,
    Array,
    Object,
}

impl Kind {
    pub fn type_name(self) -> &'static str {
        match self {
            Kind::Null => "null",
            Kind::Bool => "boolean",
            Kind::Number => "number",
            Kind::String => "string",
            Kind::Array => "array",
            Kind::Object => "object",
        }
    }
}

/// A half-open byte range `[start, end)` of the line.
pub type Span = (usize, usize);

/// One member of the top-level object, in file order (duplicates included).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    /// The key's bytes between its quotes, escapes still escaped.
    pub key: Span,
    pub kind: Kind,
    /// The value's whole token (quotes and brackets included).
    pub value: Span,
}

/// What a successful parse learned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Parsed {
    pub top: Kind,
    /// The top-level object's members (strict mode only; empty otherwise).
    pub members: Vec<Member>,
    /// The members of objects that are values of top-level members, each with the
    /// index in `members` of the member it belongs to (strict mode only). The
    /// replay reads the payload's fields from here instead of walking it again.
    pub inner: Vec<(usize, Member)>,
    /// Some string, anywhere, holds a lone surrogate escape (strict mode only). It
    /// may still vanish from the value: a duplicate key's earlier value is dropped.
    pub lone_surrogate_seen: bool,
}

/// How strictly to read numbers and constants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `classify`: grammar only (the reference stubs `parse_int`/`parse_float`).
    Grammar,
    /// `decode_json`: a float literal must fit Python's float.
    Strict,
}
