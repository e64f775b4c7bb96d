//! A replay that starts where a side index ends: the fold's state rebuilt from the
//! index's checkpoint (the few lines it names read back), then the bytes appended
//! since folded as a load folds them, then what only the index's fingerprints can
//! tell ([`Base`]): whether an appended id repeats an indexed one, whether a settle
//! names an operation settled before, which appended section texts came first.
//!
//! Those three are told after the fold, not during it: the fold goes on as if no
//! indexed id could repeat, and the first repeat found afterwards, if it comes before
//! the fold's own first failure, is the failure (the fold up to it was exact). So the
//! appended lines cost one pass over the index's fingerprints, not one lookup each.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::sync::OnceLock;

use crate::envelope::chars;
use crate::error::{CoreError, CoreFailure, CoreResult, FailureKind};
use crate::file_io::{read_full, Source};
use crate::index::format::IndexData;
use crate::index::hash::{fingerprint, SipKey};
use crate::index::lines::Lines;
use crate::index::slab::{le_u32s, Slab};
use crate::index::track::Track;
use crate::json::grammar::Span;
use crate::replay::fold::{
    Fold, LineRef, LiveMessage, MessageSource, PendingOp, PendingSlot, Resumed, Slot, ValueRef,
};
use crate::replay::id::{Id, IdKeys};
use crate::replay::records::{record_of, Body, Record};
use crate::replay::stream::{fold_lines_from, SPLIT_MIN};

/// Confirming a fingerprint reads a line; past this many (beyond one for each id
/// asked about), the fingerprints were chosen to collide, and the index is dropped.
const CONFIRM_SLACK: usize = 4096;

/// What a resumed fold knows of the indexed envelopes beyond its checkpoint.
#[derive(Debug, Default)]
pub struct Base {
    /// How many envelopes the index holds.
    pub count: usize,
    pub key: SipKey,
    /// Each indexed envelope id's fingerprint (`format::IndexData::fingerprints`).
    pub fingerprints: Slab,
    /// The indexed settled operations' dispatches, a bit an envelope.
    pub settled: Slab,
    /// The indexed section texts: (digest fingerprint, envelope), first appearance first.
    pub sections: Vec<(u32, u64)>,
    /// The ids of the indexed live messages and pending operations, read back.
    pub known: HashMap<Id, usize>,
    /// Envelopes grouped by fingerprint, made on the first lookup by id.
    buckets: OnceLock<Buckets>,
}

/// Envelope indices in buckets by their fingerprint's top bits.
#[derive(Debug, Default)]
struct Buckets {
    shift: u32,
    starts: Vec<u32>,
    order: Vec<u32>,
}

impl Buckets {
    fn of(fingerprints: &Slab) -> Option<Self> {
        let n = u32::try_from(fingerprints.len() / 4).ok()?;
        let bits = (32 - n.leading_zeros()).clamp(4, 24);
        let shift = 32 - bits;
        let mut starts = vec![0u32; (1usize << bits) + 1];
        for f in fingerprints.u32s() {
            if let Some(c) = starts.get_mut((f >> shift) as usize + 1) {
                *c += 1;
            }
        }
        for i in 1..starts.len() {
            starts[i] += starts[i - 1];
        }
        let mut next = starts.clone();
        let mut order = vec![0u32; n as usize];
        for (e, f) in fingerprints.u32s().enumerate() {
            if let Some(at) = next.get_mut((f >> shift) as usize) {
                if let Some(slot) = order.get_mut(*at as usize) {
                    *slot = e as u32;
                }
                *at += 1;
            }
        }
        Some(Buckets {
            shift,
            starts,
            order,
        })
    }

    fn candidates<'a>(
        &'a self,
        fingerprints: &'a Slab,
        fp: u32,
    ) -> impl Iterator<Item = usize> + 'a {
        let b = (fp >> self.shift) as usize;
        let (start, end) = match (self.starts.get(b), self.starts.get(b + 1)) {
            (Some(&s), Some(&e)) => (s as usize, e as usize),
            _ => (0, 0),
        };
        self.order
            .get(start..end)
            .unwrap_or_default()
            .iter()
            .map(|&e| e as usize)
            .filter(move |&e| fingerprints.u32_at(e) == Some(fp))
    }
}

