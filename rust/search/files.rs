//! A search across transcripts reads most of them whole in one go: this reads a
//! batch of them in one call (`search_many.py`; the reference is
//! `_pure/search.py::search_files`): each opened, its `fstat`, its first bytes, the
//! quick look at its first line, the lines holding the text with their groups, and
//! where a later search of it grown would start, with its last bytes.
//!
//! Why a batch: a search thread that let the GIL go and took it back for each open,
//! fstat, read and close of 10,000 transcripts (five times a file) spent more than the
//! search itself waiting for the other thread's turn. Without any byte read, that
//! machinery alone took 0.58-0.67 s on two threads against 0.18 s on one
//! (`benches/search_speed.py`'s fleet).

use std::fs::{File, OpenOptions};
use std::io;
#[cfg(unix)]
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

use crate::error::CoreError;
use crate::file_io::{read_full, Source};

use super::first_part::{first_part, FirstPart};
use super::leaves::Text;

/// What one file of a batch is.
pub struct Searched {
    /// `fstat`'s device, inode, size, modification and change times (ns).
    pub identity: (u64, u64, u64, i64, i64),
    /// A regular file: else nothing else was read.
    pub regular: bool,
    /// Read when a regular file of at most `largest` bytes: its first bytes, the
    /// look at its first line, the lines found in it whole.
    pub part: Option<FirstPart>,
    /// With `tail`, for a file read: where a search of it grown starts (the start of
    /// its last line when that has no `\n` yet, else its size) and its last bytes.
    pub tail: Option<(u64, Vec<u8>)>,
}

/// What the batch asks of each file.
pub struct Ask<'a> {
    pub needle: &'a [u8],
    pub text: &'a Text,
    /// The largest file read: a larger one is left to the caller (read in parts).
    pub largest: u64,
    /// The first bytes kept.
    pub head: usize,
    /// The last bytes kept (0: no tail asked for).
    pub tail: usize,
    /// Extra `open` flags (`O_NONBLOCK`: a FIFO planted among the transcripts must not
    /// hang the search), as Python's `os` names them on this platform.
    pub open_flags: i32,
}

/// Each file at `paths`, as [`Ask`] says; an error for a file that could not be
/// opened or read (or shrank while it was read).
pub fn search_files<P: AsRef<Path>>(
    paths: &[P],
    ask: &Ask<'_>,
) -> Vec<Result<Searched, CoreError>> {
    paths.iter().map(|p| search_file(p.as_ref(), ask)).collect()
}

fn search_file(path: &Path, ask: &Ask<'_>) -> Result<Searched, CoreError> {
    let file = open(path, ask.open_flags)?;
    let meta = file.metadata()?;
    let identity = identity_of(&meta);
    let size = identity.2;
    let regular = meta.file_type().is_file();
    if !regular || size > ask.largest {
        return Ok(Searched {
            identity,
            regular,
            part: None,
            tail: None,
        });
    }
    let part = first_part(&file, ask.needle, ask.text, size, ask.head)?;
    let tail = match ask.tail {
        0 => None,
        len => Some(tail_start(&file, size, len)?),
    };
    Ok(Searched {
        identity,
        regular,
        part: Some(part),
        tail,
    })
}

#[cfg(unix)]
fn open(path: &Path, flags: i32) -> io::Result<File> {
    OpenOptions::new().read(true).custom_flags(flags).open(path)
}

#[cfg(not(unix))]
fn open(path: &Path, _flags: i32) -> io::Result<File> {
    OpenOptions::new().read(true).open(path)
}

#[cfg(unix)]
fn identity_of(meta: &std::fs::Metadata) -> (u64, u64, u64, i64, i64) {
    let ns = |secs: i64, nsec: i64| secs.saturating_mul(1_000_000_000).saturating_add(nsec);
    (
        meta.dev(),
        meta.ino(),
        meta.size(),
        ns(meta.mtime(), meta.mtime_nsec()),
        ns(meta.ctime(), meta.ctime_nsec()),
    )
}

#[cfg(not(unix))]
fn identity_of(meta: &std::fs::Metadata) -> (u64, u64, u64, i64, i64) {
    (0, 0, meta.len(), 0, 0)
}

/// Where a search of the file grown past `size` starts, and its last `len` bytes
/// (fewer in a smaller file): the reference is `_search_cache.tail_start`.
pub fn tail_start<S: Source + ?Sized>(
    src: &S,
    size: u64,
    len: usize,
) -> Result<(u64, Vec<u8>), CoreError> {
    let mut start = size.saturating_sub(len as u64);
    let mut tail = vec![0u8; (size - start) as usize];
    if read_full(src, &mut tail, start)? < tail.len() {
        return Err(CoreError::Io(io::Error::other(format!(
            "the file ends before byte {} (truncated while it was read)",
            thousands(size)
        ))));
    }
    if tail.last().is_none_or(|&b| b == b'\n') {
        return Ok((size, tail));
    }
    let mut at = start + memchr::memrchr(b'\n', &tail).map_or(0, |n| n as u64 + 1);
    // A last line longer than the tail: look back a MiB at a time for its start.
    while at == start && start > 0 {
        start = start.saturating_sub(1 << 20);
        let mut seen = vec![0u8; (at - start) as usize];
        let got = read_full(src, &mut seen, start)?;
        at = start + memchr::memrchr(b'\n', &seen[..got]).map_or(0, |n| n as u64 + 1);
    }
    Ok((at, tail))
}

/// `n` as Python's `f"{n:,}"` writes it.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_are_grouped_as_python_groups_them() {
        for (n, want) in [
            (0, "0"),
            (999, "999"),
            (1000, "1,000"),
            (1234567, "1,234,567"),
        ] {
            assert_eq!(thousands(n), want);
        }
    }

    #[test]
    fn the_tail_starts_at_the_last_line_without_its_newline() {
        let whole = b"ab\ncd\n";
        assert_eq!(
            tail_start(&whole[..], 6, 4).unwrap(),
            (6, b"\ncd\n".to_vec())
        );
        let open = b"ab\ncd";
        assert_eq!(tail_start(&open[..], 5, 4).unwrap(), (3, b"b\ncd".to_vec()));
        // A last line longer than the tail: its start is found further back.
        let long = [b"x\n".as_slice(), &[b'y'; 3000]].concat();
        assert_eq!(tail_start(&long[..], long.len() as u64, 16).unwrap().0, 2);
        let no_newline = [b'z'; 100];
        assert_eq!(tail_start(&no_newline[..], 100, 16).unwrap().0, 0);
        assert_eq!(tail_start(&b""[..], 0, 16).unwrap(), (0, vec![]));
        assert!(tail_start(&b"abc"[..], 10, 16).is_err());
    }
}
