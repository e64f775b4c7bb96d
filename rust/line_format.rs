//! The line format's pieces that the write path makes itself (docs/FORMAT.md): JSON
//! strings escaped as the reference's encoder escapes them, the timestamp, and
//! UUIDv7 ids (the reference: `canonical.py`). Used by `py/encode.rs`.

use std::fs::File;
use std::io::Read;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

/// A JSON string as the reference's encoder writes it (`ensure_ascii=False`), and
/// U+2028/U+2029 as `\u2028`/`\u2029` where `line_separators` (the payload's
/// strings: the reference replaces them in the payload's text only).
pub fn write_string(out: &mut Vec<u8>, s: &str, line_separators: bool) {
    out.push(b'"');
    write_string_content(out, s.as_bytes(), line_separators);
    out.push(b'"');
}

/// [`write_string`] without the quotes, of text in generalized UTF-8 (a lone surrogate
/// as its own three bytes, which pass as they are: only ASCII and U+2028/U+2029 are
/// ever escaped). The search spells the text it looks for with it.
pub fn write_string_content(out: &mut Vec<u8>, bytes: &[u8], line_separators: bool) {
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escape: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            0x00..=0x1f => b"",
            0xe2 if line_separators
                && bytes.get(i + 1) == Some(&0x80)
                && matches!(bytes.get(i + 2), Some(0xa8 | 0xa9)) =>
            {
                b""
            }
            _ => continue,
        };
        out.extend_from_slice(bytes.get(start..i).unwrap_or_default());
        if escape.is_empty() && b == 0xe2 {
            let last = if bytes.get(i + 2) == Some(&0xa8) {
                b'8'
            } else {
                b'9'
            };
            out.extend_from_slice(&[b'\\', b'u', b'2', b'0', b'2', last]);
            start = i + 3;
            continue;
        }
        if escape.is_empty() {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.extend_from_slice(&[
                b'\\',
                b'u',
                b'0',
                b'0',
                HEX[(b >> 4) as usize],
                HEX[(b & 0xf) as usize],
            ]);
        } else {
            out.extend_from_slice(escape);
        }
        start = i + 1;
    }
    out.extend_from_slice(bytes.get(start..).unwrap_or_default());
}

/// Milliseconds and microseconds since the epoch, from one clock reading.
pub fn now() -> (u64, u64) {
    let d = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    (d.as_millis() as u64, d.as_micros() as u64)
}

/// `YYYY-MM-DDTHH:MM:SS.ffffffZ` (UTC) of microseconds since the epoch.
pub fn format_ts(micros: u64) -> String {
    let secs = micros / 1_000_000;
    let frac = micros % 1_000_000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{frac:06}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's
/// `civil_from_days`).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// The UUIDv7 generator's state: ids made by one process sort by creation order
/// (the reference's `new_id`: a counter in `rand_a` within one millisecond).
struct IdState {
    last_ms: u64,
    seq: u64,
    random: Vec<u8>,
    pid: u32,
}

static IDS: Mutex<IdState> = Mutex::new(IdState {
    last_ms: 0,
    seq: 0,
    random: Vec::new(),
    pid: 0,
});

/// Random bytes from the kernel, read 4 KiB at a time; refilled after a fork, so
/// parent and child never share them.
fn random_bytes<const N: usize>(state: &mut IdState) -> std::io::Result<[u8; N]> {
    let pid = std::process::id();
    if state.pid != pid || state.random.len() < N {
        let mut buf = vec![0u8; 4096];
        File::open("/dev/urandom")?.read_exact(&mut buf)?;
        state.random = buf;
        state.pid = pid;
    }
    let mut out = [0u8; N];
    let at = state.random.len() - N;
    out.copy_from_slice(state.random.get(at..).unwrap_or(&[0u8; N][..]));
    state.random.truncate(at);
    Ok(out)
}

pub fn new_id_at(now_ms: u64) -> std::io::Result<String> {
    let mut st = IDS.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let mut ms = now_ms;
    if ms <= st.last_ms {
        // Same millisecond (or the clock stepped back): count up so order holds.
        ms = st.last_ms;
        st.seq += 1;
        if st.seq > 0xFFF {
            ms += 1;
            st.seq = 0;
        }
    } else {
        st.seq = u64::from(u16::from_be_bytes(random_bytes::<2>(&mut st)?)) & 0x3FF;
    }
    st.last_ms = ms;
    let seq = st.seq;
    let rand_b = u64::from_be_bytes(random_bytes::<8>(&mut st)?) & ((1 << 62) - 1);
    drop(st);
    let hi = ((ms & ((1 << 48) - 1)) << 16) | (0x7 << 12) | seq;
    let lo = (0b10 << 62) | rand_b;
    let h = format!("{hi:016x}{lo:016x}");
    Ok(format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_and_dates() {
        assert_eq!(format_ts(0), "1970-01-01T00:00:00.000000Z");
        assert_eq!(
            format_ts(951_782_400_000_001),
            "2000-02-29T00:00:00.000001Z"
        );
        assert_eq!(
            format_ts(1_786_280_000_123_456),
            "2026-08-09T12:53:20.123456Z"
        );
    }

    #[test]
    fn strings_escape_as_the_reference() {
        let mut out = Vec::new();
        write_string(
            &mut out,
            "a\"\\\n\r\t\u{8}\u{c}\u{1}\u{1f}\u{7f}é\u{2028}\u{2029}\u{2027}",
            true,
        );
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "\"a\\\"\\\\\\n\\r\\t\\b\\f\\u0001\\u001f\u{7f}é\\u2028\\u2029\u{2027}\""
        );
        let mut out = Vec::new();
        write_string(&mut out, "\u{2028}", false);
        assert_eq!(String::from_utf8(out).unwrap(), "\"\u{2028}\"");
    }

    #[test]
    fn ids_are_uuid7_and_ordered() {
        let a = new_id_at(1_786_280_000_000).unwrap();
        let b = new_id_at(1_786_280_000_000).unwrap();
        assert!(a < b, "{a} {b}");
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "7");
        assert!(matches!(&a[19..20], "8" | "9" | "a" | "b"));
    }
}
