//! One line as the fold sees it: validated like the reference's `parse_envelope`,
//! then reduced to the few payload facts `FoldState.check`/`apply` look at.
//!
//! Nothing here builds a Python object or copies a payload: a record holds the
//! line's place in the file, its id, and spans (relative to the line) of what the
//! materialisation will need if the value survives the fold.

use std::borrow::Cow;

use crate::envelope::{
    chars, parse_envelope_fields, parse_envelope_fields_at_start, EnvelopeRef, LineProblem,
};
use crate::index::times::time_key;
use crate::json::grammar::{Kind, Span};
use crate::json::view::{self as json_view, Entry, Item};
use crate::message_rules::{extras_text, is_sticky};
use crate::replay::id::{Id, IdKeys};

/// One envelope line, reduced.
#[derive(Clone, Debug)]
pub struct Record {
    /// 1-based line number (within the range read; the fold adds the offset).
    pub line: u64,
    /// Byte offset of the line's first byte, and its length without the `\n`.
    pub offset: u64,
    pub len: u64,
    pub id: Id,
    /// The id's keyed hash (the replay's [`IdKeys`]), made where the line is read:
    /// the second thread hashes its part of the file itself.
    pub id_hash: u64,
    pub type_: Cow<'static, str>,
    /// Its `ts` as a side index keeps it (`index::times::time_key`).
    pub time: i64,
    /// The payload object's span in the line.
    pub payload: Span,
    pub body: Body,
}

/// A line that is not an envelope: where, and why.
#[derive(Clone, Debug)]
pub struct BadLine {
    pub line: u64,
    pub offset: u64,
    pub len: u64,
    pub problem: LineProblem,
}