/// The bytes of one line.
pub fn read_line<S: Source + ?Sized>(src: &S, at: LineRef) -> CoreResult<Vec<u8>> {
    let len = usize::try_from(at.len).map_err(|_| CoreError::ShorterThanSize)?;
    let mut buf = Vec::new();
    buf.try_reserve_exact(len)
        .map_err(|_| CoreError::Io(std::io::ErrorKind::OutOfMemory.into()))?;
    buf.resize(len, 0);
    if read_full(src, &mut buf, at.offset)? < len {
        return Err(CoreError::ShorterThanSize);
    }
    Ok(buf)
}

/// The section digests the indexed line at `at` carries (none where it is no run context,
/// or no longer an envelope).
fn digests_at<S: Source + ?Sized>(src: &S, at: LineRef, keys: &IdKeys) -> CoreResult<Vec<String>> {
    Ok(match record_at(src, at, keys)?.map(|r| r.body) {
        Some(Body::RunContext(sections)) => sections.into_iter().map(|s| s.digest).collect(),
        _ => Vec::new(),
    })
}

/// The record of an indexed line read back; None when it is no longer an envelope.
fn record_at<S: Source + ?Sized>(
    src: &S,
    at: LineRef,
    keys: &IdKeys,
) -> CoreResult<Option<Record>> {
    let raw = read_line(src, at)?;
    Ok(record_of(&raw, 0, at.offset, keys).ok())
}

impl Base {
    /// The fingerprint of an id or digest under the index's key.
    pub fn fingerprint_of(&self, text: &str) -> u32 {
        fingerprint(crate::index::hash::siphash13(self.key, text.as_bytes()))
    }

    /// The indexed envelope with this id, found by fingerprint and confirmed by reading
    /// its line (`lines`: where the envelopes are).
    pub fn find<S: Source + ?Sized>(
        &self,
        id: &str,
        src: &S,
        lines: &Lines,
    ) -> CoreResult<Option<usize>> {
        if let Some(&e) = self.known.get(id) {
            return Ok(Some(e));
        }
        let fp = self.fingerprint_of(id);
        let keys = IdKeys::with_key(self.key);
        let buckets = self
            .buckets
            .get_or_init(|| Buckets::of(&self.fingerprints).unwrap_or_default());
        let mut tried = 0;
        let candidates: Box<dyn Iterator<Item = usize>> = if buckets.order.is_empty() {
            Box::new(
                self.fingerprints
                    .u32s()
                    .enumerate()
                    .filter(move |&(_, f)| f == fp)
                    .map(|(e, _)| e),
            )
        } else {
            Box::new(buckets.candidates(&self.fingerprints, fp))
        };
        for e in candidates {
            tried += 1;
            if tried > CONFIRM_SLACK {
                break;
            }
            let Some(at) = lines.get(e) else { continue };
            if let Some(rec) = record_at(src, at, &keys)? {
                if rec.id.as_str() == id {
                    return Ok(Some(e));
                }
            }
        }
        Ok(None)
    }

    /// Whether `op_id` names an indexed operation that was settled.
    pub fn is_settled<S: Source + ?Sized>(
        &self,
        op_id: &str,
        src: &S,
        lines: &Lines,
    ) -> CoreResult<bool> {
        Ok(match self.find(op_id, src, lines)? {
            Some(e) => self.settled.bit(e),
            None => false,
        })
    }

