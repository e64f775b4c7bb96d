//! Where in an envelope's line the text is: in what was said (`CONTENT`), in tool
//! calls (`ARGUMENTS`), in what tools answered (`RESULTS`) or anywhere else in the
//! payload (`EXTRAS`). The reference is `_pure/search.py::payload_groups`, which
//! reads the value `json.loads` builds; this reads the line once, as the validating
//! parser reports its structure, and keeps per object only what a dict keeps (the
//! last value of a duplicate key).

use std::borrow::Cow;

use crate::json::buffers::recycle;
use crate::json::grammar::{parse_with, Kind, Mode, Sink, Span};
use crate::json::simd::Width;
use crate::json::strings::decode_string;
use crate::json::surrogates::lone_surrogate_survives;
use crate::json::view::key_is;

use super::leaves::Text;
use crate::message_rules::MESSAGE_KEYS;

pub const CONTENT: i8 = 1;
pub const ARGUMENTS: i8 = 2;
pub const RESULTS: i8 = 4;
pub const EXTRAS: i8 = 8;
/// The line is not JSON under the strict reading (`_pure/lines.py::decode_json`).
pub const NOT_JSON: i8 = -1;

/// The groups of the line `line` (without its `\n`) in which `text` is, as bits;
/// `folded` is the line with ASCII letters lowered when the text ignores case,
/// else the line itself. [`NOT_JSON`] for a line the strict reading refuses.
pub fn groups_of_line(line: &[u8], folded: &[u8], text: &Text) -> i8 {
    let mut walk = Walk {
        line,
        folded,
        text,
        frames: Vec::new(),
        members: Vec::new(),
        payload_depth: None,
        closing_payload: None,
        payload: None,
        type_token: None,
    };
    match parse_with(line, Mode::Strict, Width::detect(), &mut walk) {
        Ok(parsed) => {
            let lone = parsed.lone_surrogate_seen;
            recycle(parsed);
            if lone && lone_surrogate_survives(line) {
                return NOT_JSON;
            }
        }
        Err(_) => return NOT_JSON,
    }
    walk.groups()
}

/// What one value is, as far as the groups go.
#[derive(Clone, Copy, Default)]
struct Summary {
    /// The text is in one of its strings or numbers (keys never count).
    any: bool,
    /// An object whose `stub` holds the text (an elision's item).
    own_stub: bool,
    /// An array with such an object among its elements (an elision's `items`).
    stubs: bool,
    array: bool,
    object: bool,
    /// A string: its token.
    string: Option<Span>,
}

#[derive(Clone, Copy)]
struct Member {
    key: Span,
    value: Summary,
}

struct Frame {
    object: bool,
    /// Where this object's members start in `Walk::members`.
    first_member: usize,
    /// An array's elements so far.
    elements: Summary,
}

struct Walk<'a> {
    line: &'a [u8],
    folded: &'a [u8],
    text: &'a Text,
    frames: Vec<Frame>,
    /// The members of the open objects, innermost last.
    members: Vec<Member>,
    /// `frames.len()` while the payload object is open (its frame then the last).
    payload_depth: Option<usize>,
    /// The payload object's members (the last of each key) once it closed.
    closing_payload: Option<Vec<Member>>,
    /// The top-level `payload`, when it is an object (the last one wins).
    payload: Option<Vec<Member>>,
    /// The top-level `type`'s token, when it is a string (the last one wins).
    type_token: Option<Span>,
}

impl Walk<'_> {
    fn in_payload(&self) -> bool {
        self.payload_depth.is_some_and(|d| self.frames.len() >= d)
    }

    /// Whether the current member of the top-level object is `key`.
    fn top_key_is(&self, key: &str) -> bool {
        self.frames.len() == 1
            && self.frames.first().is_some_and(|f| f.object)
            && self
                .members
                .last()
                .is_some_and(|m| key_is(self.line, m.key, key))
    }

    /// A value ended: it becomes the current member's, or an array's element.
    fn attach(&mut self, value: Summary) {
        if self.top_key_is("type") {
            self.type_token = value.string;
        } else if self.top_key_is("payload") {
            self.payload = match value.object {
                true => Some(self.closing_payload.take().unwrap_or_default()),
                false => None,
            };
        }
        match self.frames.last_mut() {
            Some(frame) if frame.object => {
                if let Some(member) = self.members.last_mut() {
                    member.value = value;
                }
            }
            Some(frame) => {
                frame.elements.any |= value.any;
                frame.elements.stubs |= value.own_stub;
            }
            None => {}
        }
    }

    /// The groups, from the top-level `type` and `payload` (`search.fields`).
    fn groups(&self) -> i8 {
        let Some(payload) = &self.payload else {
            return 0;
        };
        let raw = self.line;
        let type_ = self
            .type_token
            .map(|t| string_text(raw, t))
            .unwrap_or_default();
        let role_is_tool = payload
            .iter()
            .find(|m| key_is(raw, m.key, "role"))
            .and_then(|m| m.value.string)
            .is_some_and(|t| string_text(raw, t).as_ref() == b"tool");
        let mut groups = 0;
        for m in payload {
            let is = |key: &str| key_is(raw, m.key, key);
            let (group, held) = match type_.as_ref() {
                b"message" if is("content") => match role_is_tool {
                    true => (RESULTS, m.value.any),
                    false => (CONTENT, m.value.any),
                },
                b"message" if is("name") => (CONTENT, m.value.any),
                b"message" if is("tool_calls") => (ARGUMENTS, m.value.any),
                b"message" if MESSAGE_KEYS.iter().any(|k| is(k)) => continue,
                b"compaction" if is("summary") => (CONTENT, m.value.any),
                // The stubs of the items that are objects; all of it when not a list.
                b"elision" if is("items") => match m.value.array {
                    true => (CONTENT, m.value.stubs),
                    false => (CONTENT, m.value.any),
                },
                b"run-context" if is("sections") || is("facts") => (CONTENT, m.value.any),
                b"tool-dispatched" if is("tool") || is("arguments") => (ARGUMENTS, m.value.any),
                b"tool-settled" if is("error") || is("reason") => (RESULTS, m.value.any),
                _ => (EXTRAS, m.value.any),
            };
            if held {
                groups |= group;
            }
        }
        groups
    }
}

