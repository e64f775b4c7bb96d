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

mod blocks;

pub use blocks::{is_special, StringEnd};
use blocks::{u_escape, Blocks};

#[cfg(target_arch = "x86_64")]
mod x86;

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
