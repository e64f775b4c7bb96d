//! One line as an envelope, under the strict reading contract (the reference's
//! `decode_json`, `check_envelope` and `parse_envelope` in `_pure/lines.py`).
//!
//! The order of the checks is part of the contract, since it decides which reason a
//! line gets: UTF-8, nesting depth, one left-to-right parse (grammar and number
//! problems, first wins), lone surrogate escapes, then the envelope's shape.

use std::borrow::Cow;
use std::collections::HashMap;

use crate::error::FailureKind;
use crate::json::buffers::recycle;
use crate::json::depth::MAX_READ_DEPTH;
use crate::json::grammar::{
    parse, parse_line_at_start, Kind, Member, Mode, ParseProblem, Parsed, Span,
};
use crate::json::strings::decode_str;
use crate::json::surrogates::lone_surrogate_survives;
use crate::json::view::{Entry, Item};

/// Why a line is not an envelope (the reference's `LineProblem`); `kind` is
/// `Corrupt` or `Version`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineProblem {
    pub kind: FailureKind,
    pub reason: String,
}

impl LineProblem {
    fn corrupt(reason: impl Into<String>) -> Self {
        LineProblem {
            kind: FailureKind::Corrupt,
            reason: reason.into(),
        }
    }
}

/// A valid envelope: its `id`, `type` and `ts`, and where its payload object lies
/// in the line (`v` is always the integer 1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Envelope {
    pub id: String,
    pub type_: String,
    pub ts: String,
    pub payload: Span,
}

pub fn too_deep_reason() -> String {
    format!("nested deeper than {MAX_READ_DEPTH} levels")
}

/// The keys every envelope has, sorted.
const ENVELOPE_KEYS: [&str; 5] = ["id", "payload", "ts", "type", "v"];

/// Why a line holding zero bytes is refused: a power loss (or OS crash) leaves the
/// pages the OS had not written as zeros, which no writer of JSON produces.
pub const POWER_LOSS_LINE: &str =
    "not a JSON value: it holds zero bytes, the mark of a probable power \
     loss (data the OS had not yet written to disk)";

/// The same, added to another reason for a line that also holds zero bytes.
pub const POWER_LOSS_TOO: &str = ", and it holds zero bytes, the mark of a probable power loss \
     (data the OS had not yet written to disk)";

/// The reference's `decode_json`: the parse of a non-blank line, or why not.
/// `line_offset` is the line's byte offset in the file (for the UTF-8 reason).
pub fn decode_json(raw: &[u8], line_offset: u64) -> Result<Parsed, LineProblem> {
    // The reference checks UTF-8 first; the parser validates it inside strings (a
    // line that parses is valid UTF-8), so only a failed parse needs the check.
    let parsed = parse(raw, Mode::Strict).map_err(|p| {
        if let Err(e) = std::str::from_utf8(raw) {
            let at = line_offset.saturating_add(e.valid_up_to() as u64);
            if memchr::memchr(0, raw).is_some() {
                return LineProblem::corrupt(format!("invalid UTF-8 at byte {at}{POWER_LOSS_TOO}"));
            }
            return LineProblem::corrupt(format!("invalid UTF-8 at byte {at}"));
        }
        match p {
            ParseProblem::TooDeep => LineProblem::corrupt(too_deep_reason()),
            ParseProblem::Malformed if memchr::memchr(0, raw).is_some() => {
                LineProblem::corrupt(POWER_LOSS_LINE)
            }
            ParseProblem::Malformed => {
                LineProblem::corrupt("not a JSON value (malformed or cut short)")
            }
            ParseProblem::NumberTooLarge => LineProblem::corrupt("a number too large to represent"),
        }
    })?;
    if parsed.lone_surrogate_seen && lone_surrogate_survives(raw) {
        return Err(LineProblem::corrupt(
            "a string holds a lone UTF-16 surrogate escape",
        ));
    }
    Ok(parsed)
}

