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

#[cfg(feature = "python")]
mod lazy_events;
#[cfg(feature = "python")]
mod py_build;
#[cfg(feature = "python")]
mod py_encode;
#[cfg(feature = "python")]
mod py_replay;
#[cfg(feature = "python")]
mod python_edge;
