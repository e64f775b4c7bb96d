//! A load through an index of any prefix of a transcript is the load of the whole:
//! the same fold, or the same failure, on random transcripts of every line type
//! (references to live ids, repeated ids, dangling references, blank lines).

use super::format::{decode_bytes, Identity};
use super::hash::SipKey;
use super::replay::{replay, Ask, Replay, Use};
use crate::error::CoreError;
use crate::replay::fold::Fold;

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn pick<'a>(&mut self, items: &'a [String]) -> Option<&'a String> {
        (!items.is_empty()).then(|| &items[self.below(items.len())])
    }
}

fn line(id: &str, type_: &str, payload: &str) -> String {
    format!(
        r#"{{"id":"{id}","payload":{payload},"ts":"2026-01-01T00:00:00.000000Z","type":"{type_}","v":1}}"#
    ) + "\n"
}

/// A transcript of `n` lines after its meta, mostly valid.
fn transcript(rng: &mut Rng, n: usize) -> Vec<String> {
    let mut out = vec![line("m", "session-meta", r#"{"a":1}"#)];
    let mut ids: Vec<String> = Vec::new();
    let mut pending: Vec<(String, String)> = Vec::new();
    let mut digests: Vec<String> = Vec::new();
    let mut every: Vec<String> = Vec::new();
    let mut settled: Vec<String> = Vec::new();
    for i in 0..n {
        let id = if rng.below(40) == 0 {
            rng.pick(&every).cloned().unwrap_or_else(|| format!("e{i}"))
        } else {
            format!("e{i}")
        };
        every.push(id.clone());
        let target = |rng: &mut Rng, ids: &[String]| {
            if rng.below(30) == 0 {
                "gone".to_owned()
            } else {
                rng.pick(ids).cloned().unwrap_or_else(|| "none".into())
            }
        };
        let l = match rng.below(12) {
            0..=3 => {
                let role = ["user", "assistant", "tool", "system"][rng.below(4)];
                let call = pending
                    .get(rng.below(pending.len().max(1)))
                    .map_or("c-x".to_owned(), |p| p.1.clone());
                let sticky = if rng.below(5) == 0 {
                    r#","sticky":true"#
                } else {
                    ""
                };
                ids.push(id.clone());
                line(
                    &id,
                    "message",
                    &format!(
                        r#"{{"role":"{role}","content":"x{i}","tool_call_id":"{call}","finish-reason":"s"{sticky}}}"#
                    ),
                )
            }
            4 => line(
                &id,
                "compaction",
                &format!(
                    r#"{{"summary":"s{i}","replaces-through-id":"{}"}}"#,
                    target(rng, &ids)
                ),
            ),
            5 => line(
                &id,
                "elision",
                &format!(
                    r#"{{"items":[{{"id":"{}","stub":"a"}},{{"id":"{}","stub":[{i}]}}]}}"#,
                    target(rng, &ids),
                    target(rng, &ids)
                ),
            ),
            6 => line(
                &id,
                "rewind",
                &format!(r#"{{"to-id":"{}"}}"#, target(rng, &ids)),
            ),
            7 => line(&id, "grants", &format!(r#"{{"grants":{{"g":{i}}}}}"#)),
            8 => {
                let call = format!("c{}", rng.below(5));
                pending.push((id.clone(), call.clone()));
                line(
                    &id,
                    "tool-dispatched",
                    &format!(r#"{{"call-id":"{call}","tool":"t"}}"#),
                )
            }
            9 => {
                let op = if !settled.is_empty() && rng.below(8) == 0 {
                    settled[rng.below(settled.len())].clone()
                } else if pending.is_empty() || rng.below(20) == 0 {
                    format!("e{}", rng.below(i + 1))
                } else {
                    let op = pending.remove(rng.below(pending.len())).0;
                    settled.push(op.clone());
                    op
                };
                line(
                    &id,
                    "tool-settled",
                    &format!(r#"{{"op-id":"{op}","outcome":"failed"}}"#),
                )
            }
            10 => {
                let d = if !digests.is_empty() && rng.below(2) == 0 {
                    digests[rng.below(digests.len())].clone()
                } else {
                    format!("sha256:{i}")
                };
                digests.push(d.clone());
                line(
                    &id,
                    "run-context",
                    &format!(
                        r#"{{"sections":[{{"digest":"{d}","text":"t{i}"}},{{"digest":"{d}","text":"u"}}]}}"#
                    ),
                )
            }
            _ => line(&id, "future-type", "{}"),
        };
        out.push(l);
        if rng.below(15) == 0 {
            out.push(" \r\n".into());
        }
    }
    out
}

fn identity(size: u64) -> Identity {
    Identity {
        dev: 1,
        ino: 2,
        size,
        mtime_ns: 3,
        ctime_ns: 4,
    }
}

fn ask(index: Option<&[u8]>, size: u64, key: Option<SipKey>) -> Ask {
    Ask {
        index: index
            .and_then(|b| crate::index::read::read_index(b, u64::MAX, SECRET).unwrap_or_default()),
        then: identity(size),
        now: identity(size),
        write: true,
        extend: true,
        key,
        secret: SECRET,
    }
}

const SECRET: SipKey = SipKey { k0: 3, k1: 4 };

/// What a load gives, as comparable text: every part of the fold (the indexed
/// envelopes' ids and section digests read back), or the failure.
fn view(data: &[u8], r: Result<Replay, CoreError>) -> String {
    let r = match r {
        Ok(r) => r,
        Err(CoreError::Failure(f)) => return format!("{f:?}"),
        Err(e) => return format!("error {e}"),
    };
    let f: &Fold = &r.fold;
    let src: &[u8] = data;
    let id_of = |e: usize| -> String {
        let first = f.first_read();
        if e >= first {
            f.envelope_at.id_at(e - first).unwrap_or("?").to_owned()
        } else {
            let at = f.events.get(e).unwrap();
            let raw = &data[at.offset as usize..(at.offset + at.len) as usize];
            crate::envelope::parse_envelope(raw, 0)
                .map(|e| e.id)
                .unwrap_or_default()
        }
    };
    let mut sections: Vec<(String, usize)> = f
        .sections
        .iter()
        .map(|s| (s.digest.clone(), s.event))
        .collect();
    if let Some(base) = &r.base {
        let digests = base.digests(src, &f.events).unwrap();
        for d in digests {
            let (e, _, _) = base.section(&d, src, &f.events).unwrap().unwrap();
            sections.push((d, e));
        }
    }
    sections.sort();
    let mut settled: Vec<usize> = f.settled.clone();
    if let Some(base) = &r.base {
        settled.extend((0..base.count).filter(|&e| base.settled.bit(e)));
    }
    settled.sort();
    let ids: Vec<String> = (0..f.events.len()).map(id_of).collect();
    let found: Vec<Option<usize>> = ids
        .iter()
        .map(|id| match f.envelope_at.get(id) {
            Some(at) => Some(at + f.first_read()),
            None => r
                .base
                .as_ref()
                .and_then(|b| b.find(id, src, &f.events).unwrap()),
        })
        .collect();
    format!(
        "events {:?}\nids {ids:?}\nfound {found:?}\nmeta {:?}\nlive {:?}\ngrants {:?} {:?}\npending {:?}\nsettled {settled:?}\nsections {sections:?}\nlines {}",
        f.events,
        f.meta,
        f.live,
        f.grants,
        f.grants_event,
        f.pending().collect::<Vec<_>>(),
        f.lines,
    )
}

#[test]
fn a_load_through_an_index_of_any_prefix_is_the_whole_load() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut used = 0;
    let mut failures = std::collections::BTreeSet::new();
    for round in 0..300 {
        let lines = transcript(&mut rng, 1 + round % 40);
        let data = lines.concat().into_bytes();
        let size = data.len() as u64;
        let whole = replay(&data[..], size, ask(None, size, None));
        let want = view(&data, whole);
        for cut in 1..=lines.len() {
            let prefix: Vec<u8> = lines[..cut.max(1)].concat().into_bytes();
            let Ok(first) = replay(
                &prefix[..],
                prefix.len() as u64,
                ask(None, prefix.len() as u64, None),
            ) else {
                continue;
            };
            let Some(bytes) = first.index else { continue };
            let through = replay(&data[..], size, ask(Some(&bytes), size, None));
            match &through {
                Ok(r) => {
                    assert_eq!(r.used, Use::Used, "round {round} cut {cut}");
                    used += 1;
                }
                Err(CoreError::Failure(f)) => {
                    failures.insert(
                        f.reason.split(' ').take(3).collect::<Vec<_>>().join(" ")
                            + if f.reason.contains("already") {
                                " already"
                            } else {
                                ""
                            },
                    );
                }
                Err(_) => {}
            }
            assert_eq!(view(&data, through), want, "round {round} cut {cut}");
        }
    }
    assert!(used > 200, "{used}");
    // Failures in the appended part of every kind, a repeat of an indexed id and a
    // settle of an operation settled before the index's end among them.
    for want in [
        "duplicate envelope id",
        "tool-settled names operation already",
        "compaction replaces-through-id",
        "rewind to-id gone",
        "elision names gone",
    ] {
        assert!(
            failures.iter().any(|f| f.starts_with(want)),
            "{want}: {failures:?}"
        );
    }
}

#[test]
fn an_extended_index_is_the_index_of_the_whole_file_byte_for_byte() {
    let mut rng = Rng(0x1234_5678_9abc_def1);
    let key = SipKey { k0: 5, k1: 6 };
    let mut compared = 0;
    for round in 0..400 {
        let lines = transcript(&mut rng, 1 + round % 30);
        let data = lines.concat().into_bytes();
        let size = data.len() as u64;
        let Ok(whole) = replay(&data[..], size, ask(None, size, Some(key))) else {
            continue;
        };
        let Some(want) = whole.index else { continue };
        for cut in [1, lines.len() / 2, lines.len()] {
            let prefix: Vec<u8> = lines[..cut.max(1)].concat().into_bytes();
            let p = prefix.len() as u64;
            let Some(bytes) = replay(&prefix[..], p, ask(None, p, Some(key)))
                .ok()
                .and_then(|r| r.index)
            else {
                continue;
            };
            let extended = replay(&data[..], size, ask(Some(&bytes), size, None)).unwrap();
            let got = extended.index.unwrap_or(bytes);
            assert_eq!(
                decode_bytes(&got, SECRET),
                decode_bytes(&want, SECRET),
                "round {round} cut {cut}"
            );
            assert_eq!(got, want, "round {round} cut {cut}");
            compared += 1;
        }
    }
    assert!(compared > 100, "{compared}");
}

#[test]
fn an_index_of_another_file_or_of_changed_bytes_is_ignored() {
    let mut rng = Rng(77);
    let (data, bytes) = loop {
        let data = transcript(&mut rng, 30).concat().into_bytes();
        let size = data.len() as u64;
        if let Some(bytes) = replay(&data[..], size, ask(None, size, None))
            .ok()
            .and_then(|r| r.index)
        {
            break (data, bytes);
        }
    };
    let size = data.len() as u64;
    let mut other = ask(Some(&bytes), size, None);
    other.then.ino = 9;
    assert!(matches!(
        replay(&data[..], size, other).unwrap().used,
        Use::Ignored(_)
    ));
    let mut touched = ask(Some(&bytes), size, None);
    touched.then.mtime_ns = 8;
    assert!(matches!(
        replay(&data[..], size, touched).unwrap().used,
        Use::Ignored(_)
    ));
    // The same size and times, one byte of the last line changed.
    let mut changed = data.clone();
    let at = changed.len() - 5;
    changed[at] ^= 1;
    let r = replay(&changed[..], size, ask(Some(&bytes), size, None));
    assert!(!matches!(r.as_ref().map(|r| &r.used), Ok(Use::Used)));
}

#[test]
fn an_appended_id_whose_fingerprint_an_indexed_one_has_is_still_new() {
    // A thousand indexed ids under a fixed key; an appended id found to share one's
    // 32-bit fingerprint (about four million tries): read as new, the index used.
    let key = SipKey { k0: 11, k1: 12 };
    let mut lines = vec![line("m", "session-meta", "{}")];
    for i in 0..1000 {
        lines.push(line(&format!("id-{i}"), "message", r#"{"role":"user"}"#));
    }
    let data = lines.concat().into_bytes();
    let size = data.len() as u64;
    let bytes = replay(&data[..], size, ask(None, size, Some(key)))
        .ok()
        .and_then(|r| r.index)
        .unwrap();
    let fp = |id: &str| super::hash::fingerprint(super::hash::siphash13(key, id.as_bytes()));
    let indexed: std::collections::HashSet<u32> = (0..1000)
        .map(|i| fp(&format!("id-{i}")))
        .chain([fp("m")])
        .collect();
    let twin = (0u64..)
        .map(|k| format!("late-{k}"))
        .find(|id| indexed.contains(&fp(id)))
        .unwrap();
    let grown = [
        data.clone(),
        line(&twin, "message", r#"{"role":"user"}"#).into_bytes(),
    ]
    .concat();
    let n = grown.len() as u64;
    let through = replay(&grown[..], n, ask(Some(&bytes), n, None)).unwrap();
    assert_eq!(through.used, Use::Used);
    assert_eq!(through.fold.live.len(), 1001);
    // An id that is the indexed one is refused, with the whole read's line.
    let again = [data, line("id-7", "message", "{}").into_bytes()].concat();
    let m = again.len() as u64;
    let err = replay(&again[..], m, ask(Some(&bytes), m, None)).err();
    assert!(
        matches!(err, Some(CoreError::Failure(f)) if f.line == 1002 && f.reason.starts_with("duplicate"))
    );
}

/// An index of over a MiB is read in pieces, sealed by a second thread as they come in
/// and parsed when the last is in: it decodes as the same bytes read whole do, whether
/// sound, damaged anywhere (its seal then fails), or cut short by a file that shrank
/// between its size and its read.
#[test]
fn an_index_read_in_pieces_decodes_as_its_bytes() {
    use crate::index::read::read_index;
    let mut data = line("m", "session-meta", r#"{"a":1}"#);
    for i in 0..200_000 {
        data += &line(
            &format!("e{i}"),
            "message",
            r#"{"role":"user","content":"hi"}"#,
        );
    }
    let data = data.into_bytes();
    let size = data.len() as u64;
    let bytes = replay(&data[..], size, ask(None, size, None))
        .ok()
        .and_then(|r| r.index)
        .unwrap();
    assert!(bytes.len() > 1 << 20, "{}", bytes.len());
    let read = |b: &[u8]| read_index(b, u64::MAX, SECRET).unwrap().unwrap();
    assert!(read(&bytes).is_ok());
    assert_eq!(read(&bytes), decode_bytes(&bytes, SECRET));
    for at in [20, bytes.len() / 3, bytes.len() - 9, bytes.len() - 1] {
        let mut bad = bytes.clone();
        bad[at] ^= 0x10;
        assert!(read(&bad).is_err(), "{at}");
        assert_eq!(read(&bad), decode_bytes(&bad, SECRET), "{at}");
    }
    assert_eq!(read_index(&bytes[..], 1 << 20, SECRET).unwrap(), None);

    /// A file that says it is longer than it is: it shrank after its `fstat`.
    struct Shrunk<'a>(&'a [u8]);
    impl crate::file_io::Source for Shrunk<'_> {
        fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
            self.0.read_at(buf, offset)
        }
        fn size(&self) -> std::io::Result<u64> {
            Ok(self.0.len() as u64 + (3 << 20))
        }
    }
    for held in [bytes.len(), 1 << 20, (1 << 20) + 5, 100] {
        let got = read_index(&Shrunk(&bytes[..held]), u64::MAX, SECRET)
            .unwrap()
            .unwrap();
        assert_eq!(got, decode_bytes(&bytes[..held], SECRET), "{held}");
    }
}
