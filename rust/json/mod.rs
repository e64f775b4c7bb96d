//! JSON, read exactly as CPython's `json.loads` reads it, without building anything.
//!
//! Laid out by concern (as jiter lays out its parser):
//!
//! * `grammar`: the one-pass validating parse of a line ([`grammar::parse`],
//!   [`grammar::classify`]), recording the spans of the members the envelope needs;
//! * `strings`: decoding a string's escapes; `simd`: finding a string's end a block
//!   of 16 or 32 bytes at a time; `surrogates`: whether a lone surrogate escape
//!   survives into the value Python would build;
//! * `numbers`: a number's end, and whether `float()` would overflow on it;
//! * `depth`: the nesting limit and the reference's token scan;
//! * `buffers`: the vectors a thread's parses reuse;
//! * `view`: walking bytes the grammar accepted, by span.
//!
//! Nothing here knows about envelopes: `envelope` depends on this module, never
//! the reverse.
//!
//! # Why a grammar of our own, not serde_json
//!
//! Not for speed: serde_json validates at about the speed of this parser (every line
//! of a generated 64 MB transcript into `serde::de::IgnoredAny`, against
//! `grammar::parse` in strict mode; the figures are in the commit that wrote this,
//! since figures drift). The reason is the verdicts. The contract (docs/ARCHITECTURE.md's two cores) is the
//! pure core's, Python's `json.loads` plus `_pure/lines.py`, and serde_json
//! (1.0.154, default features) accepts or refuses differently:
//!
//! * Lone surrogates: `IgnoredAny` accepts `"\ud800"` without a word and
//!   `Value` refuses it ("unexpected end of hex escape"); Python accepts it, and the
//!   reference refuses a line only when one survives into the value (a duplicate
//!   key's earlier value drops it), with a reason of its own.
//! * Numbers beyond f64: without `arbitrary_precision`, `Value` refuses both
//!   `1e400` and a 400-digit integer ("number out of range"), and `IgnoredAny`
//!   accepts both; Python reads any integer exactly and refuses only a float that
//!   overflows to infinity.
//! * Depth: `Value` stops at 128 levels (its recursion limit), `IgnoredAny` at
//!   none (600 levels pass); the reference allows 512, counted by its own token
//!   scan, whose verdict ("too deep") wins over a malformation anywhere on the line.
//! * No torn-versus-corrupt verdict: the tail check must tell a line cut short
//!   from one that is whole but malformed or too deep, in the reference's order
//!   (UTF-8, depth, grammar); serde_json reports the first error it meets (`Eof`
//!   or `Syntax`, its recursion limit a `Syntax` error too), so a line malformed
//!   early and too deep later, or invalid UTF-8 after a syntax error, would get
//!   another verdict.
//!
//! Matching those would take a pass of our own around serde_json anyway, and the
//! spans of the envelope's members, which `IgnoredAny` does not give, a second.

pub mod buffers;
pub mod depth;
pub mod grammar;
mod numbers;
pub mod shapes;
pub mod simd;
pub mod strings;
pub mod surrogates;
pub mod view;
