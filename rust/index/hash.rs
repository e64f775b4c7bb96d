//! The two hashes of the side index, each the same in both cores:
//!
//! * [`crc32`]: CRC-32 (IEEE 802.3, as zlib's `crc32`, which the pure core calls): the
//!   index file's own checksum, and the content checks of the transcript it describes
//!   (its head, its last indexed line, sampled lines). It finds a changed byte; it is no
//!   defence against someone who writes both files.
//! * [`siphash13`]: SipHash-1-3 of a byte string under a 128-bit key, the key the index
//!   keeps: ids' and digests' fingerprints. The replay hashes every id with it already
//!   (`replay::id::IdKeys`), so a fingerprint costs nothing more. Keyed with random
//!   bits, ids chosen to collide cannot be written into a file in advance.
//! * [`seal`]: SipHash-1-3 in four lanes, the index file's own seal under the cache's
//!   secret key (a MAC): an index that this cache did not write, or that changed since,
//!   is refused, however well its checksums were forged.

/// CRC-32 of `data`, continuing from `crc` (0 to start), as zlib's `crc32(data, crc)`.
pub fn crc32(crc: u32, data: &[u8]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        // std caches the CPUID answer: two loads and tests.
        if data.len() >= 128
            && std::is_x86_feature_detected!("pclmulqdq")
            && std::is_x86_feature_detected!("sse4.1")
        {
            // SAFETY: the processor has both features (checked just above).
            return unsafe { clmul::crc32(crc, data) };
        }
    }
    crc32_tables(crc, data)
}

/// [`crc32`] by table lookups, on any processor.
fn crc32_tables(crc: u32, data: &[u8]) -> u32 {
    let mut c = !crc;
    let mut chunks = data.chunks_exact(16);
    for chunk in &mut chunks {
        // Slicing by 16: four table lookups a byte, no data-dependent chain within
        // the 16 (about 4 GB/s where the bytewise loop does 0.4).
        let mut word = [0u8; 16];
        word.copy_from_slice(chunk);
        let low = u32::from_le_bytes([word[0], word[1], word[2], word[3]]) ^ c;
        let [a, b, d, e] = low.to_le_bytes();
        c = TABLES[15][usize::from(a)]
            ^ TABLES[14][usize::from(b)]
            ^ TABLES[13][usize::from(d)]
            ^ TABLES[12][usize::from(e)];
        for (k, &byte) in word[4..].iter().enumerate() {
            c ^= TABLES[11 - k][usize::from(byte)];
        }
    }
    for &byte in chunks.remainder() {
        c = TABLES[0][usize::from((c as u8) ^ byte)] ^ (c >> 8);
    }
    !c
}

/// CRC-32 by carry-less multiplication (Intel's "Fast CRC Computation for Generic
/// Polynomials Using PCLMULQDQ", folding four 128-bit lanes, then a Barrett reduction;
/// the constants of the bit-reflected IEEE polynomial, as zlib-ng and Linux use them):
/// about 10 GB/s where the tables do 2. An index of a 10 GB transcript is 40 MB.
#[cfg(target_arch = "x86_64")]
mod clmul {
    use std::arch::x86_64::{
        __m128i, _mm_and_si128, _mm_clmulepi64_si128, _mm_cvtsi32_si128, _mm_extract_epi32,
        _mm_loadu_si128, _mm_set_epi32, _mm_set_epi64x, _mm_srli_si128, _mm_xor_si128,
    };

    const K1: i64 = 0x1_5444_2bd4;
    const K2: i64 = 0x1_c6e4_1596;
    const K3: i64 = 0x1_7519_97d0;
    const K4: i64 = 0x0_ccaa_009e;
    const K5: i64 = 0x1_63cd_6124;
    const P_X: i64 = 0x1_DB71_0641;
    const U_PRIME: i64 = 0x1_F701_1641;

