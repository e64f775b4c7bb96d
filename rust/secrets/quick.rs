//! The test each kind of trigger makes where its keyword is, on the bytes as written
//! (`_pure/secrets.py`'s `_token`, `_assign`, `_url`): loose on purpose, so that what
//! the Python matcher finds in a decoded string these find in the bytes that wrote it.

use super::{Kind, Set, Trigger};

/// Whether `t`, whose keyword is at `buf[at..end]`, passes its test.
pub fn passes(t: &Trigger, buf: &[u8], at: usize, end: usize) -> bool {
    match t.kind {
        Kind::Always => true,
        Kind::Token => token(t, buf, at, end),
        Kind::Assign => assign(&t.chars, t.least, buf, end),
        Kind::Url => url(buf, end),
    }
}

fn token(t: &Trigger, buf: &[u8], at: usize, mut p: usize) -> bool {
    let n = buf.len();
    if t.left_least > 0 {
        let mut j = at;
        while j > 0 && at - j < 64 && t.left.has(buf[j - 1]) {
            j -= 1;
        }
        if at - j < t.left_least {
            return false;
        }
    }
    if t.gap > 0 {
        let mut g = 0;
        while p < n && g < t.gap {
            let c = buf[p];
            if c == b' ' || c == b'\t' {
                p += 1;
            } else if c == b'\\' && p + 1 < n && buf[p + 1] == b't' {
                p += 2; // \t as written
            } else {
                break;
            }
            g += 1;
        }
        if g == 0 {
            return false;
        }
    }
    run(&t.chars, buf, p) >= t.least
}

/// How many bytes of `set` from `p` on.
fn run(set: &Set, buf: &[u8], p: usize) -> usize {
    buf[p.min(buf.len())..]
        .iter()
        .take_while(|&&b| set.has(b))
        .count()
}

fn is_name(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'.' || b == b'-'
}

/// Spaces and tabs (also `\t` as written), at most `most` of them.
fn blanks(buf: &[u8], mut p: usize, most: usize) -> usize {
    let n = buf.len();
    let mut g = 0;
    while p < n && g < most {
        let c = buf[p];
        if c == b' ' || c == b'\t' {
            p += 1;
        } else if c == b'\\' && p + 1 < n && buf[p + 1] == b't' {
            p += 2;
        } else {
            break;
        }
        g += 1;
    }
    p
}

fn skip(buf: &[u8], mut p: usize, chars: &[u8], most: usize) -> usize {
    let stop = buf.len().min(p + most);
    while p < stop && chars.contains(&buf[p]) {
        p += 1;
    }
    p
}

fn assign(value: &Set, least: usize, buf: &[u8], mut p: usize) -> bool {
    let n = buf.len();
    while p < n && is_name(buf[p]) {
        p += 1;
    }
    p = blanks(buf, skip(buf, p, b"\"'`\\]", 12), 8);
    if p >= n || !(buf[p] == b'=' || buf[p] == b':') {
        return false;
    }
    p += 1;
    if p < n && b"=>:~".contains(&buf[p]) {
        p += 1;
    }
    p = skip(buf, blanks(buf, p, 8), b"\"'`\\", 12);
    run(value, buf, p) >= least
}

fn url_stop(b: u8) -> bool {
    matches!(
        b,
        b' ' | b'\t'
            | b'\r'
            | b'\n'
            | 0x0b
            | 0x0c
            | b'"'
            | b'\''
            | b'\\'
            | b'<'
            | b'>'
            | b'?'
            | b'#'
            | b'/'
            | b'@'
    )
}

fn url(buf: &[u8], mut p: usize) -> bool {
    let n = buf.len();
    while p < n && !url_stop(buf[p]) && buf[p] != b':' {
        p += 1;
    }
    if p >= n || buf[p] != b':' {
        return false;
    }
    p += 1;
    let start = p;
    while p < n && !url_stop(buf[p]) {
        p += 1;
    }
    p > start && p < n && buf[p] == b'@'
}
