//! Reading a range of the file line by line through one bounded, reused buffer,
//! and the replay driver that splits the work across two threads.
//!
//! Bounded memory is the point: the replay must not hold the file (a load's
//! budget: resident memory at most 1.25x the file size, Python objects of the live messages included),
//! so lines are read with `pread` into a buffer of [`CHUNK`] bytes (grown only for
//! a longer line) and forgotten once reduced to a record.

use std::sync::mpsc;

use crate::error::{CoreError, CoreFailure, CoreResult};
use crate::file_io::{read_full, Source};
use crate::json::grammar::is_blank;
use crate::replay::fold::Fold;
use crate::replay::id::IdKeys;
use crate::replay::records::{record_at_start, record_of, BadLine, Record};

/// Read size. On a 256 MB transcript 256 KiB, 1 MiB and 4 MiB reads replay within
/// noise of each other (1.47-1.50 s for five replays); the smaller buffer is less
/// memory.
pub const CHUNK: usize = 1 << 20;

/// Below this a second thread costs more than it saves.
pub const SPLIT_MIN: u64 = 8 << 20;

/// Where the first thread's part ends, in percent of the file. It also folds
/// every record, its own as it reads them and then the second part's while the
/// second thread still reads, so it reads less than half.
const SPLIT_PERCENT: u64 = 44;

/// How many records ahead of the one it folds the first thread fetches a handed
/// record's table slot.
const PREFETCH_AHEAD: usize = 4;

/// Records in the second thread's first batch (see [`batch_size`]).
const BATCH: usize = 8192;

/// The lines of bytes `[start, end)` of a source, in order.
pub struct LineReader<'a, S: Source + ?Sized> {
    src: &'a S,
    end: u64,
    buf: Vec<u8>,
    /// File offset of `buf[0]`.
    base: u64,
    /// Next unread line starts at `buf[at]`; `buf[..filled]` holds file bytes.
    at: usize,
    filled: usize,
    /// Lines returned so far (blank ones included).
    pub lines: u64,
}

impl<'a, S: Source + ?Sized> LineReader<'a, S> {
    pub fn new(src: &'a S, start: u64, end: u64) -> Self {
        LineReader {
            src,
            end,
            buf: Vec::new(),
            base: start,
            at: 0,
            filled: 0,
            lines: 0,
        }
    }

    /// The next line (without its `\n`): its 1-based number, file offset and
    /// bytes; None at `end`.
    pub fn next_line(&mut self) -> CoreResult<Option<(u64, u64, &[u8])>> {
        loop {
            let pending = self.buf.get(self.at..self.filled).unwrap_or_default();
            if let Some(nl) = memchr::memchr(b'\n', pending) {
                let start = self.at;
                self.at += nl + 1;
                self.lines += 1;
                let line = self.buf.get(start..start + nl).unwrap_or_default();
                return Ok(Some((self.lines, self.base + start as u64, line)));
            }
            let read_to = self.base + self.filled as u64;
            if read_to >= self.end {
                // The last line, without a `\n`.
                if self.at >= self.filled {
                    return Ok(None);
                }
                let start = self.at;
                self.at = self.filled;
                self.lines += 1;
                let line = self.buf.get(start..self.filled).unwrap_or_default();
                return Ok(Some((self.lines, self.base + start as u64, line)));
            }
            self.refill(read_to)?;
        }
    }

    /// The next line's 1-based number and file offset, and every byte read after its
    /// start (the line and maybe more lines), without a search for its end; None
    /// when nothing is read past the last line returned.
    pub fn buffered(&self) -> Option<(u64, u64, &[u8])> {
        let rest = self.buf.get(self.at..self.filled)?;
        (!rest.is_empty()).then(|| (self.lines + 1, self.base + self.at as u64, rest))
    }

    /// Move past the next line, whose `len` bytes and `\n` are in [`Self::buffered`].
    pub fn skip_line(&mut self, len: usize) {
        self.at = (self.at + len + 1).min(self.filled);
        self.lines += 1;
    }

