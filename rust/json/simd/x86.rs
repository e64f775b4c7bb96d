//! The x86_64 block scans: SSE2 (the baseline, 16 bytes) and AVX2 (detected at run time,
//! 32 then 64 bytes). Each decides a block with `block_verdict` from its masks.

use super::blocks::{block_verdict, Blocks};
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
