//! SIMD: the scan of one JSON string's content, a block of bytes at a time.
//!
//! Special: `"`, `\` and control bytes (< 0x20), the only bytes a string scan must
//! look at. Bytes >= 0x80 are ordinary here: the parser validates a line's UTF-8 in
//! one pass of its own (`simdutf8`), so non-ASCII text costs no more per byte than
//! ASCII. With AVX2 (detected at run time) a string's first block is 32 bytes and the
//! next ones 64 (two loads, one block's bit work); else blocks are 16 bytes (SSE2,
//! the x86_64 baseline); other targets, and the last bytes of a line, go byte by byte.
//!
//! Within a block, which bytes are escaped follows from the backslash runs alone
//! (simdjson's odd-run carry), so the closing quote, a control byte and an invalid
//! escape are found with bit operations, without visiting each escape; only `\u`
//! escapes are read one by one (hex digits, surrogate pairs).

use super::strings::{hex4, pair_low};

/// How many bytes a block holds; chosen once per parse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Width {
    /// Byte by byte only (other targets; the tests' reference).
    Scalar,
    /// 16 bytes (SSE2).
    Sse2,
    /// 64 or 32 bytes where that many are left, else 16 (AVX2, detected at run time).
    Avx2,
}

impl Width {
    /// The widest this processor runs.
    #[inline]
    pub fn detect() -> Width {
        #[cfg(target_arch = "x86_64")]
        {
            // std caches the CPUID answer: this is one load and a test.
            if std::is_x86_feature_detected!("avx2") {
                Width::Avx2
            } else {
                Width::Sse2
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            Width::Scalar
        }
    }

    /// Every width this processor runs, narrowest first (for tests).
    pub fn all_supported() -> Vec<Width> {
        let mut out = vec![Width::Scalar];
        #[cfg(target_arch = "x86_64")]
        {
            out.push(Width::Sse2);
            if std::is_x86_feature_detected!("avx2") {
                out.push(Width::Avx2);
            }
        }
        out
    }

    /// The special bytes of the block at `s[i..]` as a bit mask (bit k: byte i + k)
    /// and the block's length, or None where fewer than 16 bytes are left (or for
    /// [`Width::Scalar`]).
    #[inline(always)]
    pub fn block(self, s: &[u8], i: usize) -> Option<(u32, usize)> {
        #[cfg(target_arch = "x86_64")]
        {
            let left = s.len().checked_sub(i)?;
            match self {
                Width::Scalar => None,
                Width::Avx2 if left >= 32 => {
                    // SAFETY: `Avx2` is only ever chosen where the processor has AVX2
                    // (`detect`, `all_supported`); the load reads s[i..i + 32], inside
                    // the slice by the check above.
                    Some((unsafe { x86::special_mask_avx2(s.as_ptr().add(i)) }, 32))
                }
                _ if left >= 16 => {
                    // SAFETY: SSE2 is part of the x86_64 baseline; the load reads
                    // s[i..i + 16], inside the slice by the check above.
                    Some((unsafe { x86::special_mask_sse2(s.as_ptr().add(i)) }, 16))
                }
                _ => None,
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = (self, s, i);
            None
        }
    }

    /// The first index at or after `i` holding a special byte, or `s.len()`.
    #[inline]
    pub fn skip_plain(self, s: &[u8], mut i: usize) -> usize {
        while let Some((mask, width)) = self.block(s, i) {
            if mask != 0 {
                return i + mask.trailing_zeros() as usize;
            }
            i += width;
        }
        while let Some(&b) = s.get(i) {
            if is_special(b) {
                break;
            }
            i += 1;
        }
        i
    }
}

/// The first index at or after `i` holding `"`, `\\`, or a control byte (< 0x20),
/// or `s.len()`. Bytes >= 0x80 are ordinary (for callers that validated UTF-8).
#[inline]
pub fn skip_plain_string_bytes(s: &[u8], i: usize) -> usize {
    Width::detect().skip_plain(s, i)
}

/// How a string's scan ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StringEnd {
    /// The index just past the closing quote.
    pub after: usize,
    /// Some `\\u` escape is a lone surrogate.
    pub lone: bool,
}

/// Scan the string whose content starts at `start` (just past its opening quote):
/// where it ends and whether it holds a lone surrogate escape, or None when it is
/// malformed (a control byte, an invalid escape, or no closing quote). Exactly the
/// verdict of the byte-by-byte reading at every width.
#[inline]
pub fn scan_string(width: Width, s: &[u8], start: usize) -> Option<StringEnd> {
    #[cfg(target_arch = "x86_64")]
    {
        let blocks = match width {
            Width::Scalar => Blocks::Tail {
                at: start,
                lone: false,
            },
            // SAFETY: `Avx2` is only ever chosen where the processor has AVX2.
            Width::Avx2 => unsafe { x86::blocks_avx2(s, start) },
            Width::Sse2 => x86::blocks_sse2(s, start),
        };
        match blocks {
            Blocks::End(end) => Some(end),
            Blocks::Bad => None,
            Blocks::Tail { at, lone } => scan_scalar(s, at, lone),
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = width;
        scan_scalar(s, start, false)
    }
}

/// What the block scan left to do.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
enum Blocks {
    End(StringEnd),
    Bad,
    /// Fewer than a block's bytes are left: go on byte by byte from `at`, which is
    /// never inside an escape.
    Tail {
        at: usize,
        lone: bool,
    },
}

/// The byte-by-byte scan from `i` (not inside an escape).
fn scan_scalar(s: &[u8], mut i: usize, mut lone: bool) -> Option<StringEnd> {
    loop {
        while s.get(i).is_some_and(|&b| !is_special(b)) {
            i += 1;
        }
        match s.get(i)? {
            b'"' => return Some(StringEnd { after: i + 1, lone }),
            b'\\' => match s.get(i + 1)? {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => i += 2,
                b'u' => i = u_escape(s, i, &mut lone)?,
                _ => return None,
            },
            _ => return None, // a control byte
        }
    }
}

/// The `\\uXXXX` escape whose backslash is at `at`, joined with an immediately
/// following low surrogate escape when it is a high one (as CPython joins them):
/// the index after it, or None when the hex digits are not there.
#[inline]
fn u_escape(s: &[u8], at: usize, lone: &mut bool) -> Option<usize> {
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
fn block_verdict(
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

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{block_verdict, Blocks};
    use std::arch::x86_64::{
        __m128i, __m256i, _mm256_and_si256, _mm256_cmpeq_epi8, _mm256_loadu_si256, _mm256_min_epu8,
        _mm256_movemask_epi8, _mm256_set1_epi8, _mm256_setzero_si256, _mm256_shuffle_epi8,
        _mm256_srli_epi16, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_min_epu8, _mm_movemask_epi8,
        _mm_or_si128, _mm_set1_epi8,
    };

    /// The letters a backslash may escape, `"` `\\` `/` `b` `f` `n` `r` `t` `u`.
    const ESCAPE_LETTERS: [u8; 9] = [b'"', b'\\', b'/', b'b', b'f', b'n', b'r', b't', b'u'];

    /// What one block leaves for the next.
    struct State {
        carry: u64,
        lone: bool,
        u_done: usize,
    }

    impl State {
        fn new() -> Self {
            State {
                carry: 0,
                lone: false,
                u_done: 0,
            }
        }

        /// Where the byte-by-byte tail starts: past a surrogate pair already read,
        /// or at the backslash whose escaped byte is the tail's first.
        fn tail(&self, at: usize) -> Blocks {
            let at = if self.u_done > at {
                self.u_done
            } else {
                at - self.carry as usize
            };
            Blocks::Tail {
                at,
                lone: self.lone,
            }
        }

        /// A block's verdict as the scan goes on: None to go to the next block.
        #[inline(always)]
        fn step(
            &mut self,
            s: &[u8],
            block: usize,
            bits: u32,
            classes: (u64, u64, u64),
            escape_chars: impl FnOnce() -> (u64, u64),
        ) -> Option<Blocks> {
            let (quote, backslash, control) = classes;
            // Most blocks hold no special byte: one test skips them.
            if self.carry == 0 && quote | backslash | control == 0 {
                return None;
            }
            let verdict = block_verdict(
                s,
                block,
                bits,
                quote,
                backslash,
                control,
                escape_chars,
                &mut self.carry,
                &mut self.lone,
                &mut self.u_done,
            );
            match verdict {
                None => Some(Blocks::Bad),
                Some(Some(end)) => Some(Blocks::End(end)),
                Some(None) => None,
            }
        }
    }

    /// The quote, backslash and control bytes of 16 bytes.
    #[inline(always)]
    fn classes_sse2(v: __m128i) -> (u64, u64, u64) {
        // SAFETY: SSE2 is part of the x86_64 baseline.
        unsafe {
            let bits = |m: __m128i| _mm_movemask_epi8(m) as u32 as u64;
            // v <= 0x1f (unsigned) exactly when min(v, 0x1f) == v.
            let control = _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1f)), v);
            (
                bits(_mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8))),
                bits(_mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8))),
                bits(control),
            )
        }
    }

    /// The valid escape letters and the `u`s of 16 bytes.
    #[inline(always)]
    fn escape_chars_sse2(v: __m128i) -> (u64, u64) {
        // SAFETY: SSE2 is part of the x86_64 baseline.
        unsafe {
            let eq = |c: u8| _mm_cmpeq_epi8(v, _mm_set1_epi8(c as i8));
            let valid = ESCAPE_LETTERS
                .iter()
                .fold(_mm_set1_epi8(0), |acc, &c| _mm_or_si128(acc, eq(c)));
            (
                _mm_movemask_epi8(valid) as u32 as u64,
                _mm_movemask_epi8(eq(b'u')) as u32 as u64,
            )
        }
    }

    /// The quote, backslash and control bytes of 32 bytes.
    ///
    /// # Safety
    /// The processor must have AVX2.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn classes_avx2(v: __m256i) -> (u64, u64, u64) {
        let bits = |m: __m256i| _mm256_movemask_epi8(m) as u32 as u64;
        let control = _mm256_cmpeq_epi8(_mm256_min_epu8(v, _mm256_set1_epi8(0x1f)), v);
        (
            bits(_mm256_cmpeq_epi8(v, _mm256_set1_epi8(b'"' as i8))),
            bits(_mm256_cmpeq_epi8(v, _mm256_set1_epi8(b'\\' as i8))),
            bits(control),
        )
    }

    /// Bit k set: the high nibble is the k-th of 2, 5, 6, 7 (twice: `vpshufb` looks up
    /// each 16-byte lane in its own copy).
    const LETTER_BY_HIGH: [u8; 32] = twice([0, 0, 1, 0, 0, 2, 4, 8, 0, 0, 0, 0, 0, 0, 0, 0]);
    /// Bit k set: a letter with this low nibble has the k-th high nibble above:
    /// 0x22 `"`, 0x2F `/`; 0x5C `\\`; 0x62 `b`, 0x66 `f`, 0x6E `n`; 0x72 `r`, 0x74 `t`,
    /// 0x75 `u`.
    const LETTER_BY_LOW: [u8; 32] = twice([0, 0, 13, 0, 8, 8, 4, 0, 0, 0, 0, 0, 2, 0, 4, 1]);

    const fn twice(lane: [u8; 16]) -> [u8; 32] {
        let mut out = [0; 32];
        let mut k = 0;
        while k < 32 {
            out[k] = lane[k % 16];
            k += 1;
        }
        out
    }

    /// The valid escape letters and the `u`s of 32 bytes. A byte is a letter when
    /// the tables of its two nibbles share a bit: two table lookups instead of nine
    /// comparisons.
    ///
    /// # Safety
    /// The processor must have AVX2.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn escape_chars_avx2(v: __m256i) -> (u64, u64) {
        // SAFETY: both tables are 32 bytes.
        let (by_high, by_low) = unsafe {
            (
                _mm256_loadu_si256(LETTER_BY_HIGH.as_ptr().cast::<__m256i>()),
                _mm256_loadu_si256(LETTER_BY_LOW.as_ptr().cast::<__m256i>()),
            )
        };
        let nibble = _mm256_set1_epi8(0x0f);
        let high = _mm256_and_si256(_mm256_srli_epi16::<4>(v), nibble);
        let low = _mm256_and_si256(v, nibble);
        let shared = _mm256_and_si256(
            _mm256_shuffle_epi8(by_high, high),
            _mm256_shuffle_epi8(by_low, low),
        );
        let not_letter = _mm256_cmpeq_epi8(shared, _mm256_setzero_si256());
        (
            u64::from(!(_mm256_movemask_epi8(not_letter) as u32)),
            _mm256_movemask_epi8(_mm256_cmpeq_epi8(v, _mm256_set1_epi8(b'u' as i8))) as u32 as u64,
        )
    }

    /// The 32 bytes at `i`, if that many are left.
    ///
    /// # Safety
    /// The processor must have AVX2.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn load32(s: &[u8], i: usize) -> Option<__m256i> {
        if i.checked_add(32)? > s.len() {
            return None;
        }
        // SAFETY: the check above keeps s[i..i + 32] inside the slice.
        Some(unsafe { _mm256_loadu_si256(s.as_ptr().add(i).cast::<__m256i>()) })
    }

    /// One 32-byte block of the scan. The escape letters are looked at only where a
    /// backslash can escape something (computed here, not in a closure: as a
    /// closure it was not inlined, and it kept the block on the stack).
    ///
    /// # Safety
    /// The processor must have AVX2.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn step_avx2(s: &[u8], i: usize, v: __m256i, st: &mut State) -> Option<Blocks> {
        let classes = classes_avx2(v);
        let escape_chars = if classes.1 | st.carry != 0 {
            escape_chars_avx2(v)
        } else {
            (0, 0)
        };
        st.step(s, i, 32, classes, || escape_chars)
    }

    /// One 64-byte block of the scan (two 32-byte loads, one block's bookkeeping).
    ///
    /// # Safety
    /// The processor must have AVX2.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn step_avx2_64(
        s: &[u8],
        i: usize,
        (lo, hi): (__m256i, __m256i),
        st: &mut State,
    ) -> Option<Blocks> {
        let join = |a: u64, b: u64| a | (b << 32);
        let (lo_classes, hi_classes) = (classes_avx2(lo), classes_avx2(hi));
        let classes = (
            join(lo_classes.0, hi_classes.0),
            join(lo_classes.1, hi_classes.1),
            join(lo_classes.2, hi_classes.2),
        );
        let escape_chars = if classes.1 | st.carry != 0 {
            let (lo_chars, hi_chars) = (escape_chars_avx2(lo), escape_chars_avx2(hi));
            (join(lo_chars.0, hi_chars.0), join(lo_chars.1, hi_chars.1))
        } else {
            (0, 0)
        };
        st.step(s, i, 64, classes, || escape_chars)
    }

    /// The 16 bytes at `i`, if that many are left.
    #[inline(always)]
    fn load16(s: &[u8], i: usize) -> Option<__m128i> {
        if i.checked_add(16)? > s.len() {
            return None;
        }
        // SAFETY: SSE2 is part of the x86_64 baseline; the check above keeps
        // s[i..i + 16] inside the slice.
        Some(unsafe { _mm_loadu_si128(s.as_ptr().add(i).cast::<__m128i>()) })
    }

    /// One 16-byte block of the scan.
    #[inline(always)]
    fn step_sse2(s: &[u8], i: usize, v: __m128i, st: &mut State) -> Option<Blocks> {
        st.step(s, i, 16, classes_sse2(v), || escape_chars_sse2(v))
    }

    /// 16 bytes at a time.
    #[inline]
    pub fn blocks_sse2(s: &[u8], mut i: usize) -> Blocks {
        let mut st = State::new();
        while let Some(v) = load16(s, i) {
            if let Some(done) = step_sse2(s, i, v, &mut st) {
                return done;
            }
            i += 16;
        }
        st.tail(i)
    }

    /// A first block of 32 bytes (keys, ids and most short values end in it), then
    /// 64 bytes at a time, then one block of 32 and one of 16 where fewer are left.
    ///
    /// # Safety
    /// The processor must have AVX2.
    #[target_feature(enable = "avx2")]
    pub unsafe fn blocks_avx2(s: &[u8], mut i: usize) -> Blocks {
        let mut st = State::new();
        if let Some(v) = load32(s, i) {
            if let Some(done) = step_avx2(s, i, v, &mut st) {
                return done;
            }
            i += 32;
            while let Some(second) = i.checked_add(32).and_then(|mid| load32(s, mid)) {
                // SAFETY: s[i + 32..i + 64] is inside the slice (just loaded), so
                // s[i..i + 32] is too.
                let first = unsafe { _mm256_loadu_si256(s.as_ptr().add(i).cast::<__m256i>()) };
                if let Some(done) = step_avx2_64(s, i, (first, second), &mut st) {
                    return done;
                }
                i += 64;
            }
            if let Some(v) = load32(s, i) {
                if let Some(done) = step_avx2(s, i, v, &mut st) {
                    return done;
                }
                i += 32;
            }
        }
        if let Some(v) = load16(s, i) {
            if let Some(done) = step_sse2(s, i, v, &mut st) {
                return done;
            }
            i += 16;
        }
        st.tail(i)
    }

    /// The special bytes of the 16 bytes at `p`.
    ///
    /// # Safety
    /// `p..p + 16` must be readable (SSE2 is always there on x86_64).
    #[inline(always)]
    pub unsafe fn special_mask_sse2(p: *const u8) -> u32 {
        let (quote, backslash, control) = classes_sse2(_mm_loadu_si128(p.cast::<__m128i>()));
        (quote | backslash | control) as u32
    }

    /// The special bytes of the 32 bytes at `p`.
    ///
    /// # Safety
    /// The processor must have AVX2, and `p..p + 32` must be readable.
    #[inline]
    #[target_feature(enable = "avx2")]
    pub unsafe fn special_mask_avx2(p: *const u8) -> u32 {
        let (quote, backslash, control) = classes_avx2(_mm256_loadu_si256(p.cast::<__m256i>()));
        (quote | backslash | control) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_width_finds_the_same_first_special_byte() {
        // Every position of a special byte in buffers of every length up to 80, with
        // non-ASCII filler around it: all widths agree with the byte-by-byte scan.
        let filler = "é日😀a".as_bytes();
        for len in 0..80usize {
            let base: Vec<u8> = filler.iter().copied().cycle().take(len).collect();
            for special in [b'"', b'\\', 0x00, 0x1f, b'\n'] {
                for pos in 0..=len {
                    let mut s = base.clone();
                    if pos < len {
                        s[pos] = special;
                    }
                    for start in 0..=len.min(40) {
                        let want = Width::Scalar.skip_plain(&s, start);
                        for w in Width::all_supported() {
                            assert_eq!(w.skip_plain(&s, start), want, "{w:?} {len} {pos} {start}");
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod differential {
    use super::*;

    /// Pieces whose concatenations exercise every path: plain ASCII, multi-byte
    /// characters (split across blocks by the prefix lengths below), every escape,
    /// backslash runs, surrogate pairs and halves, and malformed escapes and bytes.
    const PIECES: [&[u8]; 26] = [
        b"a",
        b"abcdefghijklmno",
        "é".as_bytes(),
        "日本".as_bytes(),
        "😀".as_bytes(),
        b"\\\"",
        b"\\\\",
        b"\\\\\\\\\\\\",
        b"\\\\\\",
        b"\\/",
        b"\\b\\f\\n\\r\\t",
        b"\\u00e9",
        b"\\uD83D\\uDE00",
        b"\\ud800",
        b"\\udc00",
        b"\\ud800\\u0041",
        b"\\u12",
        b"\\uZZZZ",
        b"\\x",
        b"\\",
        b"\"",
        b"\x01",
        b"\x1f",
        b"\x7f",
        b"\t",
        b"                ",
    ];

    /// A small deterministic generator (xorshift): the test needs no dependency.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    #[test]
    fn every_width_agrees_with_the_byte_by_byte_scan() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let widths = Width::all_supported();
        let mut checked = 0;
        for _ in 0..20_000 {
            let mut content = Vec::new();
            // Up to 40 pieces: long enough for the AVX2 scan's 64-byte blocks.
            let most = if rng.below(4) == 0 { 40 } else { 12 };
            for _ in 0..rng.below(most) {
                let piece = PIECES[rng.below(PIECES.len())];
                // Mostly valid pieces: a malformed one ends most strings early.
                if piece.len() <= 2 && rng.below(3) != 0 && piece != b"a" {
                    continue;
                }
                content.extend_from_slice(piece);
            }
            // Every alignment of the string against 16- and 32-byte blocks, and
            // every end of the line (cut short, or with bytes after the quote).
            for prefix in 0..33 {
                let mut line = vec![b'x'; prefix];
                line.push(b'"');
                line.extend_from_slice(&content);
                line.extend_from_slice(b"\"\\\x01 tail");
                for cut in [line.len(), prefix + 1 + content.len() + 1, line.len() - 4] {
                    let s = &line[..cut.min(line.len())];
                    let want = scan_scalar(s, prefix + 1, false);
                    for &w in &widths {
                        assert_eq!(
                            scan_string(w, s, prefix + 1),
                            want,
                            "{w:?} {:?}",
                            String::from_utf8_lossy(s)
                        );
                    }
                    checked += 1;
                }
            }
        }
        assert!(checked > 1_000_000);
    }

    #[test]
    fn backslash_runs_across_block_edges() {
        // Runs of 1..70 backslashes ending at every offset, then a quote: the
        // quote closes the string exactly when the run is even. Offsets up to 170
        // cross the AVX2 scan's edges at 32, 96 and 160 (one block of 32, then 64s).
        for run in 1..70usize {
            for prefix in 0..100usize {
                let mut line = b"\"".to_vec();
                line.extend(std::iter::repeat_n(b'a', prefix));
                line.extend(std::iter::repeat_n(b'\\', run));
                line.extend_from_slice(b"\"n\"");
                line.extend(std::iter::repeat_n(b'b', 40));
                let want = scan_scalar(&line, 1, false);
                let closes_at = 1 + prefix + run + 1;
                assert_eq!(
                    want.map(|e| e.after),
                    Some(if run % 2 == 0 {
                        closes_at
                    } else {
                        closes_at + 2
                    })
                );
                for w in Width::all_supported() {
                    assert_eq!(scan_string(w, &line, 1), want, "{w:?} {run} {prefix}");
                }
            }
        }
    }
}
