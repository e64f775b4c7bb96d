//! Envelope times as a side index keeps them (docs/FORMAT.md, "The side index"): each
//! envelope's `ts` as a number in time order ([`time_key`]), and per block of
//! [`TIME_BLOCK`] envelopes the largest of them, so that a reader finds "the first
//! envelope in file order at or after a time" by reading one block's lines, not the
//! file. `python/llm_agent_session/_times.py` is the Python twin of [`time_key`].

/// Envelopes a block of the `TIME` section covers.
pub const TIME_BLOCK: u64 = 64;

/// What [`time_key`] gives a `ts` that is not a time.
pub const NOT_A_TIME: i64 = -1;

/// The value of the ASCII digits `b[from..to]`; None where one is not a digit.
fn digits(b: &[u8], from: usize, to: usize) -> Option<i64> {
    b.get(from..to)?.iter().try_fold(0i64, |acc, &c| {
        c.is_ascii_digit().then(|| acc * 10 + i64::from(c - b'0'))
    })
}

/// `ts` as a number in time order: for a `ts` whose first 19 characters are
/// `YYYY-MM-DDTHH:MM:SS` (ASCII digits; `T`, `t` or a space between date and time),
/// `((((Y * 13 + M) * 32 + D) * 24 + h) * 3600 + m * 60 + s) * 1_000_000 + micro`,
/// where `micro` is the first six ASCII digits after a `.` that follows them (padded
/// with zeros; none: 0); whatever follows is not read. [`NOT_A_TIME`] for any other `ts`.
/// Not a count of microseconds: only the order counts (no calendar is consulted).
pub fn time_key(ts: &str) -> i64 {
    let b = ts.as_bytes();
    let separators = b.len() >= 19
        && b[4] == b'-'
        && b[7] == b'-'
        && matches!(b[10], b'T' | b't' | b' ')
        && b[13] == b':'
        && b[16] == b':';
    if !separators {
        return NOT_A_TIME;
    }
    let fields = (
        digits(b, 0, 4),
        digits(b, 5, 7),
        digits(b, 8, 10),
        digits(b, 11, 13),
        digits(b, 14, 16),
        digits(b, 17, 19),
    );
    let (Some(y), Some(mo), Some(d), Some(h), Some(mi), Some(s)) = fields else {
        return NOT_A_TIME;
    };
    let mut micro = 0i64;
    if b.get(19) == Some(&b'.') {
        let mut taken = 0;
        for &c in b.get(20..).unwrap_or_default() {
            if taken == 6 || !c.is_ascii_digit() {
                break;
            }
            micro = micro * 10 + i64::from(c - b'0');
            taken += 1;
        }
        for _ in taken..6 {
            micro *= 10;
        }
    }
    let seconds = ((((y * 13 + mo) * 32 + d) * 24 + h) * 3600) + mi * 60 + s;
    seconds * 1_000_000 + micro
}

/// The blocks of an index resumed after `first` envelopes: `prior`'s (the blocks of
/// those envelopes) and `new`'s (a track's, from the block envelope `first` is in); a
/// block both hold part of takes the larger key.
pub fn merged_blocks(prior: &[i64], first: u64, new: &[i64]) -> Vec<i64> {
    let mut out = prior.to_vec();
    let shared = usize::from(!first.is_multiple_of(TIME_BLOCK));
    for (k, &key) in new.iter().enumerate() {
        match (k < shared).then(|| out.last_mut()).flatten() {
            Some(last) => *last = (*last).max(key),
            None => out.push(key),
        }
    }
    out
}

/// How many blocks `n` envelopes take.
pub fn blocks_of(n: u64) -> u64 {
    n.div_ceil(TIME_BLOCK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_in_order_have_keys_in_order() {
        let ts = [
            "2025-12-31T23:59:59.999999Z",
            "2026-01-01T00:00:00Z",
            "2026-01-01T00:00:00.000001Z",
            "2026-01-01t00:00:00.5",
            "2026-01-01 00:00:01",
            "2026-01-02T00:00:00.000000Z",
            "2026-02-01T00:00:00.000000Z",
        ];
        let keys: Vec<i64> = ts.iter().map(|t| time_key(t)).collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "{keys:?}");
    }

    #[test]
    fn the_fraction_is_its_first_six_digits() {
        let base = time_key("2026-01-01T00:00:00");
        assert_eq!(time_key("2026-01-01T00:00:00.5Z") - base, 500_000);
        assert_eq!(time_key("2026-01-01T00:00:00.1234567Z") - base, 123_456);
        assert_eq!(time_key("2026-01-01T00:00:00.12+05:00") - base, 120_000);
        assert_eq!(time_key("2026-01-01T00:00:00.") - base, 0);
        assert_eq!(time_key("2026-01-01T00:00:00+05:00") - base, 0);
    }

    #[test]
    fn anything_else_is_not_a_time() {
        for ts in [
            "",
            "t",
            "2026-01-01T00:00:0",
            "2026-01-01X00:00:00",
            "2026/01/01T00:00:00",
            "2026-01-01T00-00-00",
            "+026-01-01T00:00:00",
            "２026-01-01T00:00:00",
            "2026-0é-01T00:00:00",
        ] {
            assert_eq!(time_key(ts), NOT_A_TIME, "{ts}");
        }
    }

    #[test]
    fn a_block_both_parts_hold_takes_the_larger_key() {
        assert_eq!(
            merged_blocks(&[1000, 5], 70, &[3, 127, 129]),
            vec![1000, 5, 127, 129]
        );
        assert_eq!(merged_blocks(&[1000, 5], 70, &[9, 129]), vec![1000, 9, 129]);
        assert_eq!(merged_blocks(&[1000, 5], 128, &[9]), vec![1000, 5, 9]);
        assert_eq!(merged_blocks(&[], 0, &[9]), vec![9]);
        assert_eq!(merged_blocks(&[4], 3, &[]), vec![4]);
        assert_eq!(blocks_of(130), 3);
        assert_eq!(blocks_of(128), 2);
        assert_eq!(blocks_of(0), 0);
    }
}
