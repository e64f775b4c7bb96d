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

/// CRC-32 of `data`, continuing from `crc` (0 to start), as zlib's `crc32(data, crc)`.
pub fn crc32(crc: u32, data: &[u8]) -> u32 {
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

#[inline(always)]
fn siphash<const C: usize, const D: usize>(key: SipKey, data: &[u8]) -> u64 {
    let mut v = [
        key.k0 ^ 0x736f_6d65_7073_6575,
        key.k1 ^ 0x646f_7261_6e64_6f6d,
        key.k0 ^ 0x6c79_6765_6e65_7261,
        key.k1 ^ 0x7465_6462_7974_6573,
    ];
    let mut words = data.chunks_exact(8);
    for word in &mut words {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(word);
        let m = u64::from_le_bytes(bytes);
        v[3] ^= m;
        for _ in 0..C {
            round(&mut v);
        }
        v[0] ^= m;
    }
    let rest = words.remainder();
    let mut last = [0u8; 8];
    last[..rest.len()].copy_from_slice(rest);
    // The length's low byte goes into the last word's top byte.
    let m = u64::from_le_bytes(last) | ((data.len() as u64 & 0xff) << 56);
    v[3] ^= m;
    for _ in 0..C {
        round(&mut v);
    }
    v[0] ^= m;
    v[2] ^= 0xff;
    for _ in 0..D {
        round(&mut v);
    }
    v[0] ^ v[1] ^ v[2] ^ v[3]
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
