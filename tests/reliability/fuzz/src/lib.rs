//! What the native core promises about arbitrary bytes, checked by the fuzz targets in
//! `fuzz_targets/` (one function per target).
//!
//! Every check works on the bytes in memory (`[u8]` is a `Source`), so a failure is a
//! property of the input alone and replays from the saved crash file. A panic anywhere
//! (the core's own, or an `assert!` here) is what libFuzzer reports as a crash.
//!
//! * [`tail_repair`]: the tail check (docs/FORMAT.md's tail check) and the repair copy of the prefix
//!   it keeps: the verdict fits the bytes, the copy is exactly that prefix, a repaired
//!   file checks clean, a refusal names a real line.
//! * [`load`]: what `Session.load` replays (the tail check's repair applied), on one
//!   thread and on two (which must agree), and the raw bytes too; a fold's references
//!   stay inside the lines they name, and the lenient scan agrees with a replay that
//!   succeeded.
//! * [`scan`]: the lenient scan of peek and salvage (one thread and two agreeing):
//!   every non-blank line is either an envelope or a problem, in order and numbered
//!   right, peek's continuation from a later line agrees with the scan from the start,
//!   and what salvage would copy scans clean again.

use std::borrow::Cow;

use _native::error::{CoreError, CoreFailure, CoreResult, FailureKind};
use _native::json::grammar::{classify, is_blank, Span, Verdict};
use _native::repair_copy::copy_prefix;
use _native::replay::fold::{Fold, LineRef, MessageSource, ValueRef};
use _native::replay::stream::replay_split_from;
use _native::scan::{scan as lenient_scan, scan_split_from, Scanned, Wanted};
use _native::tail_check::{tail_check, TailKind, TailVerdict, EXCERPT_BYTES};

fn newlines(data: &[u8]) -> u64 {
    data.iter().filter(|&&b| b == b'\n').count() as u64
}

fn at(offset: u64) -> usize {
    usize::try_from(offset).expect("an offset into bytes in memory fits a usize")
}

fn is_line_start(data: &[u8], offset: u64) -> bool {
    offset == 0 || (offset <= data.len() as u64 && data[at(offset) - 1] == b'\n')
}

/// The line starting at `offset`, without its `\n`.
fn line_at(data: &[u8], offset: u64) -> &[u8] {
    let rest = &data[at(offset)..];
    let end = rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
    &rest[..end]
}

fn only_blank_lines(data: &[u8]) -> bool {
    data.split(|&b| b == b'\n').all(is_blank)
}

/// A refusal names a real, non-blank line: its first byte and its 1-based number.
/// `offset` is where a line starts, and `line` is its 1-based number.
fn check_line(data: &[u8], offset: u64, line: u64, what: &str) {
    assert!(
        is_line_start(data, offset),
        "{what}: not where a line starts"
    );
    assert_eq!(
        line,
        1 + newlines(&data[..at(offset)]),
        "{what}: the wrong line number for its offset"
    );
}

fn check_failure(data: &[u8], f: &CoreFailure, what: &str) {
    assert!(
        !f.reason.is_empty(),
        "{what}: a refusal without a reason: {f:?}"
    );
    if f.line == 0 {
        assert_eq!(
            (f.kind, f.offset),
            (FailureKind::NotATranscript, 0),
            "{what}: a refusal at line 0 that is not 'no line at all': {f:?}"
        );
        assert!(
            only_blank_lines(data),
            "{what}: 'no line at all' for bytes with a non-blank line: {f:?}"
        );
        return;
    }
    assert!(
        f.offset < data.len() as u64,
        "{what}: refusal offset past the end ({} bytes): {f:?}",
        data.len()
    );
    check_line(data, f.offset, f.line, &format!("{what}: refusal {f:?}"));
    assert!(
        !is_blank(line_at(data, f.offset)),
        "{what}: refusal names a blank line: {f:?}"
    );
    if f.kind == FailureKind::NotATranscript {
        assert!(
            only_blank_lines(&data[..at(f.offset)]),
            "{what}: 'not a transcript' about a line after the first non-blank one: {f:?}"
        );
    }
}

/// Only refusals: bytes in memory cannot fail to read.
fn refusal<T>(result: CoreResult<T>, what: &str) -> Result<T, CoreFailure> {
    match result {
        Ok(v) => Ok(v),
        Err(CoreError::Failure(f)) => Err(f),
        Err(e) => panic!("{what}: an error other than a refusal, on bytes in memory: {e}"),
    }
}

fn tail(data: &[u8], what: &str) -> Result<TailVerdict, CoreFailure> {
    refusal(tail_check(data, data.len() as u64), what)
}