    /// The next 16 bytes of `data`, which has at least 16.
    #[inline]
    #[target_feature(enable = "pclmulqdq", enable = "sse4.1")]
    unsafe fn next(data: &mut &[u8]) -> __m128i {
        let (head, rest) = data.split_at(16);
        *data = rest;
        // SAFETY: `head` is 16 bytes; an unaligned load reads exactly those.
        unsafe { _mm_loadu_si128(head.as_ptr().cast::<__m128i>()) }
    }

    #[inline]
    #[target_feature(enable = "pclmulqdq", enable = "sse4.1")]
    unsafe fn fold(a: __m128i, b: __m128i, keys: __m128i) -> __m128i {
        let low = _mm_clmulepi64_si128(a, keys, 0x00);
        let high = _mm_clmulepi64_si128(a, keys, 0x11);
        _mm_xor_si128(_mm_xor_si128(b, low), high)
    }

    /// # Safety
    /// The processor must have PCLMULQDQ and SSE4.1; `data` must be 64 bytes or more.
    #[target_feature(enable = "pclmulqdq", enable = "sse4.1")]
    pub unsafe fn crc32(crc: u32, mut data: &[u8]) -> u32 {
        // SAFETY (every `next` below): the loop conditions leave 16 bytes or more.
        unsafe {
            let mut x3 = next(&mut data);
            let mut x2 = next(&mut data);
            let mut x1 = next(&mut data);
            let mut x0 = next(&mut data);
            x3 = _mm_xor_si128(x3, _mm_cvtsi32_si128(!crc as i32));
            let k1k2 = _mm_set_epi64x(K2, K1);
            while data.len() >= 64 {
                x3 = fold(x3, next(&mut data), k1k2);
                x2 = fold(x2, next(&mut data), k1k2);
                x1 = fold(x1, next(&mut data), k1k2);
                x0 = fold(x0, next(&mut data), k1k2);
            }
            let k3k4 = _mm_set_epi64x(K4, K3);
            let mut x = fold(x3, x2, k3k4);
            x = fold(x, x1, k3k4);
            x = fold(x, x0, k3k4);
            while data.len() >= 16 {
                x = fold(x, next(&mut data), k3k4);
            }
            // 128 bits to 64, then the Barrett reduction to 32 (bit-reflected).
            let x = _mm_xor_si128(_mm_clmulepi64_si128(x, k3k4, 0x10), _mm_srli_si128(x, 8));
            let low32 = _mm_set_epi32(0, 0, 0, !0);
            let x = _mm_xor_si128(
                _mm_clmulepi64_si128(_mm_and_si128(x, low32), _mm_set_epi64x(0, K5), 0x00),
                _mm_srli_si128(x, 4),
            );
            let pu = _mm_set_epi64x(U_PRIME, P_X);
            let t1 = _mm_clmulepi64_si128(_mm_and_si128(x, low32), pu, 0x10);
            let t2 = _mm_clmulepi64_si128(_mm_and_si128(t1, low32), pu, 0x00);
            let c = _mm_extract_epi32(_mm_xor_si128(x, t2), 1) as u32;
            super::crc32_tables(!c, data)
        }
    }
}

/// `TABLES[0]` is the bytewise table; `TABLES[k][b]` is the CRC of byte `b` followed
/// by `k` zero bytes.
static TABLES: [[u32; 256]; 16] = tables();

const fn tables() -> [[u32; 256]; 16] {
    let mut t = [[0u32; 256]; 16];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
            k += 1;
        }
        t[0][i] = c;
        i += 1;
    }
    let mut k = 1;
    while k < 16 {
        let mut i = 0;
        while i < 256 {
            let prev = t[k - 1][i];
            t[k][i] = (prev >> 8) ^ t[0][(prev & 0xff) as usize];
            i += 1;
        }
        k += 1;
    }
    t
}

/// A SipHash key: two 64-bit halves (the index stores them little-endian, `k0` first).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SipKey {
    pub k0: u64,
    pub k1: u64,
}

impl SipKey {
    /// A key of random bits (the standard library's per-process random hash seeds,
    /// drawn twice).
    pub fn random() -> Self {
        use std::hash::BuildHasher;
        let seed = std::collections::hash_map::RandomState::new();
        SipKey {
            k0: seed.hash_one(0x5eed_u64),
            k1: seed.hash_one(0xca11_u64),
        }
    }
}