    /// The indexed line that carries the text of `digest` first: (envelope, the
    /// text's span in the line, the line's id).
    pub fn section<S: Source + ?Sized>(
        &self,
        digest: &str,
        src: &S,
        lines: &Lines,
    ) -> CoreResult<Option<(usize, Span, Id)>> {
        let fp = self.fingerprint_of(digest);
        let keys = IdKeys::with_key(self.key);
        for &(f, e) in self
            .sections
            .iter()
            .filter(|&&(f, _)| f == fp)
            .take(CONFIRM_SLACK)
        {
            debug_assert_eq!(f, fp);
            let Some(at) = usize::try_from(e).ok().and_then(|e| lines.get(e)) else {
                continue;
            };
            if let Some(rec) = record_at(src, at, &keys)? {
                if let Body::RunContext(sections) = rec.body {
                    if let Some(s) = sections.into_iter().find(|s| s.digest == digest) {
                        return Ok(Some((e as usize, s.text, rec.id)));
                    }
                }
            }
        }
        Ok(None)
    }

    /// The digests of the indexed section texts, first appearance first (each line
    /// read back: for iterating, which nothing on a load's path does).
    pub fn digests<S: Source + ?Sized>(&self, src: &S, lines: &Lines) -> CoreResult<Vec<String>> {
        let keys = IdKeys::with_key(self.key);
        let mut out = Vec::with_capacity(self.sections.len());
        let mut seen = std::collections::HashSet::new();
        let mut last: Option<(u64, Vec<String>)> = None;
        for &(fp, e) in &self.sections {
            if last.as_ref().map(|l| l.0) != Some(e) {
                let Some(at) = usize::try_from(e).ok().and_then(|e| lines.get(e)) else {
                    continue;
                };
                last = Some((e, digests_at(src, at, &keys)?));
            }
            if let Some((_, digests)) = &last {
                if let Some(d) = digests
                    .iter()
                    .find(|d| self.fingerprint_of(d) == fp && !seen.contains(*d))
                {
                    seen.insert(d.clone());
                    out.push(d.clone());
                }
            }
        }
        Ok(out)
    }
}

/// Why an index cannot serve (the file is then read whole).
#[derive(Debug)]
pub struct Unusable(pub String);

type Rebuilt = Result<(Fold, Base, IndexData), Unusable>;

fn unusable(why: &str) -> CoreResult<Rebuilt> {
    Ok(Err(Unusable(format!("its checkpoint {why}"))))
}