/// Target `tail_repair`: the tail check and the repair copy of what it keeps.
pub fn tail_repair(data: &[u8]) {
    let size = data.len() as u64;
    let verdict = match tail(data, "tail_check") {
        Ok(v) => v,
        Err(f) => {
            check_failure(data, &f, "tail_check");
            return;
        }
    };
    match verdict.kind {
        TailKind::Clean | TailKind::NoNewline => {
            assert_eq!(
                (verdict.cut, verdict.line, verdict.excerpt.len()),
                (size, 0, 0),
                "a whole last line keeps every byte: {verdict:?}"
            );
            let ends_nl = data.last() == Some(&b'\n');
            assert_eq!(
                verdict.kind == TailKind::Clean,
                ends_nl,
                "clean means ending in \\n: {verdict:?}"
            );
        }
        TailKind::Torn => {
            // A torn line is never the first: cut > 0, at a line start, before the end.
            assert!(
                verdict.cut > 0 && verdict.cut < size,
                "torn cut outside the bytes: {verdict:?}"
            );
            check_line(
                data,
                verdict.cut,
                verdict.line,
                &format!("torn cut {verdict:?}"),
            );
            let rest = &data[at(verdict.cut)..];
            let mut lines = rest.split(|&b| b == b'\n');
            let torn = lines.next().unwrap_or_default();
            assert!(!is_blank(torn), "the torn line is blank: {verdict:?}");
            assert!(
                lines.all(is_blank),
                "a non-blank line after the torn one: {verdict:?}"
            );
            assert_eq!(
                classify(torn),
                Verdict::Torn,
                "the line cut off is not torn: {verdict:?}"
            );
            assert_eq!(
                verdict.excerpt,
                &torn[..torn.len().min(EXCERPT_BYTES)],
                "excerpt is not the torn line's first bytes"
            );
        }
    }

    // The repair copy is exactly the prefix the verdict keeps, byte for byte.
    let mut copy = Vec::new();
    copy_prefix(data, &mut copy, verdict.cut).expect("copy_prefix of bytes that are there");
    assert!(
        copy == data[..at(verdict.cut)],
        "the repair copy is not the prefix"
    );
    // Asked for more than there is: Shrank at the end, every byte copied first.
    let mut over = Vec::new();
    match copy_prefix(data, &mut over, size + 7) {
        Err(CoreError::Shrank { at: a, of }) => {
            assert_eq!((a, of), (size, size + 7), "Shrank names the wrong bytes");
        }
        other => panic!("copy_prefix past the end: {other:?}"),
    }
    assert!(
        over == data,
        "the copy before Shrank is not the whole source"
    );

    // A repair happens once: the repaired file, or the one given its final \n, is clean.
    let fixed: Option<Cow<[u8]>> = match verdict.kind {
        TailKind::Clean => None,
        TailKind::Torn => Some(Cow::Borrowed(&data[..at(verdict.cut)])),
        TailKind::NoNewline => Some(Cow::Owned([data, b"\n"].concat())),
    };
    if let Some(fixed) = fixed {
        match tail(&fixed, "tail_check after the repair") {
            Ok(v) => assert_eq!(
                (v.kind, v.cut, v.line),
                (TailKind::Clean, fixed.len() as u64, 0),
                "the repaired bytes are not clean: {v:?} (first verdict {verdict:?})"
            ),
            Err(f) => panic!("the repaired bytes are refused: {f:?} (first verdict {verdict:?})"),
        }
    }
}

/// One replay, as plain data comparable across the one- and two-thread paths.
type FoldView = (
    Vec<LineRef>,
    Option<ValueRef>,
    Vec<_native::replay::fold::LiveMessage>,
    Option<ValueRef>,
    Vec<_native::replay::fold::PendingOp>,
    Vec<Option<String>>,
    Vec<_native::replay::fold::SectionRef>,
);

fn view(fold: &Fold) -> FoldView {
    (
        fold.events.iter().collect(),
        fold.meta,
        fold.live.clone(),
        fold.grants,
        fold.pending().cloned().collect(),
        // Settled operations by their op ids (the fold keeps their dispatches' places).
        fold.settled
            .iter()
            .map(|&e| fold.envelope_at.id_at(e).map(String::from))
            .collect(),
        fold.sections.clone(),
    )
}

fn span_in(span: Span, line: LineRef) -> bool {
    span.0 <= span.1 && span.1 as u64 <= line.len
}

