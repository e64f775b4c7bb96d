//! Whether an index still describes a file: the file it names (device, inode), not
//! changed in place since (its size, modification and change times, or a file that
//! only grew), and the bytes it hashed still those bytes (the head, the last indexed
//! line, the sampled lines). Never trusted blindly: any doubt reads the file whole.

use crate::error::CoreResult;
use crate::file_io::Source;
use crate::index::build::crc_of;
use crate::index::format::{Identity, IndexData, HEAD_BYTES};

/// Why the index does not describe the file `now` names (None: it does), from
/// `fstat` alone.
pub fn identity_problem(index: &IndexData, now: Identity) -> Option<&'static str> {
    let then = index.identity;
    if (then.dev, then.ino) != (now.dev, now.ino) {
        return Some("it describes another file");
    }
    if now.size < index.end {
        return Some("the file is shorter than the part indexed");
    }
    if now.size == then.size {
        if (now.mtime_ns, now.ctime_ns) != (then.mtime_ns, then.ctime_ns) {
            return Some("the file was changed in place since it was indexed");
        }
    } else if now.size < then.size {
        return Some("the file shrank since it was indexed");
    }
    None
}

/// Why the bytes of `src` (of `size` bytes) are not those the index hashed (None:
/// they are).
pub fn content_problem<S: Source + ?Sized>(
    index: &IndexData,
    src: &S,
    size: u64,
) -> CoreResult<Option<&'static str>> {
    if size < index.end {
        return Ok(Some("the file is shorter than the part indexed"));
    }
    if crc_of(src, 0, index.end.min(HEAD_BYTES))? != Some(index.head_crc) {
        return Ok(Some("the head of the file changed since it was indexed"));
    }
    let Some(last) = index.events.last() else {
        return Ok(Some("it holds no envelope"));
    };
    if crc_of(src, last.offset, index.end)? != Some(index.last_crc) {
        return Ok(Some("the last indexed line changed since it was indexed"));
    }
    for &(e, crc) in &index.samples {
        let Some(at) = usize::try_from(e).ok().and_then(|e| index.events.get(e)) else {
            return Ok(Some("it samples an envelope it does not hold"));
        };
        if crc_of(src, at.offset, at.offset + at.len + 1)? != Some(crc) {
            return Ok(Some("a sampled line changed since it was indexed"));
        }
    }
    Ok(None)
}
