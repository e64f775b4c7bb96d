//! Positioned reads of a file the caller owns.
//!
//! The core reads with `pread` (`FileExt::read_at`), so it never moves the shared file
//! position of a descriptor that Python also uses, and reads only the parts it needs.

use std::io;
#[cfg(unix)]
use std::{
    fs::File,
    mem::ManuallyDrop,
    ops::Deref,
    os::unix::fs::FileExt,
    os::unix::io::{FromRawFd, RawFd},
};

/// A descriptor borrowed from the caller, used as a `File` and never closed.
/// Unix only: elsewhere (Windows) the extension has no file I/O and the pure core runs.
#[cfg(unix)]
pub struct BorrowedFile(ManuallyDrop<File>);

#[cfg(unix)]
impl BorrowedFile {
    /// Borrow `fd` for the duration of one call. The caller (the Python edge) keeps
    /// it open meanwhile; a descriptor that is not open gives `EBADF` on use.
    pub fn new(fd: RawFd) -> io::Result<Self> {
        if fd < 0 {
            // `File::from_raw_fd(-1)` would panic; Python's os functions say EBADF.
            return Err(io::Error::from_raw_os_error(EBADF));
        }
        // SAFETY: `fd` is non-negative. `ManuallyDrop` means this `File` never closes
        // it, so ownership stays with the caller; the `File` lives only for this call,
        // during which the caller keeps the descriptor open. Misuse (a closed fd) can
        // only make the system calls fail, it cannot touch memory.
        let file = unsafe { File::from_raw_fd(fd) };
        Ok(BorrowedFile(ManuallyDrop::new(file)))
    }
}

#[cfg(unix)]
impl Deref for BorrowedFile {
    type Target = File;
    fn deref(&self) -> &File {
        &self.0
    }
}

/// `EBADF` on Linux and the BSDs/macOS alike.
#[cfg(unix)]
const EBADF: i32 = 9;

/// A line of the file: where it is (its length without the `\n`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineRef {
    pub offset: u64,
    pub len: u64,
}

/// Something to read bytes from by position: a file, or (in tests) a slice.
pub trait Source {
    /// Like `pread`: up to `buf.len()` bytes at `offset`; 0 at end of file.
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize>;
    /// The current size (`fstat`'s `st_size`).
    fn size(&self) -> io::Result<u64>;
}

#[cfg(unix)]
impl Source for File {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        FileExt::read_at(self, buf, offset)
    }
    fn size(&self) -> io::Result<u64> {
        Ok(self.metadata()?.len())
    }
}

impl Source for [u8] {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        let start = usize::try_from(offset)
            .unwrap_or(usize::MAX)
            .min(self.len());
        let src = self.get(start..).unwrap_or_default();
        let n = src.len().min(buf.len());
        buf[..n].copy_from_slice(&src[..n]);
        Ok(n)
    }
    fn size(&self) -> io::Result<u64> {
        Ok(self.len() as u64)
    }
}

/// `inner` from byte `start` on, read as a file of its own (offset 0 is `inner`'s
/// `start`): a pass over the bytes a file grew by numbers lines and orders rows as
/// if they were the whole file, with nothing else in the pass knowing.
pub struct FromOffset<'a, S: Source + ?Sized> {
    inner: &'a S,
    start: u64,
}

impl<'a, S: Source + ?Sized> FromOffset<'a, S> {
    pub fn new(inner: &'a S, start: u64) -> Self {
        FromOffset { inner, start }
    }
}

impl<S: Source + ?Sized> Source for FromOffset<'_, S> {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        match self.start.checked_add(offset) {
            Some(at) => self.inner.read_at(buf, at),
            None => Ok(0), // past any file's end
        }
    }
    fn size(&self) -> io::Result<u64> {
        Ok(self.inner.size()?.saturating_sub(self.start))
    }
}

/// Fill `buf` from `offset`, retrying short reads and EINTR; returns how many bytes
/// were read (fewer than `buf.len()` only at end of file).
pub fn read_full<S: Source + ?Sized>(src: &S, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match src.read_at(&mut buf[done..], offset + done as u64) {
            Ok(0) => break,
            Ok(n) => done += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(unix)]
    fn a_negative_descriptor_is_ebadf_not_a_panic() {
        let err = BorrowedFile::new(-1).err().map(|e| e.raw_os_error());
        assert_eq!(err, Some(Some(EBADF)));
    }

    #[test]
    fn a_source_from_an_offset_reads_like_a_file_of_its_own() {
        let data = b"hello world";
        let tail = FromOffset::new(&data[..], 6);
        let mut buf = [0u8; 8];
        assert_eq!(tail.size().unwrap(), 5);
        assert_eq!(read_full(&tail, &mut buf, 0).unwrap(), 5);
        assert_eq!(&buf[..5], b"world");
        assert_eq!(read_full(&tail, &mut buf, 3).unwrap(), 2);
        assert_eq!(read_full(&tail, &mut buf, u64::MAX).unwrap(), 0);
        let past = FromOffset::new(&data[..], 100);
        assert_eq!(past.size().unwrap(), 0);
        assert_eq!(read_full(&past, &mut buf, 0).unwrap(), 0);
    }

    #[test]
    fn slices_read_like_files() {
        let data = b"hello world";
        let mut buf = [0u8; 5];
        assert_eq!(read_full(&data[..], &mut buf, 6).unwrap(), 5);
        assert_eq!(&buf, b"world");
        assert_eq!(read_full(&data[..], &mut buf, 9).unwrap(), 2);
        assert_eq!(read_full(&data[..], &mut buf, u64::MAX).unwrap(), 0);
    }
}