/// A fold rebuilt from `index`, the lines it names read back from `src`; `track`:
/// note what a new index needs. The index was checked against the file
/// (`check::still_describes`) already.
pub fn rebuild<S: Source + ?Sized>(
    mut index: IndexData,
    src: &S,
    size: u64,
    track: bool,
) -> CoreResult<Rebuilt> {
    let keys = IdKeys::with_key(index.key);
    let track = track.then(|| Box::new(Track::after(&index)));
    let lines = std::mem::take(&mut index.events);
    let n = lines.len();
    let line = |e: u64| usize::try_from(e).ok().and_then(|e| lines.get(e));
    let mut fold = Fold::for_size(size.saturating_sub(index.end), keys.clone());
    let mut resumed = Resumed {
        count: n,
        ..Default::default()
    };

    let Some(meta_line) = line(0) else {
        return unusable("has no first envelope");
    };
    match record_at(src, meta_line, &keys)? {
        Some(rec) if rec.type_ == "session-meta" => {
            fold.meta = Some(ValueRef {
                line: meta_line,
                span: rec.payload,
            });
        }
        _ => return unusable("names a first line that is not a session-meta"),
    }

    for &(source, stub) in &index.fold.live {
        let Some(at) = line(source) else {
            return unusable("names no envelope");
        };
        let Some(rec) = record_at(src, at, &keys)? else {
            return unusable("names a line that is no envelope");
        };
        let (source_of, sticky) = match &rec.body {
            Body::Message(Ok(m)) => (
                MessageSource::Line {
                    line: at,
                    payload: rec.payload,
                },
                m.sticky,
            ),
            Body::Compaction(Ok(c)) => (
                MessageSource::Summary(ValueRef {
                    line: at,
                    span: c.summary,
                }),
                false,
            ),
            _ => return unusable("names a live message that is neither a message nor a summary"),
        };
        let stub = match stub {
            None => None,
            Some(e) => {
                let Some(elision_at) = line(e) else {
                    return unusable("names no envelope");
                };
                let span = match record_at(src, elision_at, &keys)?.map(|r| r.body) {
                    Some(Body::Elision(Ok(items))) => items
                        .into_iter()
                        .flatten()
                        .rfind(|(target, _)| *target == rec.id)
                        .map(|(_, span)| span),
                    _ => None,
                };
                match span {
                    Some(span) => Some((
                        ValueRef {
                            line: elision_at,
                            span,
                        },
                        e as usize,
                    )),
                    None => return unusable("names an elision that does not name the message"),
                }
            }
        };
        let place = fold.live.len();
        resumed.ids.insert(rec.id.clone(), source as usize);
        resumed.slots.insert(source as usize, Slot::Live(place));
        fold.live.push(LiveMessage {
            id: rec.id,
            event: source as usize,
            source: source_of,
            sticky,
            stub,
        });
    }
    if resumed.ids.len() != fold.live.len() {
        return unusable("lists one live message twice");
    }

    if let Some(e) = index.fold.grants {
        let Some(at) = line(e) else {
            return unusable("names no envelope");
        };
        match record_at(src, at, &keys)?.map(|r| r.body) {
            Some(Body::Grants(Ok(span))) => {
                fold.grants = Some(ValueRef { line: at, span });
                fold.grants_event = Some(e as usize);
            }
            _ => return unusable("names a grants line that is not one"),
        }
    }

    for &(e, recorded) in &index.fold.pending {
        let Some(at) = line(e) else {
            return unusable("names no envelope");
        };
        let Some(rec) = record_at(src, at, &keys)? else {
            return unusable("names a line that is no envelope");
        };
        let Body::Dispatched(Ok(call_id)) = rec.body else {
            return unusable("names a pending operation that is no dispatch");
        };
        let place = fold.pending.len();
        let same_call_before = if recorded {
            None
        } else {
            fold.waiting_by_call.insert(call_id, place)
        };
        if resumed.ids.insert(rec.id, e as usize).is_some() {
            return unusable("lists one envelope twice");
        }
        resumed.slots.insert(e as usize, Slot::Op(place));
        fold.pending.push(PendingSlot {
            op: Some(PendingOp {
                event: e as usize,
                line: at,
                payload: rec.payload,
                recorded,
            }),
            same_call_before,
        });
    }

    fold.track = track;
    fold.events = lines;
    fold.resumed = Some(Box::new(resumed));
    let base = Base {
        count: n,
        key: index.key,
        fingerprints: index.fingerprints.clone(),
        settled: index.fold.settled.clone(),
        sections: std::mem::take(&mut index.fold.sections),
        known: fold
            .resumed
            .as_ref()
            .map(|r| r.ids.clone())
            .unwrap_or_default(),
        buckets: OnceLock::new(),
    };
    Ok(Ok((fold, base, index)))
}

