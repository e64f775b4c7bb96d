//! Base64 runs in bytes as written, and their decoding (`_pure/secrets.py`'s
//! `base64_runs` and `b64decode`, `secrets/match.py`'s `b64decode`).

/// A run shorter than this is not decoded (`_core.BASE64_MIN`).
pub const BASE64_MIN: usize = 20;

const INVALID: u8 = 0xFF;

const fn value_table() -> [u8; 256] {
    let mut t = [INVALID; 256];
    let mut i = 0;
    while i < 26 {
        t[b'A' as usize + i] = i as u8;
        t[b'a' as usize + i] = 26 + i as u8;
        i += 1;
    }
    let mut d = 0;
    while d < 10 {
        t[b'0' as usize + d] = 52 + d as u8;
        d += 1;
    }
    t[b'+' as usize] = 62;
    t[b'-' as usize] = 62;
    t[b'/' as usize] = 63;
    t[b'_' as usize] = 63;
    t
}

/// Each base64 character's value, both alphabets; `INVALID` for the rest.
static VALUES: [u8; 256] = value_table();

#[inline]
fn is_base64(b: u8) -> bool {
    VALUES[b as usize] != INVALID
}

/// `(start, end)` of every maximal run of at least [`BASE64_MIN`] base64 characters in
/// `buf` (`A-Za-z0-9+/_-`). A run that long holds an 8-byte window starting at a multiple
/// of 8, so only those windows are tested (all 8 bytes at once, without a branch), and
/// a run is grown both ways from the first window found in it.
pub fn base64_runs(buf: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let n = buf.len();
    let mut i = 0;
    while i + 8 <= n {
        let all = buf[i..i + 8]
            .iter()
            .fold(true, |all, &b| all & is_base64(b));
        if !all {
            i += 8;
            continue;
        }
        let mut s = i;
        while s > 0 && is_base64(buf[s - 1]) {
            s -= 1;
        }
        let mut e = i + 8;
        while e < n && is_base64(buf[e]) {
            e += 1;
        }
        if e - s >= BASE64_MIN {
            out.push((s, e));
        }
        i = (e + 1).div_ceil(8) * 8;
    }
    out
}

/// The runs to decode for a run `(s, e)` of `buf`: the run, and where an escape's
/// backslash comes just before it, the run as a JSON string's value has it (after the
/// escaped character, or after `\u` and four digits), when still long enough.
pub fn decodings(buf: &[u8], s: usize, e: usize) -> impl Iterator<Item = (usize, usize)> {
    let escaped = s > 0 && buf[s - 1] == b'\\';
    [0usize, 1, 5]
        .into_iter()
        .filter(move |&k| k == 0 || escaped)
        .map(move |k| (s + k, e))
        .filter(|&(a, b)| b >= a && b - a >= BASE64_MIN)
}

/// Appends the bytes `run` (base64 characters only) decodes to: groups of four make
/// three bytes, a last group of three two, of two one, a lone last character nothing.
pub fn decode_into(run: &[u8], out: &mut Vec<u8>) {
    let usable = if run.len() % 4 == 1 {
        run.len() - 1
    } else {
        run.len()
    };
    out.reserve(usable / 4 * 3 + 2);
    for group in run[..usable].chunks(4) {
        let mut acc: u32 = 0;
        for &c in group {
            acc = acc << 6 | u32::from(VALUES[c as usize] & 0x3F);
        }
        let bits = 6 * group.len() as u32;
        acc <<= 24 - bits;
        let bytes = acc.to_be_bytes();
        out.extend_from_slice(&bytes[1..1 + (bits / 8) as usize]);
    }
}