/// A valid envelope borrowed from its line: strings without escapes are not copied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EnvelopeRef<'a> {
    pub id: Cow<'a, str>,
    pub type_: Cow<'a, str>,
    pub ts: Cow<'a, str>,
    pub payload: Span,
}

impl EnvelopeRef<'_> {
    pub fn into_owned(self) -> Envelope {
        Envelope {
            id: self.id.into_owned(),
            type_: self.type_.into_owned(),
            ts: self.ts.into_owned(),
            payload: self.payload,
        }
    }
}

/// The reference's `check_envelope`, on a line `decode_json` accepted.
pub fn check_envelope(raw: &[u8], parsed: &Parsed) -> Result<Envelope, LineProblem> {
    check_envelope_ref(raw, parsed).map(EnvelopeRef::into_owned)
}

/// [`check_envelope`] without copying what it need not copy.
pub fn check_envelope_ref<'a>(
    raw: &'a [u8],
    parsed: &Parsed,
) -> Result<EnvelopeRef<'a>, LineProblem> {
    if parsed.top != Kind::Object {
        return Err(LineProblem::corrupt(format!(
            "not an envelope: a JSON {}, not an object",
            parsed.top.type_name()
        )));
    }
    // The dict Python builds holds one entry per distinct key, the last value
    // winning. Almost every line has exactly the five keys: find their last
    // members without allocating; anything else takes the general path.
    let mut slots: [Option<&Member>; 5] = [None; 5];
    for m in &parsed.members {
        let key = decode_str(raw, m.key);
        match ENVELOPE_KEYS.iter().position(|k| *k == key) {
            Some(at) => slots[at] = Some(m),
            None => return check_envelope_general(raw, parsed),
        }
    }
    let [id, payload, ts, type_, v] = slots;
    if let Some(v) = v {
        check_version(raw, v)?;
    }
    if slots.iter().any(Option::is_none) {
        let missing: Vec<&str> = ENVELOPE_KEYS
            .iter()
            .zip(slots.iter())
            .filter(|(_, m)| m.is_none())
            .map(|(k, _)| *k)
            .collect();
        return Err(LineProblem::corrupt(format!(
            "not an envelope: missing {}",
            missing.join(", ")
        )));
    }
    envelope_fields(raw, id, payload, ts, type_)
}

fn check_version(raw: &[u8], v: &Member) -> Result<(), LineProblem> {
    // `type(v) is int and v == 1`: JSON has one way to write that integer.
    if v.kind == Kind::Number && slice(raw, v.value) == b"1" {
        return Ok(());
    }
    Err(LineProblem {
        kind: FailureKind::Version,
        reason: format!(
            "envelope version is not the integer 1 (v is a JSON {}); \
             this version reads v=1 only",
            v.kind.type_name()
        ),
    })
}

/// The checks after the key set, in the reference's order: id, payload, ts, type.
fn envelope_fields<'a>(
    raw: &'a [u8],
    id: Option<&Member>,
    payload: Option<&Member>,
    ts: Option<&Member>,
    type_: Option<&Member>,
) -> Result<EnvelopeRef<'a>, LineProblem> {
    let string_of = |m: &Member| decode_str(raw, (m.value.0 + 1, m.value.1.saturating_sub(1)));
    let id = match id {
        // An empty string is the only one whose token is two bytes long.
        Some(m) if m.kind == Kind::String && m.value.1 - m.value.0 > 2 => string_of(m),
        _ => {
            return Err(LineProblem::corrupt(
                "not an envelope: id is not a non-empty string",
            ))
        }
    };
    let payload = match payload {
        Some(m) if m.kind == Kind::Object => m.value,
        _ => {
            return Err(LineProblem::corrupt(
                "not an envelope: payload is not an object",
            ))
        }
    };
    let ts = match ts {
        Some(m) if m.kind == Kind::String => string_of(m),
        _ => return Err(LineProblem::corrupt("not an envelope: ts is not a string")),
    };
    let type_ = match type_ {
        Some(m) if m.kind == Kind::String => string_of(m),
        _ => {
            return Err(LineProblem::corrupt(
                "not an envelope: type is not a string",
            ))
        }
    };
    Ok(EnvelopeRef {
        id,
        type_,
        ts,
        payload,
    })
}