/// SipHash-1-3 of `data` (one compression round a word, three to finish): 64 bits.
pub fn siphash13(key: SipKey, data: &[u8]) -> u64 {
    siphash::<1, 3>(key, data)
}

/// Lanes the seal's words are dealt to.
const LANES: usize = 4;

/// The seal of an index file's bytes under the cache's secret key (a MAC): SipHash-1-3
/// in four lanes. The bytes' 8-byte words are dealt to four SipHash-1-3 states (word
/// `i` to lane `i % 4`), each compressed and finalized as SipHash does (without the
/// length word); the four results, the length of the bytes (u64) and the bytes after
/// the last whole word are then hashed with SipHash-1-3: the seal. Why: a 10 GB
/// transcript's index is 39 MB, and its SipHash-2-4 (25 ms) was the longest part of a
/// load after an append; one SipHash-1-3 lane took 21 ms (each round waits on the
/// last), four lanes 7-12 ms, about the time the index takes to read (`read`, which
/// seals it as it comes in).
pub fn seal(key: SipKey, data: &[u8]) -> u64 {
    Sealer::new(key).finish(data)
}

/// [`seal`] of bytes given a piece at a time, as they are read.
#[derive(Clone)]
pub struct Sealer {
    key: SipKey,
    lanes: [[u64; 4]; LANES],
    len: u64,
}

impl Sealer {
    /// The bytes of every piece but the last are a multiple of this long.
    pub const PIECE: usize = 8 * LANES;

    pub fn new(key: SipKey) -> Self {
        Sealer {
            key,
            lanes: [initial(key); LANES],
            len: 0,
        }
    }

    /// The next bytes, a multiple of [`Self::PIECE`] long (bytes past the last whole
    /// piece are not taken: the last bytes, of any length, go to `finish`).
    pub fn feed(&mut self, piece: &[u8]) {
        let whole = piece.len() / Self::PIECE * Self::PIECE;
        let blocks = piece.get(..whole).unwrap_or_default();
        self.len += whole as u64;
        // Lane by lane, each word: the four chains of rounds interleave. (In AVX2
        // registers, one lane an element, the one chain of vector rounds took longer:
        // 14.5 ms for 39 MB against 7-12.)
        for block in blocks.chunks_exact(Self::PIECE) {
            for (lane, word) in self.lanes.iter_mut().zip(block.chunks_exact(8)) {
                compress::<1>(lane, word_of(word));
            }
        }
    }

    /// The seal of every piece fed and then `last`.
    pub fn finish(mut self, last: &[u8]) -> u64 {
        self.feed(last);
        let rest = last
            .get(last.len() / Self::PIECE * Self::PIECE..)
            .unwrap_or_default();
        let mut words = rest.chunks_exact(8);
        for (lane, word) in self.lanes.iter_mut().zip(&mut words) {
            compress::<1>(lane, word_of(word));
        }
        let mut end = Vec::with_capacity(8 * LANES + 16);
        for lane in &mut self.lanes {
            end.extend_from_slice(&finish::<3>(lane).to_le_bytes());
        }
        end.extend_from_slice(&(self.len + rest.len() as u64).to_le_bytes());
        end.extend_from_slice(words.remainder());
        siphash::<1, 3>(self.key, &end)
    }
}

fn initial(key: SipKey) -> [u64; 4] {
    [
        key.k0 ^ 0x736f_6d65_7073_6575,
        key.k1 ^ 0x646f_7261_6e64_6f6d,
        key.k0 ^ 0x6c79_6765_6e65_7261,
        key.k1 ^ 0x7465_6462_7974_6573,
    ]
}

#[inline(always)]
fn word_of(bytes: &[u8]) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(bytes);
    u64::from_le_bytes(word)
}

