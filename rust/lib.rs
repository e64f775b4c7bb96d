//! The native core of `llm-agent-session` (docs/ARCHITECTURE.md, "Two cores, one behaviour").
//!
//! Every module here mirrors the pure-Python reference in
//! `python/llm_agent_session/_pure/` (`lines.py`, `tail_check.py`, `replay.py`,
//! `survey.py`) and the fold of `python/llm_agent_session/_fold.py`, verdict for
//! verdict and reason string for reason string; the differential tests hold them
//! together.
//!
//! The core knows nothing about Python: failures are data (`error::CoreError`,
//! `envelope::LineProblem`). Without the `python` feature (`cargo test`) it is:
//!
//! * `json`, `envelope`: one line validated as an envelope, without building
//!   anything; `json::view` walks what validated by span;
//! * `tail_check`, `repair_copy`: the tail check (docs/FORMAT.md's tail check) and the verbatim
//!   repair copy;
//! * `replay`: stream the file in bounded buffers (two threads for big files),
//!   reduce each line to a record, fold the records;
//! * `scan`: the lenient scan of peek, salvage and fork;
//! * `survey`: peek's counts, live-message count and open tool operations;
//! * `secrets`: the byte scan for secrets, which lines are worth reading in full;
//! * `columns`: the dataset pass (`llm-agent-session dataset`): one transcript's rows
//!   of the dataset tables, in Arrow's layout.
//!
//! With it, `py/` is everything that knows Python: `py/mod.rs` is the module and
//! the one place errors become exceptions, `py/named.rs` the Python classes it
//! builds, `py/build.rs` turns validated JSON into Python objects, `py/survivors.rs`
//! builds what survived the fold, `py/lazy.rs` builds envelopes on access and
//! `py/encode.rs` is the write path's serialiser.

pub mod columns;
pub mod envelope;
pub mod envelope_skim;
pub mod error;
pub mod file_io;
pub mod index;
pub mod json;
pub mod line_format;
pub mod message_rules;
pub mod repair_copy;
pub mod replay;
pub mod scan;
pub mod search;
pub mod secrets;
pub mod survey;
pub mod tail_check;

// The module reads and writes through the descriptors Python hands it, which is Unix
// I/O; elsewhere (Windows) `py/stub.rs` is an importable module without file I/O, and
// the pure-Python core does everything.
#[cfg(all(feature = "python", unix))]
mod py;
#[cfg(all(feature = "python", not(unix)))]
#[path = "py/stub.rs"]
mod py_stub;
