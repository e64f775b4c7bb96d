//! An index file read and decoded, its seal computed as it is read.
//!
//! The seal covers every byte but the last 8 (docs/FORMAT.md), so a second thread can
//! seal each piece of the file once it is in, and the parse can start when the read
//! ends, beside the end of the seal. At 10 GB the index is 39 MB: read (12 ms), sealed
//! (12-20 ms) and parsed (15 ms) one after the other, they were two thirds of a load
//! after an append; side by side, a third less.

use std::io;
use std::sync::mpsc;
use std::sync::Arc;

use crate::file_io::{read_full, Source};
use crate::index::format::{decode, unsealed, IndexData, Invalid};
use crate::index::hash::{Sealer, SipKey};

/// An index smaller than this is read, sealed and parsed on one thread.
const SIDE_BY_SIDE_MIN: usize = 1 << 20;
/// The bytes read, and handed to the sealing thread, at a time.
const PIECE: usize = 1 << 20;
const _: () = assert!(PIECE.is_multiple_of(Sealer::PIECE));

/// The index file `src` (just opened, read from its start) decoded, if sealed with
/// `secret`, or why it is no index; None when it holds more than `max` bytes.
pub fn read_index<S: Source + Sync + ?Sized>(
    src: &S,
    max: u64,
    secret: SipKey,
) -> io::Result<Option<Result<IndexData, Invalid>>> {
    let size = src.size()?;
    if size > max {
        return Ok(None);
    }
    let len = usize::try_from(size).map_err(|_| io::Error::from(io::ErrorKind::OutOfMemory))?;
    let mut bytes = zeroed(len)?;
    if len < SIDE_BY_SIDE_MIN {
        let got = read_full(src, &mut bytes, 0)?;
        bytes.truncate(got);
        return Ok(Some(decode(bytes, secret)));
    }
    // Written only through `base`, in the loop below, before the bytes are read through
    // `raw`; freed only after the sealing thread, which reads through `base`, is joined
    // (`raw` outlives the scope, whatever happens inside it).
    let base = bytes.as_mut_ptr();
    let raw = Arc::new(bytes);
    let body = len - 8;
    let done = std::thread::scope(|scope| {
        let (pieces, arrived) = mpsc::channel::<Piece>();
        let sealing = scope.spawn(move || {
            let mut sealer = Sealer::new(secret);
            let mut at = 0;
            for Piece(start, n) in arrived {
                // SAFETY: `[start, start + n)` lies in `raw`'s bytes, all of it read
                // before the piece was sent and never written after; `raw` is not freed
                // before this thread is joined (see above).
                let piece = unsafe { std::slice::from_raw_parts(start, n) };
                let part = piece
                    .get(..body.saturating_sub(at).min(n))
                    .unwrap_or_default();
                at += n;
                if at >= body {
                    return Some(sealer.finish(part));
                }
                sealer.feed(part);
            }
            None
        });
        let mut got = 0;
        while got < len {
            let want = PIECE.min(len - got);
            // SAFETY: `[got, got + want)` lies in the allocation (`got + want <= len`,
            // its length), and nothing else refers to those bytes: the sealing thread
            // is given only pieces before `got`, and `raw` is not read before the loop ends.
            let (start, piece) = unsafe {
                let start = base.add(got);
                (start, std::slice::from_raw_parts_mut(start, want))
            };
            let n = read_full(src, piece, got as u64)?;
            got += n;
            if n < want {
                return Ok((got, None)); // the file ended early
            }
            // A send fails only if the sealing thread is gone: then `seal` is None.
            let _ = pieces.send(Piece(start, n));
        }
        drop(pieces);
        let parsed = unsealed(raw.clone());
        let seal = sealing.join().ok().flatten();
        Ok::<_, io::Error>((got, seal.map(|seal| parsed.and_then(|p| p.sealed(seal)))))
    })?;
    Ok(Some(match done {
        (_, Some(decoded)) => decoded,
        // A short read or a lost thread: what was read, on this thread.
        (got, None) => {
            let mut bytes = Arc::try_unwrap(raw).unwrap_or_else(|shared| shared.to_vec());
            bytes.truncate(got);
            decode(bytes, secret)
        }
    }))
}

/// A piece of the bytes being read: where it starts, how long it is.
struct Piece(*const u8, usize);

// SAFETY: a `Piece` only points into bytes that outlive the sealing thread and are not
// written once sent (see `read_index`); the thread only reads them.
unsafe impl Send for Piece {}

/// `len` zero bytes. Not `vec![0; len]`, which aborts the process when the memory cannot
/// be had; offered as 2 MiB pages before they are touched: at 40 MB, 4 KiB pages' faults
/// were a fifth of a load. The allocator hands a block this big out as fresh pages of the
/// system's, already zero, so nothing is written to zero them again.
fn zeroed(len: usize) -> io::Result<Vec<u8>> {
    if len == 0 {
        return Ok(Vec::new());
    }
    let layout = std::alloc::Layout::array::<u8>(len)
        .map_err(|_| io::Error::from(io::ErrorKind::OutOfMemory))?;
    // SAFETY: `layout` is of `len` > 0 bytes, alignment 1.
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
    if ptr.is_null() {
        return Err(io::Error::from(io::ErrorKind::OutOfMemory));
    }
    // SAFETY: `ptr` is a block of the global allocator's of `len` bytes, alignment 1 (the
    // layout of a `Vec<u8>` of capacity `len`), all of them initialized (zero); the Vec
    // owns it from here and frees it as it was allocated.
    let bytes = unsafe { Vec::from_raw_parts(ptr, len, len) };
    crate::replay::id::advise_huge_pages(&bytes);
    Ok(bytes)
}