/// One word into a SipHash state: `C` rounds.
#[inline(always)]
fn compress<const C: usize>(v: &mut [u64; 4], m: u64) {
    v[3] ^= m;
    for _ in 0..C {
        round(v);
    }
    v[0] ^= m;
}

/// A SipHash state's value: `D` rounds.
#[inline(always)]
fn finish<const D: usize>(v: &mut [u64; 4]) -> u64 {
    v[2] ^= 0xff;
    for _ in 0..D {
        round(v);
    }
    v[0] ^ v[1] ^ v[2] ^ v[3]
}

#[inline(always)]
fn siphash<const C: usize, const D: usize>(key: SipKey, data: &[u8]) -> u64 {
    let mut v = initial(key);
    let mut words = data.chunks_exact(8);
    for word in &mut words {
        compress::<C>(&mut v, word_of(word));
    }
    let rest = words.remainder();
    let mut last = [0u8; 8];
    last[..rest.len()].copy_from_slice(rest);
    // The length's low byte goes into the last word's top byte.
    compress::<C>(
        &mut v,
        u64::from_le_bytes(last) | ((data.len() as u64 & 0xff) << 56),
    );
    finish::<D>(&mut v)
}

#[inline(always)]
fn round(v: &mut [u64; 4]) {
    v[0] = v[0].wrapping_add(v[1]);
    v[1] = v[1].rotate_left(13);
    v[1] ^= v[0];
    v[0] = v[0].rotate_left(32);
    v[2] = v[2].wrapping_add(v[3]);
    v[3] = v[3].rotate_left(16);
    v[3] ^= v[2];
    v[0] = v[0].wrapping_add(v[3]);
    v[3] = v[3].rotate_left(21);
    v[3] ^= v[0];
    v[2] = v[2].wrapping_add(v[1]);
    v[1] = v[1].rotate_left(17);
    v[1] ^= v[2];
    v[2] = v[2].rotate_left(32);
}