/// Fold bytes `[index end, size)` into a fold [`rebuild`] made, then tell what only the
/// index's fingerprints tell. `Ok(Err(..))`: the index cannot serve after all.
pub fn fold_appended<S: Source + Sync + ?Sized>(
    fold: &mut Fold,
    base: &Base,
    prior: &IndexData,
    src: &S,
    size: u64,
) -> CoreResult<Result<(), Unusable>> {
    let keys = IdKeys::with_key(base.key);
    let folded = if size > prior.end {
        fold_lines_from(src, prior.end, prior.lines, size, SPLIT_MIN, &keys, fold)
    } else {
        Ok(0)
    };
    let failure = match folded {
        Ok(read) => {
            fold.lines = prior.lines + read;
            None
        }
        Err(CoreError::Failure(f)) => Some(f),
        Err(e) => return Err(e),
    };
    // The first appended envelope that repeats an indexed id comes before the fold's
    // own failure, if any (that one was not folded in).
    let repeat = match first_repeat(fold, base, src)? {
        Ok(r) => r,
        Err(unusable) => return Ok(Err(unusable)),
    };
    if let Some((line, offset, id)) = repeat {
        return Err(CoreError::Failure(duplicate(line, offset, &id)));
    }
    if let Some(mut f) = failure {
        let resumed = fold.resumed.as_deref();
        if let Some(id) = resumed.and_then(|r| r.refused_id.clone()) {
            if base.find(&id, src, &fold.events)?.is_some() {
                return Err(CoreError::Failure(duplicate(f.line, f.offset, &id)));
            }
        }
        if let Some(op) = resumed.and_then(|r| r.unknown_op.clone()) {
            if f.kind == FailureKind::UnknownOp && base.is_settled(&op, src, &fold.events)? {
                f.reason = format!(
                    "tool-settled names operation {}, which is already settled",
                    chars(&op, 80)
                );
            }
        }
        return Err(CoreError::Failure(f));
    }
    drop_repeated_sections(fold, base, src)?;
    Ok(Ok(()))
}

fn duplicate(line: u64, offset: u64, id: &str) -> CoreFailure {
    CoreFailure {
        kind: FailureKind::Corrupt,
        line,
        offset,
        reason: format!(
            "duplicate envelope id {} (an earlier line has it)",
            chars(id, 80)
        ),
    }
}

/// An envelope's line number, offset and id.
type Where = (u64, u64, String);

/// The first envelope folded after the index whose id an indexed envelope has.
fn first_repeat<S: Source + ?Sized>(
    fold: &Fold,
    base: &Base,
    src: &S,
) -> CoreResult<Result<Option<Where>, Unusable>> {
    let Some(track) = fold.track.as_deref() else {
        return Ok(Ok(None));
    };
    let new = &track.fingerprints;
    if new.is_empty() || base.fingerprints.is_empty() {
        return Ok(Ok(None));
    }
    let Some(hits) = shared_fingerprints(new, &base.fingerprints) else {
        return Ok(Err(Unusable(
            "its fingerprints could not be compared".into(),
        )));
    };
    if hits.len() > CONFIRM_SLACK + new.len() / 16 {
        return Ok(Err(Unusable(
            "too many of its fingerprints collide with the appended ids'".into(),
        )));
    }
    let keys = IdKeys::with_key(base.key);
    for (i, old) in hits {
        let first = fold.first_read();
        let (Some(new_at), Some(old_at)) = (fold.events.get(first + i), fold.events.get(old))
        else {
            continue;
        };
        let Some(id) = fold.envelope_at.id_at(i) else {
            continue;
        };
        if let Some(rec) = record_at(src, old_at, &keys)? {
            if rec.id.as_str() == id {
                return Ok(Ok(Some((
                    track.line_of(first + i),
                    new_at.offset,
                    id.to_owned(),
                ))));
            }
        }
    }
    Ok(Ok(None))
}

