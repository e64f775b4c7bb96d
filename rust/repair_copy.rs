//! The verbatim repair copy (docs/FORMAT.md's tail check): bytes `[0, length)` of the original,
//! never re-serialised, into the `.repair` file.
//!
//! Mirrors `copy_prefix` in `_pure/tail_check.py`: positioned reads of the source (its
//! shared file position is left alone) and plain writes at the destination's
//! current position.
//!
//! A pread/write loop, not `copy_file_range(2)`: the in-kernel copy was only a
//! little faster (`std::io::copy` uses it, but moves the shared source position),
//! not enough for raw FFI: the libc wrapper needs glibc 2.27 (a manylinux2014
//! wheel could not even import), and std exposes no positioned in-kernel copy.

use std::io::{self, Write};

use crate::error::{CoreError, CoreResult};
use crate::file_io::Source;

const COPY_CHUNK: usize = 1 << 20;

/// Copy bytes `[0, length)` of `src` to `dst` at its current position, verbatim.
/// `CoreError::Shrank` if `src` ends before `length`; `CoreError::Io` for a failed
/// read or write (short writes and EINTR are retried, as `os.write` loops do).
pub fn copy_prefix<S, W>(src: &S, mut dst: W, length: u64) -> CoreResult<()>
where
    S: Source + ?Sized,
    W: Write,
{
    let mut buf = vec![
        0u8;
        usize::try_from(length)
            .unwrap_or(usize::MAX)
            .min(COPY_CHUNK)
    ];
    let mut offset = 0u64;
    while offset < length {
        let want = usize::try_from(length - offset)
            .unwrap_or(usize::MAX)
            .min(buf.len());
        let piece = buf.get_mut(..want).unwrap_or_default();
        let got = read_some(src, piece, offset)?;
        if got == 0 {
            return Err(CoreError::Shrank {
                at: offset,
                of: length,
            });
        }
        dst.write_all(piece.get(..got).unwrap_or_default())?;
        offset += got as u64;
    }
    Ok(())
}

/// One `pread` (retrying EINTR), like the reference's `os.pread`: it may return
/// fewer bytes than asked, and 0 only at the end of the file.
fn read_some<S: Source + ?Sized>(src: &S, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    loop {
        match src.read_at(buf, offset) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Seek, SeekFrom};

    fn temp(name: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!("las-copy-{}-{name}", std::process::id()))
    }

    #[test]
    fn copies_a_prefix_at_the_destination_position() {
        let data: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
        let src_path = temp("src");
        let dst_path = temp("dst");
        std::fs::write(&src_path, &data).unwrap();
        let src = std::fs::File::open(&src_path).unwrap();
        let mut dst = std::fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .read(true)
            .write(true)
            .open(&dst_path)
            .unwrap();
        dst.write_all(b"head").unwrap();
        copy_prefix(&src, &dst, 2_500_001).unwrap();
        let mut out = Vec::new();
        dst.seek(SeekFrom::Start(0)).unwrap();
        dst.read_to_end(&mut out).unwrap();
        assert_eq!(&out[..4], b"head");
        assert_eq!(&out[4..], &data[..2_500_001]);
        // Past the end of the source: Shrank, after copying what was there.
        let err = copy_prefix(&src, &dst, 3_000_010).unwrap_err();
        assert!(matches!(
            err,
            CoreError::Shrank {
                at: 3_000_000,
                of: 3_000_010
            }
        ));
        assert_eq!(
            err.to_string(),
            "the file shrank during the repair copy (at byte 3000000 of 3000010)"
        );
        // Nothing to copy.
        copy_prefix(&src, &dst, 0).unwrap();
        std::fs::remove_file(&src_path).unwrap();
        std::fs::remove_file(&dst_path).unwrap();
    }
}
