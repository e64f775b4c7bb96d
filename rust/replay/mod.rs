//! The replay (docs/FORMAT.md's replay) without Python: stream, validate, reduce, fold.

pub mod fold;
pub mod history;
pub mod id;
pub mod narrow;
pub mod records;
pub mod stream;

pub use fold::Fold;
pub use stream::replay;

#[cfg(test)]
mod tests {
    use super::fold::MessageSource;
    use super::stream::replay_split_from;
    use super::*;
    use crate::error::{CoreError, CoreResult, FailureKind};

    fn line(id: &str, type_: &str, payload: &str) -> String {
        format!(
            r#"{{"id":"{id}","payload":{payload},"ts":"2026-01-01T00:00:00.000000Z","type":"{type_}","v":1}}"#
        ) + "\n"
    }

    fn meta() -> String {
        line("m", "session-meta", r#"{"a":1}"#)
    }

    fn run(data: &str) -> Result<Fold, (FailureKind, u64, String)> {
        let bytes = data.as_bytes();
        let one = replay_split_from(bytes, bytes.len() as u64, u64::MAX);
        // The two-thread path must agree with the one-thread path everywhere.
        let two = replay_split_from(bytes, bytes.len() as u64, 1);
        let view = |r: &CoreResult<Fold>| match r {
            Ok(f) => Ok((
                f.events.clone(),
                f.live.clone(),
                f.pending().cloned().collect::<Vec<_>>(),
                f.settled.clone(),
                f.sections.clone(),
            )),
            Err(CoreError::Failure(c)) => Err((c.kind, c.line, c.offset, c.reason.clone())),
            Err(e) => panic!("{e}"),
        };
        assert_eq!(view(&one), view(&two));
        one.map_err(|e| match e {
            CoreError::Failure(c) => (c.kind, c.line, c.reason),
            e => panic!("{e}"),
        })
    }

    fn live_ids(f: &Fold) -> Vec<&str> {
        f.live.iter().map(|m| m.id.as_str()).collect()
    }

    #[test]
    fn folds_messages_compactions_and_elisions() {
        let data = [
            meta(),
            line(
                "s",
                "message",
                r#"{"role":"system","content":"x","sysprompt":true}"#,
            ),
            line("a", "message", r#"{"role":"user","content":"hi"}"#),
            "  \r\n".to_owned(),
            line(
                "b",
                "message",
                r#"{"role":"assistant","content":null,"depth":null}"#,
            ),
            line(
                "c1",
                "compaction",
                r#"{"summary":"sum","replaces-through-id":"a"}"#,
            ),
            line(
                "e1",
                "elision",
                r#"{"items":[{"id":"c1","stub":[1]},{"id":"b","stub":"x","stub":"y"}]}"#,
            ),
            line("g", "grants", r#"{"grants":{"x":1}}"#),
            line("u", "future", r#"{}"#),
        ]
        .concat();
        let f = run(&data).unwrap();
        assert_eq!(live_ids(&f), vec!["s", "c1", "b"]);
        assert!(matches!(f.live[1].source, MessageSource::Summary(_)));
        assert!(f.live[1].stub.is_some() && f.live[2].stub.is_some());
        assert_eq!(f.events.len(), 8);
        assert!(f.grants.is_some());
    }

    #[test]
    fn tracks_tool_operations() {
        let data = [
            meta(),
            line("d1", "tool-dispatched", r#"{"call-id":"c1","tool":"t"}"#),
            line("d2", "tool-dispatched", r#"{"call-id":"c2","tool":"t"}"#),
            line("d3", "tool-dispatched", r#"{"call-id":"c1","tool":"t"}"#),
            line("s1", "tool-settled", r#"{"op-id":"d3","outcome":"failed"}"#),
            line("t", "message", r#"{"role":"tool","tool_call_id":"c1"}"#),
            line("r", "run-context", r#"{"sections":[{"digest":"d","text":"x"},{"digest":"d","text":"y"},{"digest":"e","rendered-in":"z"}]}"#),
        ]
        .concat();
        let f = run(&data).unwrap();
        let pending: Vec<(Option<&str>, bool)> = f
            .pending()
            .map(|p| (f.envelope_at.id_at(p.event), p.recorded))
            .collect();
        assert_eq!(pending, vec![(Some("d1"), true), (Some("d2"), false)]);
        let settled: Vec<&str> = f
            .settled
            .iter()
            .filter_map(|&e| f.envelope_at.id_at(e))
            .collect();
        assert_eq!(settled, vec!["d3"]);
        assert_eq!(f.sections.len(), 1);
    }

    #[test]
    fn rewinds_cut_the_live_list() {
        let data = [
            meta(),
            line("s", "message", r#"{"role":"system","sysprompt":true}"#),
            line("a", "message", r#"{"role":"user"}"#),
            line("b", "message", r#"{"role":"user"}"#),
            line("w1", "rewind", r#"{"to-id":"a"}"#),
            line("c", "message", r#"{"role":"user"}"#),
        ]
        .concat();
        let f = run(&data).unwrap();
        assert_eq!(live_ids(&f), vec!["s", "a", "c"]);
        assert_eq!(f.envelope_at.get("b"), Some(3));
        let all = data + &line("w2", "rewind", r#"{"to-id":null}"#);
        assert!(run(&all).unwrap().live.is_empty());
    }

    #[test]
    fn refuses_with_the_reference_reasons() {
        let cases: Vec<(String, FailureKind, u64, &str)> = vec![
            (String::new(), FailureKind::NotATranscript, 0, "the file is empty"),
            (" \n\n".into(), FailureKind::NotATranscript, 0, "the file holds only blank lines"),
            (line("a", "message", "{}"), FailureKind::NotATranscript, 1, "the first line is a message envelope, not a session-meta"),
            ("\nnope\n".into(), FailureKind::NotATranscript, 2, "the first line is not a session-meta envelope (not a JSON value (malformed or cut short))"),
            (meta() + &meta(), FailureKind::Corrupt, 2, "duplicate envelope id m (an earlier line has it)"),
            (meta() + "{\"v\":2}\n", FailureKind::Version, 2, "envelope version is not the integer 1 (v is a JSON number); this version reads v=1 only"),
            (meta() + &line("x", "message", r#"{"role":1}"#), FailureKind::Corrupt, 2, "message payload has no string role"),
            (meta() + &line("x", "compaction", r#"{"summary":"s","replaces-through-id":"q"}"#), FailureKind::Dangling, 2, "compaction replaces-through-id q names no message in the live conversation"),
            (meta() + &line("x", "elision", r#"{"items":[{"id":"q"}]}"#), FailureKind::Corrupt, 2, "elision item is not an object with a string id and a stub"),
            (meta() + &line("x", "tool-settled", r#"{"op-id":"q","outcome":"completed"}"#), FailureKind::UnknownOp, 2, "tool-settled names operation q, which was never dispatched"),
            (meta() + &line("d", "tool-dispatched", r#"{"call-id":"c","tool":"t"}"#) + &line("x", "tool-settled", r#"{"op-id":"d","outcome":"completed","artifact":{"file":".."}}"#), FailureKind::Corrupt, 3, "artifact file '..' is not a file name"),
            (meta() + &line("g", "grants", r#"{"grants":[]}"#), FailureKind::Corrupt, 2, "grants payload has no object under grants"),
            (meta() + "\n[1]", FailureKind::Corrupt, 3, "not an envelope: a JSON array, not an object"),
            (meta() + &line("d", "tool-dispatched", r#"{"call-id":"c","tool":"t"}"#) + &line("x", "tool-settled", r#"{"op-id":"d","outcome":"failed"}"#) + &line("y", "tool-settled", r#"{"op-id":"d","outcome":"failed"}"#), FailureKind::UnknownOp, 4, "tool-settled names operation d, which is already settled"),
            (meta() + &line("a", "message", r#"{"role":"user"}"#) + &line("x", "tool-settled", r#"{"op-id":"a","outcome":"failed"}"#), FailureKind::UnknownOp, 3, "tool-settled names operation a, which was never dispatched"),
            (meta() + &line("a", "message", r#"{"role":"user"}"#) + &line("b", "message", r#"{"role":"user"}"#) + &line("w", "rewind", r#"{"to-id":"a"}"#) + &line("c", "message", r#"{"role":"user"}"#) + &line("e", "elision", r#"{"items":[{"id":"b","stub":1}]}"#), FailureKind::Dangling, 6, "elision names b, which is not in the live conversation"),
            (meta() + &line("w", "rewind", "{}"), FailureKind::Corrupt, 2, "rewind has no to-id"),
            (meta() + &line("w", "rewind", r#"{"to-id":1}"#), FailureKind::Corrupt, 2, "rewind to-id is neither a string nor null"),
            (meta() + &line("w", "rewind", r#"{"to-id":"q"}"#), FailureKind::Dangling, 2, "rewind to-id q names no message in the live conversation"),
        ];
        for (data, kind, line_no, reason) in cases {
            assert_eq!(
                run(&data).err(),
                Some((kind, line_no, reason.to_owned())),
                "{data:?}"
            );
        }
    }

    #[test]
    fn two_threads_number_lines_across_the_split() {
        let mut data = meta();
        for i in 0..2000 {
            data += &line(
                &format!("i{i}"),
                "message",
                r#"{"role":"user","content":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}"#,
            );
            if i % 7 == 0 {
                data += "\n";
            }
        }
        let good = run(&data).unwrap();
        assert_eq!(good.live.len(), 2000);
        let bad = data.clone() + &line("i5", "message", r#"{"role":"user"}"#);
        let lines = bad.matches('\n').count() as u64;
        assert_eq!(run(&bad).err().map(|e| e.1), Some(lines));
    }

    #[test]
    fn two_threads_report_the_first_failure_in_file_order() {
        // Records cross from the second thread in batches: a failure in the first
        // part wins over one in the second, and one early in the second part (in
        // its first batch) over one in a later batch.
        let body = |bad_at: &[usize]| {
            let mut data = meta();
            for i in 0..20000 {
                let role = if bad_at.contains(&i) {
                    "1"
                } else {
                    r#""user""#
                };
                data += &line(
                    &format!("i{i}"),
                    "message",
                    &format!(r#"{{"role":{role}}}"#),
                );
            }
            data
        };
        for (bad_at, line_no) in [
            (vec![10, 15000], 12),
            (vec![9000, 19900], 9002),
            (vec![19900], 19902),
            (vec![19999], 20001),
        ] {
            assert_eq!(
                run(&body(&bad_at)).err(),
                Some((
                    FailureKind::Corrupt,
                    line_no,
                    "message payload has no string role".to_owned()
                )),
                "{bad_at:?}"
            );
        }
    }
}