/// The appended section texts whose digest an indexed line carried first are not
/// firsts: they leave `sections`.
fn drop_repeated_sections<S: Source + ?Sized>(
    fold: &mut Fold,
    base: &Base,
    src: &S,
) -> CoreResult<()> {
    if fold.sections.is_empty() || base.sections.is_empty() {
        return Ok(());
    }
    // The indexed ones passed over once (200,000 at 10 GB against a few appended): only a
    // fingerprint both have is read back.
    let new: Vec<u32> = fold
        .sections
        .iter()
        .map(|s| base.fingerprint_of(&s.digest))
        .collect();
    // Each pair read back once a line: an appended run context mostly repeats an indexed
    // one, and one indexed line carries many of its texts (at 10 GB, 64 MB appended:
    // a scan of the indexed sections per repeated text took 15 ms).
    let keys = IdKeys::with_key(base.key);
    let mut carried: HashMap<u64, Vec<String>> = HashMap::new();
    let mut repeated: std::collections::HashSet<String> = std::collections::HashSet::new();
    let mut tries = vec![0usize; new.len()];
    for (i, k) in Matcher::of(&new).hits(base.sections.iter().map(|s| s.0), 0) {
        let (Some(s), Some(&(_, e)), Some(tried)) =
            (fold.sections.get(i), base.sections.get(k), tries.get_mut(i))
        else {
            continue;
        };
        if repeated.contains(s.digest.as_str()) || *tried >= CONFIRM_SLACK {
            continue;
        }
        *tried += 1;
        let digests = match carried.entry(e) {
            Entry::Occupied(known) => known.into_mut(),
            Entry::Vacant(unread) => unread.insert(
                match usize::try_from(e).ok().and_then(|e| fold.events.get(e)) {
                    Some(at) => digests_at(src, at, &keys)?,
                    None => Vec::new(),
                },
            ),
        };
        if digests.contains(&s.digest) {
            repeated.insert(s.digest.clone());
        }
    }
    if repeated.is_empty() {
        return Ok(());
    }
    fold.sections.retain(|s| !repeated.contains(&s.digest));
    fold.section_at = fold
        .sections
        .iter()
        .enumerate()
        .map(|(i, s)| (s.digest.clone(), i))
        .collect();
    Ok(())
}

/// The fingerprints of a few new envelopes (or sections), to be met among many indexed
/// ones: a bitmap of them first, which most indexed ones miss at one load, then a map.
struct Matcher {
    mask: usize,
    bitmap: Vec<u64>,
    by_fp: HashMap<u32, Vec<usize>>,
}

impl Matcher {
    fn of(new: &[u32]) -> Self {
        // 64 bits a new one: 1.5% of the indexed ones hit it by chance (a map lookup each).
        let bits = (new.len() * 64).next_power_of_two().clamp(1 << 16, 1 << 26);
        let mut m = Matcher {
            mask: bits - 1,
            bitmap: vec![0u64; bits / 64],
            by_fp: HashMap::with_capacity(new.len()),
        };
        for (i, &f) in new.iter().enumerate() {
            let b = f as usize & m.mask;
            if let Some(w) = m.bitmap.get_mut(b / 64) {
                *w |= 1 << (b % 64);
            }
            m.by_fp.entry(f).or_default().push(i);
        }
        m
    }

    /// Each (new, old) pair with one fingerprint, `old` counted from `first`.
    fn hits(&self, old: impl Iterator<Item = u32>, first: usize) -> Vec<(usize, usize)> {
        let mut hits = Vec::new();
        for (k, f) in old.enumerate() {
            let b = f as usize & self.mask;
            if self
                .bitmap
                .get(b / 64)
                .is_some_and(|w| w & (1 << (b % 64)) != 0)
            {
                if let Some(news) = self.by_fp.get(&f) {
                    hits.extend(news.iter().map(|&i| (i, first + k)));
                }
            }
        }
        hits
    }
}

/// Each (new, indexed) pair of envelopes whose fingerprints are equal, sorted. The
/// indexed ones are passed over in two halves at once when there are millions: at
/// 10 GB (5.3 million) one pass took a load after a 1 MB append 9.5 ms of its 68.
/// None if the second half's thread failed.
fn shared_fingerprints(new: &[u32], indexed: &Slab) -> Option<Vec<(usize, usize)>> {
    let m = Matcher::of(new);
    let n = indexed.len() / 4;
    let mut hits = if n >= 1 << 20 {
        let half = n / 2;
        let (low, high) = indexed.bytes().split_at(half * 4);
        std::thread::scope(|scope| {
            let m = &m;
            let second = scope.spawn(move || m.hits(le_u32s(high), half));
            let mut hits = m.hits(le_u32s(low), 0);
            hits.extend(second.join().ok()?);
            Some(hits)
        })?
    } else {
        m.hits(indexed.u32s(), 0)
    };
    hits.sort_unstable();
    Some(hits)
}