/// The fingerprint the index keeps of an id or a digest: the top 32 bits of its hash.
#[inline]
pub fn fingerprint(hash: u64) -> u32 {
    (hash >> 32) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytewise(data: &[u8]) -> u32 {
        let mut c = !0u32;
        for &b in data {
            c = TABLES[0][usize::from((c as u8) ^ b)] ^ (c >> 8);
        }
        !c
    }

    #[test]
    fn crc32_is_zlibs() {
        // zlib.crc32 of these, in Python.
        assert_eq!(crc32(0, b""), 0);
        assert_eq!(crc32(0, b"123456789"), 0xCBF4_3926);
        assert_eq!(
            crc32(0, b"The quick brown fox jumps over the lazy dog"),
            0x414F_A339
        );
        let data: Vec<u8> = (0..1000u32).map(|i| (i * 7 + i / 3) as u8).collect();
        for cut in [0, 1, 15, 16, 17, 100, 999, 1000] {
            assert_eq!(crc32(0, &data[..cut]), bytewise(&data[..cut]), "{cut}");
            // Continued in two pieces, as zlib continues.
            let (a, b) = data[..cut].split_at(cut / 2);
            assert_eq!(crc32(crc32(0, a), b), bytewise(&data[..cut]), "{cut}");
        }
    }

    #[test]
    fn the_fast_crc_is_the_tables_crc() {
        let mut state = 0x9e37_79b9_u64;
        let data: Vec<u8> = (0..5000)
            .map(|_| {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1);
                (state >> 33) as u8
            })
            .collect();
        for len in (0..700).chain([1023, 1024, 1025, 4096, 4999, 5000]) {
            for start in [0, 1, 7] {
                let part = &data[start.min(len)..len];
                assert_eq!(crc32(0, part), crc32_tables(0, part), "{start}..{len}");
                assert_eq!(crc32(0x1234_5678, part), crc32_tables(0x1234_5678, part));
            }
        }
    }

    #[test]
    fn siphash_2_4_is_the_published_one() {
        // The reference vectors (SipHash paper, appendix A): key 00..0f, messages
        // 00, 00 01, ...: this checks the shared code with the paper's rounds.
        let key = SipKey {
            k0: u64::from_le_bytes([0, 1, 2, 3, 4, 5, 6, 7]),
            k1: u64::from_le_bytes([8, 9, 10, 11, 12, 13, 14, 15]),
        };
        let data: Vec<u8> = (0..64u8).collect();
        assert_eq!(siphash::<2, 4>(key, &data[..0]), 0x726f_db47_dd0e_0e31);
        assert_eq!(siphash::<2, 4>(key, &data[..1]), 0x74f8_39c5_93dc_67fd);
        assert_eq!(siphash::<2, 4>(key, &data[..8]), 0x93f5_f579_9a93_2462);
        assert_eq!(siphash::<2, 4>(key, &data[..15]), 0xa129_ca61_49be_45e5);
        #[allow(deprecated)]
        for n in 0..64 {
            use std::hash::Hasher;
            let mut h = std::hash::SipHasher::new_with_keys(key.k0, key.k1);
            h.write(&data[..n]);
            assert_eq!(siphash::<2, 4>(key, &data[..n]), h.finish(), "{n}");
        }
    }

    #[test]
    fn the_seal_is_the_pure_cores() {
        // `_pure/index_format.seal` of these (key 00..0f, bytes 0, 1, .., 255, 0, ..): every
        // lane partly filled, a chunk of the pure core's and more.
        let key = SipKey {
            k0: u64::from_le_bytes([0, 1, 2, 3, 4, 5, 6, 7]),
            k1: u64::from_le_bytes([8, 9, 10, 11, 12, 13, 14, 15]),
        };
        let data: Vec<u8> = (0..76800u32).map(|i| i as u8).collect();
        for (n, want) in [
            (0, 0x9da2_f07a_88c2_5397_u64),
            (7, 0x998a_36a0_b403_7345),
            (8, 0xd055_0803_154b_de39),
            (31, 0xb1cd_bcc4_107b_14d4),
            (32, 0x468a_ce2f_3650_583d),
            (33, 0x327d_6d7c_56ee_c373),
            (100, 0x4ffe_8d83_7051_ad4a),
            (65576, 0x137d_175c_3330_cb38),
            (76800, 0xeb87_2633_5cc4_c172),
        ] {
            assert_eq!(seal(key, &data[..n]), want, "{n}");
        }
        // Two words swapped between lanes, or a zero byte more, make another seal.
        let mut swapped = data[..64].to_vec();
        swapped.swap(0, 8);
        assert_ne!(seal(key, &swapped), seal(key, &data[..64]));
        let mut longer = data[..64].to_vec();
        longer.push(0);
        assert_ne!(seal(key, &longer), seal(key, &data[..64]));
    }

    #[test]
    fn the_seal_of_pieces_is_the_seal_of_their_bytes() {
        let key = SipKey { k0: 3, k1: 4 };
        let data: Vec<u8> = (0..5000u32).map(|i| (i * 7) as u8).collect();
        for cut in [0, 32, 64, 4096, 4992] {
            for end in [cut, cut + 1, cut + 31, cut + 8, 5000].map(|e| e.min(5000)) {
                let mut sealer = Sealer::new(key);
                sealer.feed(&data[..cut]);
                assert_eq!(
                    sealer.finish(&data[cut..end]),
                    seal(key, &data[..end]),
                    "{cut} {end}"
                );
            }
        }
    }

    #[test]
    fn siphash_1_3_depends_on_key_and_every_byte() {
        let key = SipKey { k0: 1, k1: 2 };
        let a = siphash13(key, b"019fe695-bac8-7775-af1f-92e460415a3a");
        assert_ne!(a, siphash13(key, b"019fe695-bac8-7775-af1f-92e460415a3b"));
        assert_ne!(
            a,
            siphash13(
                SipKey { k0: 1, k1: 3 },
                b"019fe695-bac8-7775-af1f-92e460415a3a"
            )
        );
        assert_ne!(siphash13(key, b""), siphash13(key, b"\0"));
        assert_ne!(SipKey::random(), SipKey::random());
    }
}
