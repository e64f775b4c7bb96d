//! Two rules of the live conversation, written once for the Rust readers of it:
//! which message is sticky (docs/FORMAT.md, `message`) and what a compaction leaves (docs/FORMAT.md's replay, "How
//! replay folds"). The replay (`replay::records`, `replay::fold`) and peek's survey
//! (`survey`) call these; the pure core's twin is `Message.is_sticky` in
//! `messages.py`, and the differential tests hold the two together.

use crate::json::view::{self, Entry};

/// Whether a message whose payload members are `fields` is sticky: `sticky` or
/// `sysprompt` is `true`, or `depth` is set (present and not null), as
/// `Message.is_sticky` reads the payload. Anything else, `1` or `"true"` included,
/// is not sticky.
pub fn is_sticky(raw: &[u8], fields: &[Entry]) -> bool {
    let get = |key: &str| view::get(raw, fields, key);
    view::is_true(raw, get("sticky"))
        || view::is_true(raw, get("sysprompt"))
        || view::is_set(get("depth"))
}

/// The message keys: a message line's payload members that make its Message; every
/// other member is an extra (`messages.MESSAGE_KEYS` is the Python twin).
pub const MESSAGE_KEYS: [&str; 8] = [
    "role",
    "content",
    "tool_calls",
    "tool_call_id",
    "name",
    "sticky",
    "sysprompt",
    "depth",
];

/// Whether the key at `span` is a message key: by its length, then its bytes; decoded
/// only when it holds an escape.
fn is_message_key(raw: &[u8], span: crate::json::grammar::Span) -> bool {
    let Some(key) = raw.get(span.0..span.1) else {
        return false;
    };
    let plain = match key.len() {
        4 => key == b"role" || key == b"name",
        5 => key == b"depth",
        6 => key == b"sticky",
        7 => key == b"content",
        9 => key == b"sysprompt",
        10 => key == b"tool_calls",
        12 => key == b"tool_call_id",
        _ => false,
    };
    plain || (key.contains(&b'\\') && MESSAGE_KEYS.iter().any(|k| view::key_is(raw, span, k)))
}

/// The extras of a message whose payload members are `fields`, as the text of one JSON
/// object (`{"finish-reason":"stop",...}`: each extra member copied from `raw`, in file
/// order, repeats included, so it builds what the payload's own members build); None
/// when the payload holds only message keys. What `Session.message_extra` answers from
/// after a load, without reading the file again.
pub fn extras_text(raw: &[u8], fields: &[Entry]) -> Option<Box<[u8]>> {
    // Most message lines have none: one pass over their keys, and no allocation.
    let first = fields.iter().position(|e| !is_message_key(raw, e.key))?;
    // The key's span leaves its quotes out; the member runs to the value's end.
    let member = |e: &Entry| raw.get(e.key.0.checked_sub(1)?..e.value.span.1);
    let extras: Vec<&[u8]> = fields[first..]
        .iter()
        .filter(|e| !is_message_key(raw, e.key))
        .filter_map(member)
        .collect();
    let size = extras.iter().map(|m| m.len() + 1).sum::<usize>() + 1;
    let mut text = Vec::with_capacity(size); // exact: nothing to reallocate or shrink
    for m in extras {
        text.push(if text.is_empty() { b'{' } else { b',' });
        text.extend_from_slice(m);
    }
    text.push(b'}');
    Some(text.into_boxed_slice())
}

/// Fold a compaction into the live list: the entries up to and including index
/// `through` become the sticky ones among them, in order, then `summary`; the
/// entries after `through` stay as they are. `through` is the position of the
/// compaction's `replaces-through-id`, which the caller found in `live` (one past
/// the end folds the whole list: never a panic).
pub fn compact<T>(live: &mut Vec<T>, through: usize, summary: T, is_sticky: impl Fn(&T) -> bool) {
    let rest = live.split_off(through.saturating_add(1).min(live.len()));
    live.retain(is_sticky);
    live.push(summary);
    live.extend(rest);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envelope::parse_envelope_fields;

    fn sticky(payload: &str) -> bool {
        let line = format!(r#"{{"id":"m","payload":{payload},"ts":"t","type":"message","v":1}}"#);
        let mut fields = Vec::new();
        parse_envelope_fields(line.as_bytes(), 0, &mut fields).unwrap();
        is_sticky(line.as_bytes(), &fields)
    }

    #[test]
    fn stickiness_is_true_or_a_depth() {
        for yes in [
            r#"{"role":"system","sticky":true}"#,
            r#"{"role":"system","sysprompt":true}"#,
            r#"{"role":"user","depth":0}"#,
            r#"{"role":"user","depth":"x"}"#,
            r#"{"role":"user","sticky":false,"sticky":true}"#,
        ] {
            assert!(sticky(yes), "{yes}");
        }
        for no in [
            r#"{"role":"user"}"#,
            r#"{"role":"user","sticky":1}"#,
            r#"{"role":"user","sticky":"true"}"#,
            r#"{"role":"user","sysprompt":false}"#,
            r#"{"role":"user","depth":null}"#,
            r#"{"role":"user","sticky":true,"sticky":null}"#,
        ] {
            assert!(!sticky(no), "{no}");
        }
    }

    fn extras(payload: &str) -> Option<String> {
        let line = format!(r#"{{"id":"m","payload":{payload},"ts":"t","type":"message","v":1}}"#);
        let mut fields = Vec::new();
        parse_envelope_fields(line.as_bytes(), 0, &mut fields).unwrap();
        extras_text(line.as_bytes(), &fields).map(|t| String::from_utf8(t.into_vec()).unwrap())
    }

    #[test]
    fn extras_are_the_members_other_than_the_message_keys() {
        assert_eq!(
            extras(r#"{"role":"user","content":[1],"name":"n","depth":2}"#),
            None
        );
        assert_eq!(
            extras(r#"{"a":1,"role":"user","b" : {"c":[true]},"sticky":true,"a":"again"}"#)
                .as_deref(),
            Some(r#"{"a":1,"b" : {"c":[true]},"a":"again"}"#)
        );
        // An escaped key is the key it spells.
        assert_eq!(
            extras(r#"{"r\u006fle":"user","x\u0079":null}"#).as_deref(),
            Some(r#"{"x\u0079":null}"#)
        );
    }

    #[test]
    fn compaction_keeps_sticky_then_summary_then_the_rest() {
        let mut live = vec![(1, true), (2, false), (3, true), (4, false), (5, true)];
        compact(&mut live, 3, (9, false), |&(_, s)| s);
        assert_eq!(live, vec![(1, true), (3, true), (9, false), (5, true)]);
        let mut live = vec![(1, false)];
        compact(&mut live, 0, (9, false), |&(_, s)| s);
        assert_eq!(live, vec![(9, false)]);
        let mut live = vec![(1, true)];
        compact(&mut live, 7, (9, false), |&(_, s)| s);
        assert_eq!(live, vec![(1, true), (9, false)]);
    }
}