/// What `FoldState.check`/`apply` need of a payload, per type. `Err` holds the
/// reason a shape check refuses it (those come before any state check).
#[derive(Clone, Debug)]
pub enum Body {
    Message(Result<MessageFacts, &'static str>),
    Compaction(Result<CompactionFacts, &'static str>),
    Elision(Result<Vec<ElisionItem>, &'static str>),
    Grants(Result<Span, &'static str>),
    Dispatched(Result<Id, &'static str>),
    Settled(Result<SettledFacts, &'static str>),
    RunContext(Vec<Section>),
    /// `to-id`: `None` for null (the README's rewind section: nothing live is left).
    Rewind(Result<Option<Id>, &'static str>),
    /// `session-meta` and every type the fold leaves alone.
    Other,
}

#[derive(Clone, Debug)]
pub struct MessageFacts {
    /// The role (a side index keeps each message's kind: its type and role).
    pub role: Id,
    /// `tool_call_id`, when it is a string.
    pub tool_call_id: Option<Id>,
    /// `Message.is_sticky`: `sticky is True or sysprompt is True or depth is not None`.
    pub sticky: bool,
    /// Its extras as one JSON object's text (`message_rules::extras_text`); None: none.
    pub extras: Option<Box<[u8]>>,
}

#[derive(Clone, Debug)]
pub struct CompactionFacts {
    pub through: Id,
    /// The summary string's token.
    pub summary: Span,
}

/// One elision item: `None` when it is not an object with a string id and a stub
/// (checked in order, after the items before it resolved).
pub type ElisionItem = Option<(Id, Span)>;

#[derive(Clone, Debug)]
pub struct SettledFacts {
    pub op_id: Id,
    /// Its outcome is `failed` (a side index keeps which operations failed).
    pub failed: bool,
    /// Why `artifact` is refused, checked after the operation is known pending.
    pub artifact_problem: Option<String>,
}

/// A run-context section that carries its text.
#[derive(Clone, Debug)]
pub struct Section {
    pub digest: String,
    /// The text string's token.
    pub text: Span,
}

const OUTCOMES: [&str; 3] = ["completed", "failed", "outcome-unknown"];
const NAME_MAX: usize = 255;

thread_local! {
    static FIELDS: std::cell::Cell<Vec<Entry>> = const { std::cell::Cell::new(Vec::new()) };
}

const KNOWN_TYPES: [&str; 9] = [
    "session-meta",
    "rewind",
    "message",
    "grants",
    "compaction",
    "elision",
    "tool-dispatched",
    "tool-settled",
    "run-context",
];

/// The type, without an allocation for the types this version knows.
fn known_type(type_: Cow<'_, str>) -> Cow<'static, str> {
    match KNOWN_TYPES.iter().find(|k| **k == type_) {
        Some(k) => Cow::Borrowed(k),
        None => Cow::Owned(type_.into_owned()),
    }
}

/// Validate one non-blank line and reduce it to a record, its id hashed with `keys`.
pub fn record_of(raw: &[u8], line: u64, offset: u64, keys: &IdKeys) -> Result<Record, BadLine> {
    with_fields(|fields| {
        let env = parse_envelope_fields(raw, offset, fields);
        reduced(raw, line, offset, keys, fields, env)
    })
}

/// [`record_of`] of the line at the start of `buf`, without a search for its end
/// first, and the line's length; None where the caller must cut the line and call
/// [`record_of`] (see `envelope::parse_envelope_fields_at_start`).
pub fn record_at_start(
    buf: &[u8],
    line: u64,
    offset: u64,
    keys: &IdKeys,
) -> Option<(Result<Record, BadLine>, usize)> {
    with_fields(|fields| {
        let (env, len) = parse_envelope_fields_at_start(buf, fields)?;
        let raw = buf.get(..len)?;
        Some((reduced(raw, line, offset, keys, fields, env), len))
    })
}

/// `f` with this thread's reused payload-fields buffer (one allocation per line fewer).
fn with_fields<T>(f: impl FnOnce(&mut Vec<Entry>) -> T) -> T {
    FIELDS.with(|cell| {
        let mut fields = cell.take();
        let result = f(&mut fields);
        cell.set(fields);
        result
    })
}

/// The record of the line `raw` from its envelope, or why it is not one.
fn reduced(
    raw: &[u8],
    line: u64,
    offset: u64,
    keys: &IdKeys,
    fields: &[Entry],
    env: Result<EnvelopeRef<'_>, LineProblem>,
) -> Result<Record, BadLine> {
    match env {
        Ok(env) => Ok(Record {
            line,
            offset,
            len: raw.len() as u64,
            id: Id::from(env.id.as_ref()),
            id_hash: keys.hash(&env.id),
            time: time_key(&env.ts),
            body: body_of(raw, &env.type_, fields),
            type_: known_type(env.type_),
            payload: env.payload,
        }),
        Err(problem) => Err(BadLine {
            line,
            offset,
            len: raw.len() as u64,
            problem,
        }),
    }
}

pub fn body_of(raw: &[u8], type_: &str, entries: &[Entry]) -> Body {
    let get = |key: &str| json_view::get(raw, entries, key);
    let text = |item: Option<Item>| item.and_then(|i| json_view::text(raw, i)).map(id_of);
    match type_ {
        "message" => Body::Message(match get("role") {
            Some(role) if role.kind == Kind::String => {
                let role = json_view::text(raw, role).map(id_of).unwrap_or_default();
                Ok(MessageFacts {
                    // Only a `tool` message answers a call (docs/FORMAT.md, `tool-dispatched`): a `tool_call_id` on any
                    // other role never turns a dispatched operation into `result-recorded`.
                    tool_call_id: if role.as_str() == "tool" {
                        text(get("tool_call_id"))
                    } else {
                        None
                    },
                    role,
                    sticky: is_sticky(raw, entries),
                    extras: extras_text(raw, entries),
                })
            }
            _ => Err("message payload has no string role"),
        }),
        "grants" => Body::Grants(match get("grants") {
            Some(g) if g.kind == Kind::Object => Ok(g.span),
            _ => Err("grants payload has no object under grants"),
        }),
        "compaction" => {
            Body::Compaction(compaction(raw, get("summary"), get("replaces-through-id")))
        }
        "elision" => Body::Elision(elision(raw, get("items"))),
        "tool-dispatched" => Body::Dispatched(match (text(get("call-id")), get("tool")) {
            (None, _) => Err("tool-dispatched has no string call-id"),
            (Some(_), t) if t.map(|t| t.kind) != Some(Kind::String) => {
                Err("tool-dispatched has no string tool")
            }
            (Some(call_id), _) => Ok(call_id),
        }),
        "tool-settled" => Body::Settled(settled(raw, entries)),
        "run-context" => Body::RunContext(sections(raw, get("sections"))),
        "rewind" => Body::Rewind(match get("to-id") {
            None => Err("rewind has no to-id"),
            Some(to) if to.kind == Kind::Null => Ok(None),
            Some(to) => json_view::text(raw, to)
                .map(|t| Some(id_of(t)))
                .ok_or("rewind to-id is neither a string nor null"),
        }),
        _ => Body::Other,
    }
}

fn compaction(
    raw: &[u8],
    summary: Option<Item>,
    through: Option<Item>,
) -> Result<CompactionFacts, &'static str> {
    let summary = match summary {
        Some(s) if s.kind == Kind::String => s.span,
        _ => return Err("compaction has no string summary"),
    };
    match through.and_then(|t| json_view::text(raw, t)) {
        Some(through) => Ok(CompactionFacts {
            through: id_of(through),
            summary,
        }),
        None => Err("compaction has no string replaces-through-id"),
    }
}

fn elision(raw: &[u8], items: Option<Item>) -> Result<Vec<ElisionItem>, &'static str> {
    let items = match items {
        Some(i) if i.kind == Kind::Array => json_view::element_members(raw, i).unwrap_or_default(),
        _ => return Err("elision has no items list"),
    };
    Ok(items
        .into_iter()
        .map(|entries| {
            let entries = entries?;
            let id = json_view::get(raw, &entries, "id").and_then(|i| json_view::text(raw, i))?;
            let stub = json_view::get(raw, &entries, "stub")?;
            Some((id_of(id), stub.span))
        })
        .collect())
}

fn settled(raw: &[u8], entries: &[Entry]) -> Result<SettledFacts, &'static str> {
    let get = |key: &str| json_view::get(raw, entries, key);
    let op_id = get("op-id")
        .and_then(|i| json_view::text(raw, i))
        .ok_or("tool-settled has no string op-id")?;
    let outcome = get("outcome").and_then(|i| json_view::text(raw, i));
    let failed = outcome.as_deref() == Some("failed");
    if !outcome.is_some_and(|o| OUTCOMES.contains(&o.as_ref())) {
        return Err("tool-settled outcome is not completed, failed or outcome-unknown");
    }
    let artifact_problem = match get("artifact") {
        None => None,
        Some(a) if a.kind == Kind::Null => None,
        Some(a) if a.kind != Kind::Object => {
            Some("tool-settled artifact is not an object".to_owned())
        }
        Some(a) => {
            let fields = json_view::members(raw, a).unwrap_or_default();
            let file = json_view::get(raw, &fields, "file");
            artifact_name_problem(file.and_then(|f| json_view::text(raw, f)).as_deref())
        }
    };
    Ok(SettledFacts {
        op_id: id_of(op_id),
        failed,
        artifact_problem,
    })
}

/// The reference's `artifact_name_problem` (`None`: the file is not a string).
pub fn artifact_name_problem(name: Option<&str>) -> Option<String> {
    let Some(name) = name else {
        return Some("artifact file is not a string".to_owned());
    };
    if matches!(name, "" | "." | "..") {
        return Some(format!("artifact file '{name}' is not a file name"));
    }
    if name.contains(['/', '\\', '\0']) {
        return Some("artifact file is a path, not a plain basename".to_owned());
    }
    if name.len() > NAME_MAX {
        return Some(format!(
            "artifact file name is longer than {NAME_MAX} bytes"
        ));
    }
    None
}

fn sections(raw: &[u8], sections: Option<Item>) -> Vec<Section> {
    let Some(list) = sections.filter(|s| s.kind == Kind::Array) else {
        return Vec::new();
    };
    json_view::element_members(raw, list)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|fields| {
            let fields = fields?;
            let digest =
                json_view::get(raw, &fields, "digest").and_then(|d| json_view::text(raw, d))?;
            let text = json_view::get(raw, &fields, "text").filter(|t| t.kind == Kind::String)?;
            Some(Section {
                digest: digest.into_owned(),
                text: text.span,
            })
        })
        .collect()
}

/// An id or reference as the fold keeps it (inline when short: no allocation).
fn id_of(text: Cow<'_, str>) -> Id {
    Id::from(text.as_ref())
}

/// `s[:n]` of an id or reference, as the reference's reasons show it.
pub fn shown(s: &str, n: usize) -> String {
    chars(s, n)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines the parse at a line's start must settle exactly as a cut line is
    /// settled, or leave to it (None): whitespace that holds a `\n`, a raw `\n` in a
    /// string, trailing spaces and CRs, blank lines, envelope errors, lone
    /// surrogates, too deep, not UTF-8, and a last line without its `\n`.
    #[test]
    fn a_line_parsed_where_it_starts_is_the_line_cut_at_its_newline() {
        let good = r#"{"id":"a","payload":{"role":"user","content":"hi"},"ts":"t","type":"message","v":1}"#;
        let lines: Vec<Vec<u8>> = [
            good.to_string(),
            format!("{good}   \r\t"),
            format!("  {good}"),
            good.replace(r#""v":1"#, "\"v\":\n1"),
            good.replace("hi", "h\ni"),
            good.replace(r#""v":1"#, r#""v":2"#),
            good.replace(r#""id":"a""#, r#""id":"""#),
            good.replace("hi", r"\ud800"),
            good.replace("hi", r"\ud83d\ude00"),
            format!("{good}x"),
            format!("{good}{good}"),
            "   ".into(),
            "".into(),
            "[".repeat(300),
            good.replace(r#""type":"message""#, r#""type":"tool-settled""#),
            good.replace(r#"{"role""#, r#"{"xs":[1,2.5e3,true,null,{"a":[]}],"role""#),
        ]
        .into_iter()
        .map(String::into_bytes)
        .chain([good.replace("hi", "h\u{e9}").into_bytes(), {
            let mut bad = good.as_bytes().to_vec();
            bad[50] = 0xff;
            bad
        }])
        .collect();
        let keys = IdKeys::new();
        let mut fast = 0;
        for (i, first) in lines.iter().enumerate() {
            for next in &lines {
                for end in [&b"\n"[..], b""] {
                    let mut buf = first.clone();
                    buf.extend_from_slice(end);
                    buf.extend_from_slice(next);
                    let cut = memchr::memchr(b'\n', &buf).unwrap_or(buf.len());
                    let want = format!("{:?}", record_of(&buf[..cut], 1, 0, &keys));
                    if let Some((got, len)) = record_at_start(&buf, 1, 0, &keys) {
                        assert_eq!(len, cut, "line {i}");
                        assert_eq!(buf.get(len), Some(&b'\n'), "line {i}");
                        assert_eq!(format!("{got:?}"), want, "line {i}");
                        fast += 1;
                    }
                }
            }
        }
        // Nine lines are settled where they start when a `\n` follows them, whatever
        // comes next: the valid ones (plain, trailing or leading whitespace,
        // tool-settled, nested values, non-ASCII, a surrogate pair) and the two whose
        // envelope is refused (v 2, an empty id).
        assert_eq!(fast, 9 * lines.len());
    }
}
