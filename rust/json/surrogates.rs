//! Lone surrogate escapes: whether one survives into the value Python would build.
//!
//! The strict parse flags any lone surrogate escape it sees; only a line so flagged
//! is parsed again here, following the value as Python builds it.

use std::collections::HashMap;

use super::grammar::{parse_with, Kind, Mode, Sink, Span};
use super::simd::Width;
use super::strings::decode_string;

/// Whether a lone surrogate escape survives into the value Python would build
/// (`_has_lone_surrogate` of `json.loads`' result): an object keeps only the last
/// value of a duplicate key, so a lone surrogate in an earlier one is gone.
/// `raw` must already have parsed in `Mode::Strict`.
pub fn lone_surrogate_survives(raw: &[u8]) -> bool {
    let mut tracker = LoneTracker::default();
    // The line parsed before, so this cannot fail; if it somehow did, the flag seen
    // so far is the safer answer (refuse rather than accept).
    match parse_with(raw, Mode::Strict, Width::detect(), &mut tracker) {
        Ok(_) => tracker.result,
        Err(_) => true,
    }
}

/// Follows the value Python would build, keeping per object the last value of each
/// key, to tell whether a lone surrogate is still in it at the end.
#[derive(Default)]
struct LoneTracker {
    frames: Vec<Frame>,
    result: bool,
}

enum Frame {
    Array {
        lone: bool,
    },
    Object {
        keys_lone: bool,
        values: HashMap<Vec<u8>, bool>,
        key: Vec<u8>,
    },
}

impl LoneTracker {
    fn attach(&mut self, lone: bool) {
        match self.frames.last_mut() {
            None => self.result = lone,
            Some(Frame::Array { lone: l }) => *l |= lone,
            Some(Frame::Object { values, key, .. }) => {
                // Last wins, as in a dict.
                values.insert(std::mem::take(key), lone);
            }
        }
    }
}

impl Sink for LoneTracker {
    fn open(&mut self, kind: Kind) {
        self.frames.push(if kind == Kind::Array {
            Frame::Array { lone: false }
        } else {
            Frame::Object {
                keys_lone: false,
                values: Default::default(),
                key: Vec::new(),
            }
        });
    }
    fn key(&mut self, raw: &[u8], content: Span, lone: bool) {
        if let Some(Frame::Object { keys_lone, key, .. }) = self.frames.last_mut() {
            *keys_lone |= lone;
            *key = decode_string(raw.get(content.0..content.1).unwrap_or_default());
        }
    }
    fn scalar(&mut self, _raw: &[u8], _kind: Kind, _token: Span, lone: bool) {
        self.attach(lone);
    }
    fn close(&mut self) {
        let lone = match self.frames.pop() {
            Some(Frame::Array { lone }) => lone,
            Some(Frame::Object {
                keys_lone, values, ..
            }) => keys_lone || values.values().any(|&l| l),
            None => false,
        };
        self.attach(lone);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::grammar::strict;

    #[test]
    fn lone_surrogates_and_duplicates() {
        assert!(!strict(b"\"\\ud83d\\ude00\"").unwrap().lone_surrogate_seen);
        for lone in [
            &b"\"\\ud800\""[..],
            b"\"\\udc00\"",
            b"\"\\ud800\\ud800\\udc00\"",
            b"\"\\udc00\\ud800\"",
            b"{\"\\ud800\":1}",
        ] {
            assert!(strict(lone).unwrap().lone_surrogate_seen);
            assert!(lone_surrogate_survives(lone));
        }
        // Overridden by a later duplicate: gone from the value.
        let v = b"{\"a\":\"\\ud800\",\"\\u0061\":1}";
        assert!(strict(v).unwrap().lone_surrogate_seen);
        assert!(!lone_surrogate_survives(v));
        let v = b"{\"p\":{\"x\":[\"\\udfff\"],\"x\":{}},\"q\":2}";
        assert!(!lone_surrogate_survives(v));
        let v = b"{\"p\":{\"x\":[\"\\udfff\"],\"y\":{}},\"p\":2, \"r\":[{\"\\udc00\":1}]}";
        assert!(lone_surrogate_survives(v));
        // A duplicate key that holds one keeps it (keys are never dropped).
        let v = b"{\"\\ud800\":1,\"\\ud800\":2}";
        assert!(lone_surrogate_survives(v));
    }
}
