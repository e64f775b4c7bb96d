//! Failures of the core as plain data; `py/mod.rs` turns them into exceptions.

use std::fmt;
use std::io;

/// The kinds of [`CoreFailure`], spelled as `llm_agent_session.errors` spells them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailureKind {
    Corrupt,
    Version,
    NotATranscript,
    /// A compaction or elision naming what the live conversation does not hold.
    Dangling,
    /// A settle of an operation that is not pending.
    UnknownOp,
}

impl FailureKind {
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::Corrupt => "corrupt",
            FailureKind::Version => "version",
            FailureKind::NotATranscript => "not-a-transcript",
            FailureKind::Dangling => "dangling",
            FailureKind::UnknownOp => "unknown-op",
        }
    }
}

/// A refusal about the transcript's content: becomes Python's `CoreFailure`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoreFailure {
    pub kind: FailureKind,
    /// 1-based line number (0 when there is no line at all).
    pub line: u64,
    /// Byte offset of the line's first byte.
    pub offset: u64,
    pub reason: String,
}

/// Everything a core operation can fail with.
#[derive(Debug)]
pub enum CoreError {
    /// The file says something we refuse (Python: `CoreFailure`).
    Failure(CoreFailure),
    /// The system call failed (Python: `OSError` with its errno).
    Io(io::Error),
    /// The file ended before the size the tail check was asked to read: it shrank
    /// between the size check and the read (Python: `ValueError`). The pure core
    /// never maps the file: it reads with `pread` as far as the file goes
    /// (`read_span` in `_pure/tail_check.py`) and checks those bytes.
    ShorterThanSize,
    /// Bytes ran out while copying (Python: `OSError` with only this message).
    Shrank { at: u64, of: u64 },
}

impl CoreError {
    pub fn failure(kind: FailureKind, line: u64, offset: u64, reason: impl Into<String>) -> Self {
        CoreError::Failure(CoreFailure {
            kind,
            line,
            offset,
            reason: reason.into(),
        })
    }
}

impl From<io::Error> for CoreError {
    fn from(e: io::Error) -> Self {
        CoreError::Io(e)
    }
}

impl fmt::Display for CoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CoreError::Failure(c) => write!(
                f,
                "{} at line {} (byte {}): {}",
                c.kind.as_str(),
                c.line,
                c.offset,
                c.reason
            ),
            CoreError::Io(e) => write!(f, "{e}"),
            CoreError::ShorterThanSize => {
                f.write_str("the file is shorter than the size to read (it shrank meanwhile)")
            }
            CoreError::Shrank { at, of } => write!(
                f,
                "the file shrank during the repair copy (at byte {at} of {of})"
            ),
        }
    }
}

impl std::error::Error for CoreError {}

pub type CoreResult<T> = Result<T, CoreError>;