    /// Keep the unfinished line, read more after it.
    fn refill(&mut self, read_to: u64) -> CoreResult<()> {
        self.buf.copy_within(self.at..self.filled, 0);
        self.base += self.at as u64;
        self.filled -= self.at;
        self.at = 0;
        let left = usize::try_from(self.end - read_to).unwrap_or(usize::MAX);
        // No bigger than what is left to read: zeroing a whole CHUNK for a small
        // range (a peek of the last turn, a small file) cost more than reading it.
        let want_room = CHUNK
            .max(self.filled * 2)
            .min(self.filled.saturating_add(left));
        if self.buf.len() < want_room {
            self.buf
                .try_reserve_exact(want_room - self.buf.len())
                .map_err(|_| CoreError::Io(std::io::ErrorKind::OutOfMemory.into()))?;
            self.buf.resize(want_room, 0);
        }
        let room = (self.buf.len() - self.filled).min(left);
        let dst = self
            .buf
            .get_mut(self.filled..self.filled + room)
            .unwrap_or_default();
        let got = read_full(self.src, dst, read_to)?;
        if got < room {
            // The file shrank under us: like the reference (which reads what is
            // there), its end is where the bytes end.
            self.end = read_to + got as u64;
        }
        self.filled += got;
        Ok(())
    }
}

/// What a range read in the second thread hands to the fold.
enum Reduced {
    Record(Record),
    Bad(BadLine),
}

/// Where the replay's line loop hands what it reads: load's strict [`Fold`], or the
/// lenient fold of a history read (`replay::history`). The loop is generic over it,
/// made once for each: a load runs within 0.3% of the instructions it ran before the
/// lenient fold existed (callgrind, a 32 MB prefix of the realistic corpus).
pub trait Folder {
    /// Whether a line that is not an envelope ends the read.
    const STOPS_AT_BAD: bool;
    /// Fold in the next record; an error ends the read.
    fn feed(&mut self, rec: Record) -> Result<(), CoreFailure>;
    /// The next line is not an envelope; an error ends the read.
    fn bad(&mut self, bad: BadLine) -> Result<(), CoreFailure>;
    /// Start fetching the id table's slot of the id with this hash.
    fn prefetch(&self, id_hash: u64);
}

impl Folder for Fold {
    const STOPS_AT_BAD: bool = true;

    #[inline]
    fn feed(&mut self, rec: Record) -> Result<(), CoreFailure> {
        Fold::feed(self, rec)
    }

    fn bad(&mut self, bad: BadLine) -> Result<(), CoreFailure> {
        Err(self.refuse(bad))
    }

    #[inline]
    fn prefetch(&self, id_hash: u64) {
        self.envelope_at.prefetch(id_hash);
    }
}

/// Replay the first `size` bytes: every line validated and folded, or the first
/// failure in file order.
pub fn replay<S: Source + Sync + ?Sized>(src: &S, size: u64) -> CoreResult<Fold> {
    replay_split_from(src, size, SPLIT_MIN)
}

/// [`replay`], using two threads for files of at least `split_min` bytes.
pub fn replay_split_from<S: Source + Sync + ?Sized>(
    src: &S,
    size: u64,
    split_min: u64,
) -> CoreResult<Fold> {
    // One set of hash keys: both threads hash the ids they read with it.
    let keys = IdKeys::new();
    let mut fold = Fold::for_size(size, keys.clone());
    fold.lines = fold_lines(src, size, split_min, &keys, &mut fold)?;
    fold.finish(size).map_err(CoreError::Failure)?;
    Ok(fold)
}

/// Read the lines of bytes `[0, size)` into `folder`, in file order, on two threads
/// for `split_min` bytes or more; ids are hashed with `keys`, the folder's. Returns
/// how many lines it read.
pub fn fold_lines<S: Source + Sync + ?Sized, F: Folder>(
    src: &S,
    size: u64,
    split_min: u64,
    keys: &IdKeys,
    folder: &mut F,
) -> CoreResult<u64> {
    fold_lines_from(src, 0, 0, size, split_min, keys, folder)
}