impl Sink for Walk<'_> {
    fn open(&mut self, kind: Kind) {
        let object = kind == Kind::Object;
        let is_payload = object && self.top_key_is("payload");
        self.frames.push(Frame {
            object,
            first_member: self.members.len(),
            elements: Summary::default(),
        });
        if is_payload {
            self.payload_depth = Some(self.frames.len());
        }
    }

    fn key(&mut self, _raw: &[u8], content: Span, _lone: bool) {
        self.members.push(Member {
            key: content,
            value: Summary::default(),
        });
    }

    fn scalar(&mut self, _raw: &[u8], kind: Kind, token: Span, _lone: bool) {
        let mut value = Summary {
            object: kind == Kind::Object,
            array: kind == Kind::Array,
            ..Summary::default()
        };
        let inside = self.in_payload();
        match kind {
            Kind::String => {
                value.string = Some(token);
                if inside {
                    let content = (token.0 + 1)..token.1.saturating_sub(1);
                    let raw = self.line.get(content.clone()).unwrap_or_default();
                    let folded = self.folded.get(content).unwrap_or_default();
                    value.any = self.text.string_holds(raw, folded);
                }
            }
            Kind::Number if inside => {
                value.any = self
                    .text
                    .number_holds(self.line.get(token.0..token.1).unwrap_or_default());
            }
            _ => {}
        }
        if value.object {
            self.closing_payload = Some(Vec::new()); // `{}`: a payload with no member
        }
        self.attach(value);
    }

    fn close(&mut self) {
        let Some(frame) = self.frames.pop() else {
            return;
        };
        let value = if frame.object {
            let kept = last_of_each_key(
                self.line,
                self.members.get(frame.first_member..).unwrap_or_default(),
            );
            let mut value = Summary {
                object: true,
                ..Summary::default()
            };
            for m in &kept {
                value.any |= m.value.any;
                if key_is(self.line, m.key, "stub") {
                    value.own_stub = m.value.any;
                }
            }
            self.members.truncate(frame.first_member);
            if self.payload_depth == Some(self.frames.len() + 1) {
                self.payload_depth = None;
                self.closing_payload = Some(kept);
            }
            value
        } else {
            Summary {
                array: true,
                ..frame.elements
            }
        };
        self.attach(value);
    }
}

/// The text of the string whose token is `token`.
fn string_text(raw: &[u8], token: Span) -> Cow<'_, [u8]> {
    text_of(raw, (token.0 + 1, token.1.saturating_sub(1)))
}

/// The text of a string's content (or a key's).
fn text_of(raw: &[u8], content: Span) -> Cow<'_, [u8]> {
    let content = raw.get(content.0..content.1).unwrap_or_default();
    match memchr::memchr(b'\\', content) {
        None => Cow::Borrowed(content),
        Some(_) => Cow::Owned(decode_string(content)),
    }
}

/// An object's members as the dict Python builds keeps them: the last of each key
/// (keys compared as text), in the order of those last ones.
fn last_of_each_key(raw: &[u8], members: &[Member]) -> Vec<Member> {
    let mut kept: Vec<Member> = Vec::with_capacity(members.len());
    let mut keys: Vec<Cow<'_, [u8]>> = Vec::with_capacity(members.len());
    let mut seen: std::collections::HashSet<Cow<'_, [u8]>> = Default::default();
    // Most objects have a few members: compared pairwise, no hashing.
    let few = members.len() <= 16;
    for m in members.iter().rev() {
        let key = text_of(raw, m.key);
        let new = match few {
            true => !keys.contains(&key),
            false => seen.insert(key.clone()),
        };
        if new {
            keys.push(key);
            kept.push(*m);
        }
    }
    kept.reverse();
    kept
}