/// A successful replay: its events are the non-blank lines, in order; everything it
/// keeps points inside one of them; the lenient scan sees the same envelopes.
fn check_fold(data: &[u8], fold: &Fold, what: &str) {
    let size = data.len() as u64;
    // The fold packs its lines; as a plain list they are searched and compared below.
    let events: Vec<LineRef> = fold.events.iter().collect();
    assert!(!events.is_empty(), "{what}: a replay without events");
    let mut previous_end = None;
    for e in &events {
        assert!(
            is_line_start(data, e.offset) && e.offset + e.len <= size,
            "{what}: event outside the bytes: {e:?}"
        );
        assert_eq!(
            line_at(data, e.offset).len() as u64,
            e.len,
            "{what}: event is not one whole line: {e:?}"
        );
        assert!(
            previous_end.is_none_or(|end| e.offset > end),
            "{what}: events out of order or overlapping: {e:?}"
        );
        previous_end = Some(e.offset + e.len);
    }
    let is_event = |line: &LineRef| {
        events
            .binary_search_by_key(&line.offset, |e| e.offset)
            .is_ok_and(|i| events[i] == *line)
    };
    let value_ok = |v: &ValueRef| is_event(&v.line) && span_in(v.span, v.line);
    let meta = fold.meta.expect("a replay that succeeded has its meta");
    assert!(
        value_ok(&meta) && meta.line == events[0],
        "{what}: meta is not in the first line: {meta:?}"
    );
    let mut ids = std::collections::HashSet::new();
    for m in &fold.live {
        assert!(ids.insert(&m.id), "{what}: live message id twice: {}", m.id);
        let ok = match m.source {
            MessageSource::Line { line, payload } => is_event(&line) && span_in(payload, line),
            MessageSource::Summary(v) => value_ok(&v),
        };
        assert!(
            ok && m.stub.as_ref().is_none_or(|(stub, _)| value_ok(stub)),
            "{what}: live message outside its line: {m:?}"
        );
    }
    if let Some(g) = &fold.grants {
        assert!(value_ok(g), "{what}: grants outside their line: {g:?}");
    }
    for p in fold.pending() {
        assert!(
            is_event(&p.line) && span_in(p.payload, p.line),
            "{what}: pending op outside its line: {p:?}"
        );
    }
    for s in &fold.sections {
        assert!(
            value_ok(&s.text),
            "{what}: section text outside its line: {s:?}"
        );
    }
    let mut settled = std::collections::HashSet::new();
    assert!(
        fold.settled.iter().all(|s| settled.insert(s)),
        "{what}: an operation settled twice"
    );

    // Every line replayed, so every line is an envelope to the lenient scan too.
    let scanned = lenient_scan(data, 0, size, true, EVERYTHING).expect("scan of bytes in memory");
    assert!(
        scanned.problems.is_empty(),
        "{what}: replay accepted lines the lenient scan refuses: {:?}",
        scanned.problems
    );
    let found: Vec<LineRef> = scanned.found.iter().map(|f| f.at).collect();
    assert_eq!(
        found, events,
        "{what}: scan and replay see different envelopes"
    );
    // And peek's survey says what the replay ended in.
    let survey = scanned.survey.as_ref().expect("a survey was asked for");
    assert_eq!(
        (survey.problem, survey.live),
        (None, fold.live.len() as u64),
        "{what}: the survey's live count is not replay's"
    );
    let open: Vec<(LineRef, bool)> = survey
        .open
        .iter()
        .map(|&(i, answered)| (scanned.found[i].at, answered))
        .collect();
    let pending: Vec<(LineRef, bool)> = fold.pending().map(|op| (op.line, op.recorded)).collect();
    assert_eq!(
        open, pending,
        "{what}: the survey's open operations are not replay's pending ones"
    );
}

/// What the lenient scans ask for: the ids (salvage, fork), peek's survey and the
/// headers peek keeps for iterating.
const EVERYTHING: Wanted = Wanted {
    ids: true,
    survey: true,
    headers: true,
};

/// Replay `data` on one thread and on two (split after the first line past the
/// middle): the same fold or the same refusal, and either one consistent.
fn replay_checks(data: &[u8], what: &str) -> Result<FoldView, CoreFailure> {
    let size = data.len() as u64;
    let one = refusal(replay_split_from(data, size, u64::MAX), what);
    let two = refusal(replay_split_from(data, size, 1), what);
    let one_view = one.as_ref().map(view).map_err(Clone::clone);
    let two_view = two.as_ref().map(view).map_err(Clone::clone);
    assert_eq!(one_view, two_view, "{what}: one thread and two disagree");
    match &one {
        Ok(fold) => check_fold(data, fold, what),
        Err(f) => check_failure(data, f, what),
    }
    one_view
}