/// [`fold_lines`] of bytes `[start, size)`, `start` a line's start, its lines numbered
/// after `lines_before` (a fold resumed from a side index).
pub fn fold_lines_from<S: Source + Sync + ?Sized, F: Folder>(
    src: &S,
    start: u64,
    lines_before: u64,
    size: u64,
    split_min: u64,
    keys: &IdKeys,
    folder: &mut F,
) -> CoreResult<u64> {
    let span = size.saturating_sub(start);
    let split = if span >= split_min {
        line_start_after(src, start + span / 100 * SPLIT_PERCENT, size)?
    } else {
        size
    };
    if split >= size {
        return Ok(fold_range(src, start, size, lines_before, keys, folder)? - lines_before);
    }
    // The first part is folded as it is read; the second is validated and
    // reduced meanwhile and handed over in batches, which the first thread folds,
    // in order, as soon as its own part is done (while the second still reads).
    let (batches, handed) = mpsc::channel::<Vec<Reduced>>();
    let (folded, second) = std::thread::scope(|scope| {
        let second_keys = keys.clone();
        let second =
            scope.spawn(move || reduce_range::<S, F>(src, split, size, &second_keys, &batches));
        // `handed` is dropped when this returns, so a second thread still
        // reading after a failure here stops at its next batch.
        let folded = fold_range(src, start, split, lines_before, keys, folder)
            .and_then(|first_lines| fold_handed(folder, handed, first_lines));
        (folded, second.join())
    });
    let first_lines = folded?;
    let second_lines = second
        .map_err(|_| CoreError::Io(std::io::Error::other("the replay's second thread failed")))??;
    Ok(first_lines - lines_before + second_lines)
}

/// Fold the second part's records as they arrive, numbering their lines after
/// the first part's (`first_lines`: the number of the last line before them); ends
/// when the second thread is done (or at a failure). Returns `first_lines`.
fn fold_handed<F: Folder>(
    folder: &mut F,
    handed: mpsc::Receiver<Vec<Reduced>>,
    first_lines: u64,
) -> CoreResult<u64> {
    for batch in handed {
        let mut items = batch.into_iter();
        while let Some(item) = items.next() {
            if let Some(Reduced::Record(ahead)) = items.as_slice().get(PREFETCH_AHEAD - 1) {
                folder.prefetch(ahead.id_hash);
            }
            match item {
                Reduced::Record(mut rec) => {
                    rec.line += first_lines;
                    folder.feed(rec).map_err(CoreError::Failure)?;
                }
                Reduced::Bad(mut bad) => {
                    bad.line += first_lines;
                    folder.bad(bad).map_err(CoreError::Failure)?;
                }
            }
        }
    }
    Ok(first_lines)
}

/// Fold the lines of `[start, end)`, numbered after `lines_before`; returns the number
/// of the last line it read (`lines_before` plus the lines read).
fn fold_range<S: Source + ?Sized, F: Folder>(
    src: &S,
    start: u64,
    end: u64,
    lines_before: u64,
    keys: &IdKeys,
    folder: &mut F,
) -> CoreResult<u64> {
    let mut reader = LineReader::new(src, start, end);
    // Each record is folded after the next one is read, so that its id's slot in
    // the table, fetched when it was read, is in the cache by then. What is reported
    // stays the first failure in file order: the held record is folded before the
    // next line's failure (or read error) is.
    let mut held: Option<Record> = None;
    loop {
        let next = next_record(&mut reader, keys);
        if let Ok(Some(Ok(rec))) = &next {
            folder.prefetch(rec.id_hash);
        }
        if let Some(rec) = held.take() {
            folder.feed(rec).map_err(CoreError::Failure)?;
        }
        match next? {
            None => return Ok(lines_before + reader.lines),
            Some(Ok(mut rec)) => {
                rec.line += lines_before;
                held = Some(rec);
            }
            Some(Err(mut bad)) => {
                bad.line += lines_before;
                folder.bad(bad).map_err(CoreError::Failure)?
            }
        }
    }
}

