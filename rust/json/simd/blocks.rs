//! One block's verdict from its byte classes, and the escapes it must read one by one:
//! the pieces every width's scan shares (`x86` for the block loads, `mod.rs` for the
//! byte-by-byte tail). A leaf of `simd/`: it uses only `strings`.

use crate::json::strings::{hex4, pair_low};

/// How a string's scan ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StringEnd {
    /// The index just past the closing quote.
    pub after: usize,
    /// Some `\\u` escape is a lone surrogate.
    pub lone: bool,
}

/// What the block scan left to do.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(super) enum Blocks {
    End(StringEnd),
    Bad,
    /// Fewer than a block's bytes are left: go on byte by byte from `at`, which is
    /// never inside an escape.
    Tail {
        at: usize,
        lone: bool,
    },
}

/// The `\\uXXXX` escape whose backslash is at `at`, joined with an immediately
/// following low surrogate escape when it is a high one (as CPython joins them):
/// the index after it, or None when the hex digits are not there.
#[inline]
pub(super) fn u_escape(s: &[u8], at: usize, lone: &mut bool) -> Option<usize> {
    let c = hex4(s, at + 2)?;
    let mut after = at + 6;
    if (0xD800..=0xDBFF).contains(&c) {
        if pair_low(s, after).is_some() {
            after += 6;
        } else {
            *lone = true;
        }
    } else if (0xDC00..=0xDFFF).contains(&c) {
        *lone = true;
    }
    Some(after)
}

/// The bytes of a block that a backslash escapes (bit k: byte k), given the block's
/// backslashes and whether its first byte is escaped by the block before;
/// `carry` becomes whether the next block's first byte is escaped. A backslash
/// escapes the next byte unless it is itself escaped: in a run of backslashes the
/// ones at odd distance from the run's start are escaped (simdjson's
/// `find_escaped_branchless`, on `bits`-wide masks).
#[inline(always)]
fn escaped_bytes(backslash: u64, carry: &mut u64, bits: u32) -> u64 {
    const EVEN: u64 = 0x5555_5555_5555_5555;
    let full = block_mask(bits);
    let backslash = backslash & !*carry;
    let follows_escape = ((backslash << 1) | *carry) & full;
    let odd_starts = backslash & !EVEN & !follows_escape;
    let (sum, overflow) = odd_starts.overflowing_add(backslash);
    // The run that reaches the block's last byte carries out of bit `bits - 1`:
    // past the top of a narrower block, or out of the u64 for a 64-byte one.
    *carry = if bits == 64 {
        u64::from(overflow)
    } else {
        (sum >> bits) & 1
    };
    let even_starts = sum & full;
    ((EVEN ^ (even_starts << 1)) & follows_escape) & full
}

/// A mask of a block's `bits` bytes (1 <= bits <= 64).
#[inline(always)]
fn block_mask(bits: u32) -> u64 {
    u64::MAX >> (64 - bits)
}

/// One block's verdict from its byte classes: `quote`, `backslash`, `control` are
/// masks over the block at `block`; `escape_chars` gives the masks of valid escape
/// letters and of `u` (asked for only when the block escapes something).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) fn block_verdict(
    s: &[u8],
    block: usize,
    bits: u32,
    quote: u64,
    backslash: u64,
    control: u64,
    escape_chars: impl FnOnce() -> (u64, u64),
    carry: &mut u64,
    lone: &mut bool,
    u_done: &mut usize,
) -> Option<Option<StringEnd>> {
    let escaped = escaped_bytes(backslash, carry, bits);
    let ends = quote & !escaped;
    let before = if ends != 0 {
        (ends & ends.wrapping_neg()) - 1
    } else {
        block_mask(bits)
    };
    if control & before != 0 {
        return None;
    }
    let escaped = escaped & before;
    if escaped != 0 {
        let (valid, u) = escape_chars();
        if escaped & !valid != 0 {
            return None;
        }
        let mut us = escaped & u;
        while us != 0 {
            // The escape's backslash is the byte before its letter (in the block
            // before when the letter is byte 0: then block > 0).
            let at = block + us.trailing_zeros() as usize - 1;
            us &= us - 1;
            if at >= *u_done {
                *u_done = u_escape(s, at, lone)?;
            }
        }
    }
    Some((ends != 0).then(|| StringEnd {
        after: block + ends.trailing_zeros() as usize + 1,
        lone: *lone,
    }))
}

/// A byte a string scan must stop at.
#[inline(always)]
pub fn is_special(b: u8) -> bool {
    b == b'"' || b == b'\\' || b < 0x20
}
