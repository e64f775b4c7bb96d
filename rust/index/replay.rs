//! A load's replay with a side index: the index checked, the fold resumed from it
//! and the appended bytes folded; or, without a usable one, the whole file read. Either
//! way the fold is the one a whole read gives, failures included, and the index to
//! write next is made from it when asked.

use crate::error::{CoreError, CoreResult};
use crate::file_io::Source;
use crate::index::build::build;
use crate::index::check::{content_problem, identity_problem};
use crate::index::format::{encode_parts, Identity, IndexData, Invalid};
use crate::index::hash::SipKey;
use crate::index::resume::{fold_appended, rebuild, Base};
use crate::index::track::Track;
use crate::replay::fold::Fold;
use crate::replay::id::IdKeys;
use crate::replay::stream::{fold_lines, SPLIT_MIN};

/// What became of the index given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Use {
    /// None was given.
    None,
    /// It served: only the bytes after its end were read (perhaps none).
    Used,
    /// It was ignored, and why: the file was read whole.
    Ignored(String),
}

pub struct Replay {
    pub fold: Fold,
    /// The indexed envelopes' fingerprints and the rest of what only reading their
    /// lines tells, when the index served.
    pub base: Option<Base>,
    pub used: Use,
    /// The index of the file as read, when asked for and not the one given unchanged.
    pub index: Option<Vec<u8>>,
    /// The bytes read: after the index's end when it served, else all of them.
    pub read: u64,
}

/// What a load with an index asks for.
pub struct Ask {
    /// A candidate index (untrusted: read and decoded by `read::read_index`, or why it
    /// is none), if any.
    pub index: Option<Result<IndexData, Invalid>>,
    /// The file as the caller saw it before reading: what the index must describe.
    pub then: Identity,
    /// The file now (after a repair or a final newline): what a new index names.
    pub now: Identity,
    /// Whether to make the index to write next.
    pub write: bool,
    /// Whether to make it too when an index served and bytes were appended after it
    /// (a load leaves that to a refresh off its thread: the 10 GB index is 40 MB).
    pub extend: bool,
    /// The key a new index's fingerprints are made with (None: random bits); a test's
    /// way to make two indexes of one file alike, byte for byte.
    pub key: Option<SipKey>,
    /// The cache's secret key, which seals every index it keeps.
    pub secret: SipKey,
}

/// Replay the first `size` bytes of `src` as `ask` says.
pub fn replay<S: Source + Sync + ?Sized>(src: &S, size: u64, mut ask: Ask) -> CoreResult<Replay> {
    let mut ignored = None;
    if let Some(decoded) = ask.index.take() {
        let found = match decoded {
            Ok(index) => resumed(src, size, index, &ask)?,
            Err(invalid) => Err(invalid.0),
        };
        match found {
            Ok(done) => return Ok(done),
            Err(why) => ignored = Some(why),
        }
    }
    let used = ignored.map_or(Use::None, Use::Ignored);
    let keys = ask.key.map_or_else(IdKeys::new, IdKeys::with_key);
    let mut fold = Fold::for_size(size, keys.clone());
    if ask.write {
        fold.track = Some(Box::new(Track::new()));
    }
    fold.lines = fold_lines(src, size, SPLIT_MIN, &keys, &mut fold)?;
    fold.finish(size).map_err(CoreError::Failure)?;
    let index = if ask.write {
        build(&fold, None, src, size, ask.now)?.map(|i| encode_parts(&i, &fold.events, ask.secret))
    } else {
        None
    };
    Ok(Replay {
        fold,
        base: None,
        used,
        index,
        read: size,
    })
}

/// The replay resumed from `bytes`, or why they cannot serve.
fn resumed<S: Source + Sync + ?Sized>(
    src: &S,
    size: u64,
    index: IndexData,
    ask: &Ask,
) -> CoreResult<Result<Replay, String>> {
    if let Some(why) = identity_problem(&index, ask.then) {
        return Ok(Err(why.to_owned()));
    }
    if let Some(why) = content_problem(&index, src, size)? {
        return Ok(Err(why.to_owned()));
    }
    let (mut fold, base, prior) = match rebuild(index, src, size, true)? {
        Ok(parts) => parts,
        Err(unusable) => return Ok(Err(unusable.0)),
    };
    if let Err(unusable) = fold_appended(&mut fold, &base, &prior, src, size)? {
        return Ok(Err(unusable.0));
    }
    let grew = size > prior.end || ask.now != prior.identity;
    let index = if ask.write && ask.extend && grew {
        build(&fold, Some((&prior, &base)), src, size, ask.now)?
            .map(|i| encode_parts(&i, &fold.events, ask.secret))
    } else {
        None
    };
    Ok(Ok(Replay {
        fold,
        base: Some(base),
        used: Use::Used,
        index,
        read: size.saturating_sub(prior.end),
    }))
}