/// The next line that is not blank, validated and reduced (`Err`: why it is not an
/// envelope); None at the end of the range.
fn next_record<S: Source + ?Sized>(
    reader: &mut LineReader<'_, S>,
    keys: &IdKeys,
) -> CoreResult<Option<Result<Record, BadLine>>> {
    // Most lines are parsed where they start in the buffer, their `\n` found by the
    // parse itself; a line that parse does not settle (malformed, blank, not all
    // read yet, ...) is cut at its `\n` and read alone, which gives every verdict.
    if let Some((line, offset, buf)) = reader.buffered() {
        if let Some((record, len)) = record_at_start(buf, line, offset, keys) {
            reader.skip_line(len);
            return Ok(Some(record));
        }
    }
    while let Some((line, offset, raw)) = reader.next_line()? {
        if !is_blank(raw) {
            return Ok(Some(record_of(raw, line, offset, keys)));
        }
    }
    Ok(None)
}

/// Validate and reduce the lines of `[start, end)` for `F`, handing them over in
/// batches (see [`batch_size`]), stopping at the first bad one if `F` stops there
/// (or when nobody takes them any more). Returns how many lines it read.
fn reduce_range<S: Source + ?Sized, F: Folder>(
    src: &S,
    start: u64,
    end: u64,
    keys: &IdKeys,
    out: &mpsc::Sender<Vec<Reduced>>,
) -> CoreResult<u64> {
    let mut reader = LineReader::new(src, start, end);
    let mut sent = 0;
    let mut batch = Vec::with_capacity(batch_size(sent));
    while let Some(reduced) = next_record(&mut reader, keys)? {
        match reduced {
            Ok(rec) => batch.push(Reduced::Record(rec)),
            Err(bad) => {
                batch.push(Reduced::Bad(bad));
                if F::STOPS_AT_BAD {
                    break;
                }
            }
        }
        if batch.len() == batch.capacity() {
            sent += 1;
            let full = std::mem::replace(&mut batch, Vec::with_capacity(batch_size(sent)));
            if out.send(full).is_err() {
                // The first part failed: its error is the one reported.
                return Ok(reader.lines);
            }
        }
    }
    // A closed channel here means the same as above.
    let _ = out.send(batch);
    Ok(reader.lines)
}

/// The capacity of the `n`-th batch the second thread hands over: [`BATCH`]
/// records, and a page's worth more for each batch before it.
///
/// Why so big, and growing: glibc serves a block from `mmap`, and returns it to the
/// system when freed, only when it is at least its mmap threshold, which rises to the
/// size of each mmapped block freed. Batches of 1,024 records (180 KB) fell below it
/// (the read buffers had raised it past 1 MiB), came from the second thread's heap,
/// and stayed resident there once the first thread had freed them: a 256 MB load's
/// peak RSS rose from 57 to 63-68 MiB. Batches of 1.4 MB, each a page bigger than the
/// last, are mapped and unmapped: 52-54 MiB, at the same speed.
fn batch_size(n: usize) -> usize {
    BATCH + n * (4096 / std::mem::size_of::<Reduced>().max(1) + 1)
}

/// The offset just past the first `\n` at or after `from` (or `end`).
pub fn line_start_after<S: Source + ?Sized>(src: &S, from: u64, end: u64) -> CoreResult<u64> {
    let mut buf = vec![0u8; 64 << 10];
    let mut at = from;
    while at < end {
        let want = usize::try_from(end - at)
            .unwrap_or(usize::MAX)
            .min(buf.len());
        let chunk = buf.get_mut(..want).unwrap_or_default();
        let got = read_full(src, chunk, at)?;
        if let Some(i) = memchr::memchr(b'\n', chunk.get(..got).unwrap_or_default()) {
            return Ok(at + i as u64 + 1);
        }
        if got < want {
            return Ok(at + got as u64);
        }
        at += want as u64;
    }
    Ok(end)
}