/// Target `load`: the bytes `Session.load` replays after the tail check, and the raw
/// bytes as they are (a damaged middle the tail check never looks at).
pub fn load(data: &[u8]) {
    let raw = replay_checks(data, "replay of the raw bytes");
    match tail(data, "tail_check") {
        Err(f) => check_failure(data, &f, "tail_check"),
        Ok(v) => match v.kind {
            // Replayed as they are: `raw` above is what load sees.
            TailKind::Clean => {}
            TailKind::NoNewline => {
                // Load appends the missing \n; the replay must not change for it.
                let fixed = [data, b"\n"].concat();
                let after = replay_checks(&fixed, "replay after appending the \\n");
                assert_eq!(raw, after, "the final \\n changed the replay");
            }
            TailKind::Torn => {
                let kept = &data[..at(v.cut)];
                replay_checks(kept, "replay of the repaired prefix").ok();
            }
        },
    }
}

/// Line spans `(offset, len)` of found envelopes and problems, merged in file order.
fn lines_of(s: &Scanned) -> Vec<(u64, u64, u64)> {
    let mut all: Vec<(u64, u64, u64)> = s
        .found
        .iter()
        .map(|f| (f.at.offset, f.at.len, f.line))
        .chain(s.problems.iter().map(|p| (p.1, p.2, p.0)))
        .collect();
    all.sort_unstable();
    all
}

/// Where the `\n`s are, to number lines in O(log n).
struct Newlines(Vec<u64>);

impl Newlines {
    fn of(data: &[u8]) -> Self {
        Newlines(
            data.iter()
                .enumerate()
                .filter(|(_, &b)| b == b'\n')
                .map(|(i, _)| i as u64)
                .collect(),
        )
    }

    /// How many `\n` lie before `offset`.
    fn before(&self, offset: u64) -> u64 {
        self.0.partition_point(|&nl| nl < offset) as u64
    }
}

/// One scan of `[start, stop)`: every non-blank line there once, numbered from `start`.
fn check_scanned(data: &[u8], s: &Scanned, start: u64, stop: u64, what: &str) {
    let nl = Newlines::of(data);
    let size = data.len() as u64;
    let tail = &data[at(start)..];
    let end = start
        + tail
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i as u64 + 1);
    assert_eq!(s.end, end, "{what}: end is not just past the last \\n");
    assert!(stop == end || stop == size);
    let lines = lines_of(s);
    let mut previous_end = None;
    for &(offset, len, line) in &lines {
        assert!(
            offset >= start && offset + len <= stop && is_line_start(data, offset),
            "{what}: line outside the range scanned: {offset}+{len}"
        );
        let bytes = line_at(data, offset);
        let bytes = &bytes[..bytes.len().min(at(stop - offset))];
        assert_eq!(
            bytes.len() as u64,
            len,
            "{what}: not a whole line at {offset}"
        );
        assert!(
            !is_blank(bytes),
            "{what}: a blank line reported at {offset}"
        );
        assert_eq!(
            line,
            1 + nl.before(offset) - nl.before(start),
            "{what}: wrong line number at {offset}"
        );
        assert!(
            previous_end.is_none_or(|e| offset > e),
            "{what}: lines overlap at {offset}"
        );
        previous_end = Some(offset + len);
    }
    let non_blank = data[at(start)..at(stop)]
        .split(|&b| b == b'\n')
        .filter(|l| !is_blank(l))
        .count();
    assert_eq!(
        lines.len(),
        non_blank,
        "{what}: a non-blank line neither found nor a problem"
    );
    assert_eq!(
        s.ids.len(),
        s.found.len(),
        "{what}: ids and envelopes differ in number"
    );
    assert_eq!(
        s.first_type.is_some(),
        !s.found.is_empty(),
        "{what}: first_type without envelopes, or envelopes without it"
    );
    assert!(
        s.problems.iter().all(|p| !p.3.is_empty()),
        "{what}: a problem without a reason"
    );
}

