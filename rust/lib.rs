//! The native core of `llm-agent-session` (SPEC section 7).
//!
//! Every module here mirrors the pure-Python reference in
//! `python/llm_agent_session/_pure/` (`lines.py`, `tail.py`) verdict for verdict and
//! reason string for reason string; the differential tests hold them together.
//! Nothing in the core knows about Python: failures are data (`error::CoreError`,
//! `envelope::LineProblem`) and `python_edge` is the one place they become exceptions.

pub mod envelope;
pub mod error;
pub mod file_io;
pub mod json_grammar;
pub mod repair_copy;
pub mod tail;

#[cfg(feature = "python")]
mod python_edge;
