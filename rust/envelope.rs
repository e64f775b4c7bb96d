//! One line as an envelope, under the strict reading contract (the reference's
//! `decode_json`, `check_envelope` and `parse_envelope` in `_pure/lines.py`).
//!
//! The order of the checks is part of the contract, since it decides which reason a
//! line gets: UTF-8, nesting depth, one left-to-right parse (grammar and number
//! problems, first wins), lone surrogate escapes, then the envelope's shape.

use std::collections::HashMap;

use crate::error::FailureKind;
use crate::json_grammar::{
    decode_string, lone_surrogate_survives, nesting_depth_exceeds, parse, Kind, Member, Mode,
    ParseProblem, Parsed, Span, MAX_READ_DEPTH,
};

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

/// The reference's `decode_json`: the parse of a non-blank line, or why not.
/// `line_offset` is the line's byte offset in the file (for the UTF-8 reason).
pub fn decode_json(raw: &[u8], line_offset: u64) -> Result<Parsed, LineProblem> {
    if let Err(e) = std::str::from_utf8(raw) {
        let at = line_offset.saturating_add(e.valid_up_to() as u64);
        return Err(LineProblem::corrupt(format!("invalid UTF-8 at byte {at}")));
    }
    if nesting_depth_exceeds(raw) {
        return Err(LineProblem::corrupt(too_deep_reason()));
    }
    let parsed = parse(raw, Mode::Strict).map_err(|p| match p {
        ParseProblem::Malformed => {
            LineProblem::corrupt("not a JSON value (malformed or cut short)")
        }
        ParseProblem::NumberTooLarge => LineProblem::corrupt("a number too large to represent"),
    })?;
    if parsed.lone_surrogate_seen && lone_surrogate_survives(raw) {
        return Err(LineProblem::corrupt(
            "a string holds a lone UTF-16 surrogate escape",
        ));
    }
    Ok(parsed)
}

/// The reference's `check_envelope`, on a line `decode_json` accepted.
pub fn check_envelope(raw: &[u8], parsed: &Parsed) -> Result<Envelope, LineProblem> {
    if parsed.top != Kind::Object {
        return Err(LineProblem::corrupt(format!(
            "not an envelope: a JSON {}, not an object",
            parsed.top.type_name()
        )));
    }
    // The dict Python builds: one entry per distinct key, the last value wins.
    // Surviving keys hold no lone surrogate (decode_json refused those), so they
    // are valid UTF-8.
    let mut by_key: HashMap<String, &Member> = HashMap::with_capacity(parsed.members.len());
    for m in &parsed.members {
        let key = decode_string(slice(raw, m.key));
        let key = String::from_utf8(key)
            .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
        by_key.insert(key, m);
    }
    if let Some(v) = by_key.get("v") {
        // `type(v) is int and v == 1`: JSON has one way to write that integer.
        if !(v.kind == Kind::Number && slice(raw, v.value) == b"1") {
            return Err(LineProblem {
                kind: FailureKind::Version,
                reason: format!(
                    "envelope version is not the integer 1 (v is a JSON {}); \
                     this version reads v=1 only",
                    v.kind.type_name()
                ),
            });
        }
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
            .map(String::as_str)
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
    let string_of = |m: &Member| {
        let bytes = decode_string(slice(raw, (m.value.0 + 1, m.value.1.saturating_sub(1))));
        String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into())
    };
    let id = match member("id") {
        // An empty string is the only one whose token is two bytes long.
        Some(m) if m.kind == Kind::String && m.value.1 - m.value.0 > 2 => string_of(m),
        _ => {
            return Err(LineProblem::corrupt(
                "not an envelope: id is not a non-empty string",
            ))
        }
    };
    let payload = match member("payload") {
        Some(m) if m.kind == Kind::Object => m.value,
        _ => {
            return Err(LineProblem::corrupt(
                "not an envelope: payload is not an object",
            ))
        }
    };
    let ts = match member("ts") {
        Some(m) if m.kind == Kind::String => string_of(m),
        _ => return Err(LineProblem::corrupt("not an envelope: ts is not a string")),
    };
    let type_ = match member("type") {
        Some(m) if m.kind == Kind::String => string_of(m),
        _ => {
            return Err(LineProblem::corrupt(
                "not an envelope: type is not a string",
            ))
        }
    };
    Ok(Envelope {
        id,
        type_,
        ts,
        payload,
    })
}

/// The reference's `parse_envelope`.
pub fn parse_envelope(raw: &[u8], line_offset: u64) -> Result<Envelope, LineProblem> {
    let parsed = decode_json(raw, line_offset)?;
    check_envelope(raw, &parsed)
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