fn scanned(data: &[u8], start: u64, final_line: bool, what: &str) -> Scanned {
    let size = data.len() as u64;
    let s = lenient_scan(data, start, size, final_line, EVERYTHING)
        .unwrap_or_else(|e| panic!("{what}: scan of bytes in memory failed: {e}"));
    check_scanned(data, &s, start, if final_line { size } else { s.end }, what);
    // Big files are scanned on two threads split at a line boundary: forced here on
    // every input, the halves must join into what one thread finds.
    let two = scan_split_from(data, start, size, final_line, EVERYTHING, 1)
        .unwrap_or_else(|e| panic!("{what}: two-thread scan of bytes in memory failed: {e}"));
    let view = |s: &Scanned| {
        (
            s.found.clone(),
            s.ids.clone(),
            s.first_type.clone(),
            s.problems.clone(),
            s.end,
            s.survey.clone(),
            s.headers.as_ref().map(|h| h.entries()),
        )
    };
    assert_eq!(
        view(&two),
        view(&s),
        "{what}: the two-thread scan disagrees with one thread"
    );
    // The headers kept are the envelopes' own (one each; the scan's ids where kept).
    let headers = s
        .headers
        .as_ref()
        .expect("headers were asked for")
        .entries();
    assert_eq!(
        headers.len(),
        s.found.len(),
        "{what}: a header per envelope"
    );
    for (kept, id) in headers.iter().zip(&s.ids) {
        if let Some((kept_id, _, _)) = kept {
            assert_eq!(
                kept_id, id,
                "{what}: a kept header's id is not the envelope's"
            );
        }
    }
    // The survey's tallies account for exactly the envelopes found.
    let survey = s.survey.as_ref().expect("a survey was asked for");
    let lines: u64 = survey.types.iter().map(|t| t.lines).sum();
    let bytes: u64 = survey.types.iter().map(|t| t.bytes).sum();
    assert_eq!(
        (lines, bytes),
        (
            s.found.len() as u64,
            s.found.iter().map(|f| f.at.len + 1).sum::<u64>()
        ),
        "{what}: the survey's lines or bytes by type do not add up"
    );
    s
}

/// The envelopes and problems of `s` from offset `from` on, numbered from `from`.
fn after(s: &Scanned, from: u64, lines_before: u64) -> (Vec<(u64, u64, u64)>, Vec<String>) {
    let kept: Vec<(u64, u64, u64)> = lines_of(s)
        .into_iter()
        .filter(|l| l.0 >= from)
        .map(|(o, l, n)| (o, l, n - lines_before))
        .collect();
    let ids = s
        .found
        .iter()
        .zip(&s.ids)
        .filter(|(f, _)| f.at.offset >= from)
        .map(|(_, id)| id.clone())
        .collect();
    (kept, ids)
}

/// Target `scan`: the lenient scan of peek (the unfinished last line left alone) and of
/// salvage (read to the end), peek's continuation, and what salvage would copy.
pub fn scan(data: &[u8]) {
    let peek = scanned(data, 0, false, "scan as peek");
    let whole = scanned(data, 0, true, "scan as salvage");
    // Peek's view is salvage's, less the unfinished last line.
    assert_eq!(
        after(&peek, 0, 0),
        {
            let (lines, ids) = after(&whole, 0, 0);
            let n = lines.iter().filter(|l| l.0 < peek.end).count();
            let m = whole
                .found
                .iter()
                .filter(|f| f.at.offset < peek.end)
                .count();
            (lines[..n].to_vec(), ids[..m].to_vec())
        },
        "peek's scan is not salvage's without the last line"
    );

    // peek(path, offset=o) from a later line start o sees what the scan from 0 saw
    // from o on, numbered from o.
    let first_nl = data.iter().position(|&b| b == b'\n').map(|i| i as u64 + 1);
    let middle = data[..data.len() / 2]
        .iter()
        .rposition(|&b| b == b'\n')
        .map(|i| i as u64 + 1);
    for from in [first_nl, middle, Some(peek.end)].into_iter().flatten() {
        let part = scanned(data, from, false, "scan from a later line");
        assert_eq!(part.end, peek.end, "continuation from {from}: another end");
        let lines_before = newlines(&data[..at(from)]);
        assert_eq!(
            after(&part, from, 0),
            after(&peek, from, lines_before),
            "continuation from {from} disagrees with the scan from 0"
        );
    }

    // Salvage copies each envelope once (first of each id), each line verbatim plus \n:
    // the copy scans clean, with the same ids, and replays or refuses consistently.
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    let mut kept_ids = Vec::new();
    for (f, id) in whole.found.iter().zip(&whole.ids) {
        if seen.insert(id.as_str()) {
            out.extend_from_slice(&data[at(f.at.offset)..at(f.at.offset + f.at.len)]);
            out.push(b'\n');
            kept_ids.push(id.clone());
        }
    }
    let again = scanned(&out, 0, true, "scan of the salvaged copy");
    assert!(
        again.problems.is_empty(),
        "the salvaged copy has lines that do not parse: {:?}",
        again.problems
    );
    assert_eq!(
        again.ids, kept_ids,
        "the salvaged copy holds other envelopes"
    );
    if !out.is_empty() {
        replay_checks(&out, "replay of the salvaged copy").ok();
    }
}
