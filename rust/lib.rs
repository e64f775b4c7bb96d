//! The native core of `llm-agent-session` (SPEC section 7).
//!
//! Every module here mirrors the pure-Python reference in
//! `python/llm_agent_session/_pure/` (`lines.py`, `tail.py`, `fold.py`, `replay.py`)
//! verdict for verdict and reason string for reason string; the differential tests
//! hold them together.
//!
//! The core knows nothing about Python: failures are data (`error::CoreError`,
//! `envelope::LineProblem`). Without the `python` feature (`cargo test`) it is:
//!
//! * `json_grammar`, `envelope`: one line validated as an envelope, without
//!   building anything; `json_view` walks what validated by span;
//! * `tail`, `repair_copy`: the tail check and the verbatim repair copy;
//! * `replay`: stream the file in bounded buffers (two threads for big files),
//!   reduce each line to a record, fold the records;
//! * `scan`: the lenient scan of peek, salvage and fork;
//! * `survey`: peek's counts, live-message count and open tool operations.
//!
//! With it, `py_build` turns validated JSON into Python objects, `py_replay` builds
//! what survived the fold, `lazy_events` builds envelopes on access, and
//! `python_edge` is the module and the one place errors become exceptions.

pub mod envelope;
pub mod envelope_skim;
pub mod error;
pub mod file_io;
pub mod json_grammar;
pub mod json_view;
pub mod line_format;
pub mod repair_copy;
pub mod replay;
pub mod scan;
pub mod string_scan;
pub mod survey;
pub mod tail;

// The module reads and writes through the descriptors Python hands it, which is Unix
// I/O; elsewhere (Windows) `python_stub` is an importable module without file I/O, and
// the pure-Python core does everything.
#[cfg(all(feature = "python", unix))]
mod lazy_events;
#[cfg(all(feature = "python", unix))]
mod py_build;
#[cfg(all(feature = "python", unix))]
mod py_encode;
#[cfg(all(feature = "python", unix))]
mod py_import;
#[cfg(all(feature = "python", unix))]
mod py_replay;
#[cfg(all(feature = "python", unix))]
mod python_edge;
#[cfg(all(feature = "python", not(unix)))]
mod python_stub;
