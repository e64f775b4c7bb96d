//! Two rules of the live conversation, written once for the Rust readers of it:
//! which message is sticky (SPEC 2.2) and what a compaction leaves (SPEC 4, "How
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
