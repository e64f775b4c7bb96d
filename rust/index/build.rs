//! An index from a fold that read a file (from its first line, or resumed from an
//! earlier index): the fold's checkpoint, the track's notes, and the content checks
//! read from the file.

use crate::error::CoreResult;
use crate::file_io::{read_full, Source};
use crate::index::format::{sample_events, Checkpoint, Identity, IndexData, HEAD_BYTES};
use crate::index::hash::crc32;
use crate::index::lines::Lines;
use crate::index::resume::Base;
use crate::index::slab::Slab;
use crate::index::times::{blocks_of, merged_blocks};
use crate::replay::fold::Fold;

/// CRC-32 of bytes `[start, end)` of `src`; None when the file ends before `end`.
pub fn crc_of<S: Source + ?Sized>(src: &S, start: u64, end: u64) -> CoreResult<Option<u32>> {
    let mut buf = vec![0u8; (64 << 10).min(end.saturating_sub(start)) as usize];
    let mut crc = 0;
    let mut at = start;
    while at < end {
        let want = usize::try_from(end - at)
            .unwrap_or(usize::MAX)
            .min(buf.len());
        let chunk = buf.get_mut(..want).unwrap_or_default();
        if read_full(src, chunk, at)? < want {
            return Ok(None);
        }
        crc = crc32(crc, chunk);
        at += want as u64;
    }
    Ok(Some(crc))
}

/// Where the indexed part of a file ends: just past the last `\n` at or after `from`
/// (the end of the last envelope's line) before `size`, and how many `\n` lie in
/// `[from, that end)`; None when there is none (the last envelope has no `\n`).
fn indexed_end<S: Source + ?Sized>(
    src: &S,
    from: u64,
    size: u64,
) -> CoreResult<Option<(u64, u64)>> {
    let mut buf = vec![0u8; (64 << 10).min(size.saturating_sub(from)) as usize];
    let (mut at, mut newlines, mut last) = (from, 0u64, None);
    while at < size {
        let want = usize::try_from(size - at)
            .unwrap_or(usize::MAX)
            .min(buf.len());
        let chunk = buf.get_mut(..want).unwrap_or_default();
        let got = read_full(src, chunk, at)?;
        let chunk = chunk.get(..got).unwrap_or_default();
        for nl in memchr::memchr_iter(b'\n', chunk) {
            newlines += 1;
            last = Some(at + nl as u64 + 1);
        }
        if got < want {
            break;
        }
        at += want as u64;
    }
    Ok(last.map(|end| (end, newlines)))
}

/// The index of what `fold` read of the first `size` bytes of `src`, which `identity`
/// names (its `events` left empty: they are `fold.events`); `prior` and `base`: the
/// index it was resumed from. None when the file
/// cannot be indexed as it is (its last envelope has no `\n` after it) or the fold
/// noted nothing (`Fold::track`).
pub fn build<S: Source + ?Sized>(
    fold: &Fold,
    prior: Option<(&IndexData, &Base)>,
    src: &S,
    size: u64,
    identity: Identity,
) -> CoreResult<Option<IndexData>> {
    let Some(track) = fold.track.as_deref() else {
        return Ok(None);
    };
    let Some(last) = fold.events.last() else {
        return Ok(None);
    };
    let after_last = last.offset.saturating_add(last.len);
    let Some((end, newlines)) = indexed_end(src, after_last, size)? else {
        return Ok(None);
    };
    let last_line = if track.kinds.is_empty() {
        prior.map_or(0, |(p, _)| p.last_line())
    } else {
        track.line_of(fold.events.len() - 1)
    };
    let lines = last_line + newlines - 1;

    let n = fold.events.len() as u64;
    let mut samples = Vec::new();
    for e in sample_events(n) {
        let Some(at) = fold.events.get(e as usize) else {
            return Ok(None);
        };
        let Some(crc) = crc_of(src, at.offset, at.offset + at.len + 1)? else {
            return Ok(None);
        };
        samples.push((e, crc));
    }
    let (Some(head_crc), Some(last_crc)) = (
        crc_of(src, 0, end.min(HEAD_BYTES))?,
        crc_of(src, last.offset, end)?,
    ) else {
        return Ok(None);
    };

    let key = fold.envelope_at.keys().key();
    let n_usize = fold.events.len();
    let mut kinds = Vec::with_capacity(n_usize);
    let mut fingerprints = Vec::with_capacity(n_usize * 4);
    let mut settled = vec![0u8; n_usize.div_ceil(8)];
    let mut failed = vec![0u8; n_usize.div_ceil(8)];
    let (mut gaps, mut sections, mut rewound, prior_times): (_, _, _, Vec<i64>) = match prior {
        Some((p, base)) => {
            kinds.extend_from_slice(p.kinds.bytes());
            fingerprints.extend_from_slice(base.fingerprints.bytes());
            if let Some(to) = settled.get_mut(..base.settled.len()) {
                to.copy_from_slice(base.settled.bytes());
            }
            if let Some(to) = failed.get_mut(..p.failed.len()) {
                to.copy_from_slice(p.failed.bytes());
            }
            let times = p
                .times
                .bytes()
                .chunks_exact(8)
                .map(|c| i64::from_le_bytes(c.try_into().unwrap_or_default()))
                .collect();
            (
                p.gaps.clone(),
                base.sections.clone(),
                p.fold.rewound.clone(),
                times,
            )
        }
        None => Default::default(),
    };
    kinds.extend_from_slice(&track.kinds);
    gaps.extend_from_slice(&track.gaps);
    for f in &track.fingerprints {
        fingerprints.extend_from_slice(&f.to_le_bytes());
    }
    rewound.extend_from_slice(&track.rewound);
    for &e in &fold.settled {
        if let Some(b) = settled.get_mut(e / 8) {
            *b |= 1 << (e % 8);
        }
    }
    for &e in &track.failed {
        if let Some(b) = failed.get_mut((e / 8) as usize) {
            *b |= 1 << (e % 8);
        }
    }
    let times = merged_blocks(&prior_times, track.first, &track.times);
    let fp = |text: &str| {
        crate::index::hash::fingerprint(crate::index::hash::siphash13(key, text.as_bytes()))
    };
    sections.extend(
        fold.sections
            .iter()
            .map(|s| (fp(&s.digest), s.event as u64)),
    );
    if kinds.len() as u64 != n
        || fingerprints.len() as u64 != n * 4
        || times.len() as u64 != blocks_of(n)
    {
        return Ok(None);
    }
    Ok(Some(IndexData {
        key,
        identity,
        end,
        lines,
        head_crc,
        last_crc,
        kind_table: track.kind_table.clone(),
        kinds: Slab::owned(kinds),
        // The fold's own: `format::encode_parts` takes them beside this.
        events: Lines::default(),
        gaps,
        fingerprints: Slab::owned(fingerprints),
        samples,
        fold: Checkpoint {
            grants: fold.grants_event.map(|e| e as u64),
            live: fold
                .live
                .iter()
                .map(|m| (m.event as u64, m.stub.map(|(_, e)| e as u64)))
                .collect(),
            pending: fold
                .pending()
                .map(|p| (p.event as u64, p.recorded))
                .collect(),
            settled: Slab::owned(settled),
            sections,
            rewound,
        },
        times: Slab::owned(times.iter().flat_map(|t| t.to_le_bytes()).collect()),
        failed: Slab::owned(failed),
    }))
}