/// A line with some key outside the five: the reference's dict, built for real.
fn check_envelope_general<'a>(
    raw: &'a [u8],
    parsed: &Parsed,
) -> Result<EnvelopeRef<'a>, LineProblem> {
    let mut by_key: HashMap<Cow<'a, str>, &Member> = HashMap::with_capacity(parsed.members.len());
    for m in &parsed.members {
        by_key.insert(decode_str(raw, m.key), m);
    }
    if let Some(v) = by_key.get("v") {
        check_version(raw, v)?;
    }
    let has_all = ENVELOPE_KEYS.iter().all(|k| by_key.contains_key(*k));
    if !has_all || by_key.len() != ENVELOPE_KEYS.len() {
        let missing: Vec<&str> = ENVELOPE_KEYS
            .iter()
            .copied()
            .filter(|k| !by_key.contains_key(*k))
            .collect();
        // Python sorts str by code point, which is UTF-8 byte order.
        let mut extra: Vec<&str> = by_key
            .keys()
            .map(|k| k.as_ref())
            .filter(|k| !ENVELOPE_KEYS.contains(k))
            .collect();
        extra.sort_unstable();
        let mut parts = Vec::new();
        if !missing.is_empty() {
            parts.push(format!("missing {}", missing.join(", ")));
        }
        if !extra.is_empty() {
            let shown: Vec<String> = extra.iter().take(5).map(|k| chars(k, 40)).collect();
            parts.push(format!("unexpected {}", shown.join(", ")));
        }
        return Err(LineProblem::corrupt(format!(
            "not an envelope: {}",
            parts.join("; ")
        )));
    }
    let member = |k: &str| by_key.get(k).copied();
    envelope_fields(
        raw,
        member("id"),
        member("payload"),
        member("ts"),
        member("type"),
    )
}

/// The reference's `parse_envelope`.
pub fn parse_envelope(raw: &[u8], line_offset: u64) -> Result<Envelope, LineProblem> {
    parse_envelope_ref(raw, line_offset).map(EnvelopeRef::into_owned)
}

/// [`parse_envelope`], borrowing from the line.
pub fn parse_envelope_ref(raw: &[u8], line_offset: u64) -> Result<EnvelopeRef<'_>, LineProblem> {
    let parsed = decode_json(raw, line_offset)?;
    check_envelope_ref(raw, &parsed)
}

/// [`parse_envelope_ref`], and the payload's members in file order (duplicates
/// included), written into `fields` (cleared first; a caller reuses it per line).
pub fn parse_envelope_fields<'a>(
    raw: &'a [u8],
    line_offset: u64,
    fields: &mut Vec<Entry>,
) -> Result<EnvelopeRef<'a>, LineProblem> {
    fields.clear();
    let parsed = decode_json(raw, line_offset)?;
    envelope_of(raw, parsed, fields)
}

/// [`parse_envelope_fields`] of the line at the start of `buf`, found without a
/// search for its end ([`parse_line_at_start`]): its verdict and its length, or None
/// where that parse does not settle it (the line is not valid JSON, or a lone
/// surrogate escape needs the second look): the caller then cuts the line and
/// calls [`parse_envelope_fields`], which gives every verdict.
pub fn parse_envelope_fields_at_start<'a>(
    buf: &'a [u8],
    fields: &mut Vec<Entry>,
) -> Option<(Result<EnvelopeRef<'a>, LineProblem>, usize)> {
    fields.clear();
    let (parsed, len) = parse_line_at_start(buf)?;
    if parsed.lone_surrogate_seen {
        recycle(parsed);
        return None;
    }
    let line = buf.get(..len)?;
    Some((envelope_of(line, parsed, fields), len))
}

