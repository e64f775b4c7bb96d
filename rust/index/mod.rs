//! The side index of a transcript (docs/FORMAT.md, "The side index"): where every
//! envelope is and what kind it is, its id's fingerprint, and the replay fold's state
//! at the indexed end, so that a load reads only what was appended since.
//!
//! * `hash`: CRC-32, SipHash-1-3 and the seal, as the pure core computes them;
//! * `format`: the bytes, written and read (untrusted: refused as data, never a panic;
//!   `invalid` says why);
//! * `lines`: where the indexed envelopes are, decoded from the index on access;
//! * `read`: an index file read, and sealed as it is read;
//! * `slab`: the index's bytes, shared by the sections read where they lie;
//! * `track`: what a fold notes of each envelope when an index is to be written;
//! * `build`: an index from a fold that read the file;
//! * `check`: whether an index still describes the file (identity and content);
//! * `resume`: a fold that starts where an index ends, and the checks that follow it;
//! * `replay`: a load's replay with an index, or without a usable one;
//! * `table`: what a reader that does not fold (a peek, a viewer) takes from an index;
//! * `times`: envelope times as an index keeps them, per block of envelopes.

pub mod build;
pub mod check;
pub mod format;
pub mod hash;
pub mod invalid;
pub mod lines;
pub mod read;
pub mod replay;
pub mod resume;
pub mod slab;
pub mod table;
pub mod times;
pub mod track;

#[cfg(test)]
mod tests;