/// The envelope of a parsed line, its payload's members in `fields`.
fn envelope_of<'a>(
    raw: &'a [u8],
    parsed: Parsed,
    fields: &mut Vec<Entry>,
) -> Result<EnvelopeRef<'a>, LineProblem> {
    let env = match check_envelope_ref(raw, &parsed) {
        Ok(env) => env,
        Err(p) => {
            recycle(parsed);
            return Err(p);
        }
    };
    let owner = parsed.members.iter().rposition(|m| m.value == env.payload);
    fields.extend(
        parsed
            .inner
            .iter()
            .filter(|(parent, _)| Some(*parent) == owner)
            .map(|(_, m)| Entry {
                key: m.key,
                value: Item {
                    kind: m.kind,
                    span: m.value,
                },
            }),
    );
    recycle(parsed);
    Ok(env)
}

/// `s[:n]` in Python: the first `n` characters.
pub fn chars(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

fn slice(raw: &[u8], span: Span) -> &[u8] {
    raw.get(span.0..span.1).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(raw: &[u8]) -> String {
        match parse_envelope(raw, 100) {
            Ok(e) => format!("ok {} {} {}", e.id, e.type_, e.ts),
            Err(p) => format!("{} {}", p.kind.as_str(), p.reason),
        }
    }

    #[test]
    fn envelope_verdicts() {
        let good = br#"{"id":"a","payload":{},"ts":"t","type":"message","v":1}"#;
        assert_eq!(reason(good), "ok a message t");
        assert_eq!(
            reason(b"{\"id\":\"a\xff\"}"),
            "corrupt invalid UTF-8 at byte 108"
        );
        assert_eq!(
            reason(b"[1,2]"),
            "corrupt not an envelope: a JSON array, not an object"
        );
        assert_eq!(
            reason(b"{\"v\":1.0}"),
            "version envelope version is not the integer 1 (v is a JSON number); this version reads v=1 only"
        );
        assert_eq!(
            reason(b"{\"v\":true,\"v\":1}"),
            "corrupt not an envelope: missing id, payload, ts, type"
        );
        assert_eq!(
            reason(b"{\"v\":1,\"v\":\"1\"}"),
            "version envelope version is not the integer 1 (v is a JSON string); this version reads v=1 only"
        );
        assert_eq!(
            reason(br#"{"id":"a","payload":{},"ts":"t","type":"m","v":1,"zz":0,"b":1,"\u00e9":2}"#),
            "corrupt not an envelope: unexpected b, zz, \u{e9}"
        );
        assert_eq!(
            reason(br#"{"id":"","payload":{},"ts":"t","type":"m","v":1}"#),
            "corrupt not an envelope: id is not a non-empty string"
        );
        assert_eq!(
            reason(br#"{"id":"\u0000","payload":[],"ts":"t","type":"m","v":1}"#),
            "corrupt not an envelope: payload is not an object"
        );
        assert_eq!(
            reason(br#"{"id":"\ud800","id":"x","payload":{},"ts":"t","type":"m","v":1}"#),
            "ok x m t"
        );
        assert_eq!(
            reason(br#"{"id":"x","payload":{"\udc00":1},"ts":"t","type":"m","v":1}"#),
            "corrupt a string holds a lone UTF-16 surrogate escape"
        );
        assert_eq!(
            reason(br#"{"id":"x","payload":{"a":1e999},"ts":"t","type":"m","v":1"#),
            "corrupt a number too large to represent"
        );
        assert_eq!(
            reason(br#"{"id":"x","payload":{"a":1},"ts":"t","type":"m","v":1"#),
            "corrupt not a JSON value (malformed or cut short)"
        );
        let long = "k".repeat(50);
        let line = format!(r#"{{"{long}":1,"a":1,"b":1,"c":1,"d":1,"e":1,"ts":"","v":1}}"#);
        assert_eq!(
            reason(line.as_bytes()),
            format!("corrupt not an envelope: missing id, payload, type; unexpected a, b, c, d, e")
        );
        let line = format!(r#"{{"{long}":1,"v":1}}"#);
        assert_eq!(
            reason(line.as_bytes()),
            format!(
                "corrupt not an envelope: missing id, payload, ts, type; unexpected {}",
                "k".repeat(40)
            )
        );
    }
}
