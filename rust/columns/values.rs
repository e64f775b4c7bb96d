//! Values as the dataset's columns hold them, read from validated JSON by span: the
//! twins of `ts_micros`, `int64`, `float64`, `string` and `flatten_text` in
//! `python/llm_agent_session/_pure/columns.py`.

use std::borrow::Cow;

use crate::json::grammar::Kind;
use crate::json::strings::{hex4, pair_low};
use crate::json::view::{self as json_view, Item};

/// Microseconds since 1970 of a well-formed `ts` (`YYYY-MM-DDTHH:MM:SS.ffffffZ`, a real
/// date and time, year 1 to 9999), else None.
pub fn ts_micros(ts: &str) -> Option<i64> {
    let b = ts.as_bytes();
    if b.len() != 27 {
        return None;
    }
    let digits = |from: usize, to: usize| -> Option<i64> {
        let mut v = 0i64;
        for &c in b.get(from..to)? {
            if !c.is_ascii_digit() {
                return None;
            }
            v = v * 10 + i64::from(c - b'0');
        }
        Some(v)
    };
    let punct = [
        (4, b'-'),
        (7, b'-'),
        (10, b'T'),
        (13, b':'),
        (16, b':'),
        (19, b'.'),
        (26, b'Z'),
    ];
    if punct.iter().any(|&(at, c)| b.get(at) != Some(&c)) {
        return None;
    }
    let (y, mo, d) = (digits(0, 4)?, digits(5, 7)?, digits(8, 10)?);
    let (h, mi, s, us) = (
        digits(11, 13)?,
        digits(14, 16)?,
        digits(17, 19)?,
        digits(20, 26)?,
    );
    if y < 1
        || !(1..=12).contains(&mo)
        || d < 1
        || d > days_in_month(y, mo)
        || h > 23
        || mi > 59
        || s > 59
    {
        return None;
    }
    let days = days_from_civil(y, mo, d);
    Some(((days * 24 + h) * 60 + mi) * 60_000_000 + s * 1_000_000 + us)
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days from 1970-01-01 to the proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The JSON text of `item` in `raw`.
pub fn json_text(raw: &[u8], item: Item) -> &[u8] {
    raw.get(item.span.0..item.span.1).unwrap_or_default()
}

/// A JSON integer that fits in 64 bits (not a float literal, not a bool).
pub fn int64(raw: &[u8], item: Option<Item>) -> Option<i64> {
    let item = item.filter(|i| i.kind == Kind::Number)?;
    let text = json_text(raw, item);
    if text.iter().any(|c| matches!(c, b'.' | b'e' | b'E')) {
        return None;
    }
    std::str::from_utf8(text).ok()?.parse::<i64>().ok()
}

/// A JSON number as a finite double (correctly rounded, as Python's `float` rounds).
pub fn float64(raw: &[u8], item: Option<Item>) -> Option<f64> {
    let item = item.filter(|i| i.kind == Kind::Number)?;
    let f = std::str::from_utf8(json_text(raw, item))
        .ok()?
        .parse::<f64>()
        .ok()?;
    f.is_finite().then_some(f)
}

/// A JSON bool.
pub fn boolean(raw: &[u8], item: Option<Item>) -> Option<bool> {
    let item = item.filter(|i| i.kind == Kind::Bool)?;
    Some(json_text(raw, item) == b"true")
}

/// A JSON string's text.
pub fn string(raw: &[u8], item: Option<Item>) -> Option<Cow<'_, str>> {
    json_view::text(raw, item?)
}

/// A value's JSON text; None when absent or null.
pub fn json_value(raw: &[u8], item: Option<Item>) -> Option<&[u8]> {
    let item = item.filter(|i| i.kind != Kind::Null)?;
    Some(json_text(raw, item))
}

/// A message's content as text (`flatten_text`): a string as it is; of a list, the
/// string `text` of each object that has one, joined by newlines; null or absent, None;
/// any other value, its JSON text. Appended to `out`; false for None.
pub fn flatten_text(raw: &[u8], content: Option<Item>, out: &mut Vec<u8>) -> bool {
    let Some(item) = content.filter(|i| i.kind != Kind::Null) else {
        return false;
    };
    match item.kind {
        Kind::String => {
            if let Some(text) = json_view::text(raw, item) {
                out.extend_from_slice(text.as_bytes());
            }
        }
        Kind::Array => {
            let mut first = true;
            for part in json_view::element_members(raw, item)
                .unwrap_or_default()
                .into_iter()
                .flatten()
            {
                if let Some(text) =
                    json_view::get(raw, &part, "text").and_then(|t| json_view::text(raw, t))
                {
                    if !first {
                        out.push(b'\n');
                    }
                    first = false;
                    out.extend_from_slice(text.as_bytes());
                }
            }
        }
        _ => out.extend_from_slice(json_text(raw, item)),
    }
    true
}

/// Append the text of the string token `item` to `out`, its escapes decoded (a
/// surrogate pair joined, as CPython joins one). The first pass validated the line, so
/// the bytes are copied without a second UTF-8 check (`json_view::text` makes two): on a
/// file changed under the pass the text is garbage, never a panic, and the export
/// fails that file when it sees the change.
pub fn unescape_into(raw: &[u8], item: Item, out: &mut Vec<u8>) {
    let content = raw
        .get(item.span.0 + 1..item.span.1.saturating_sub(1))
        .unwrap_or_default();
    let mut i = 0;
    while i < content.len() {
        let rest = content.get(i..).unwrap_or_default();
        let run = memchr::memchr(b'\\', rest).unwrap_or(rest.len());
        out.extend_from_slice(rest.get(..run).unwrap_or_default());
        i += run;
        if i >= content.len() {
            break;
        }
        match content.get(i + 1) {
            Some(b'u') => {
                let Some(mut cp) = hex4(content, i + 2) else {
                    break;
                };
                i += 6;
                if (0xD800..=0xDBFF).contains(&cp) {
                    if let Some(low) = pair_low(content, i) {
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                        i += 6;
                    }
                }
                let c = char::from_u32(cp).unwrap_or('\u{FFFD}');
                out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
            }
            Some(&e) => {
                out.push(match e {
                    b'b' => 0x08,
                    b'f' => 0x0C,
                    b'n' => b'\n',
                    b'r' => b'\r',
                    b't' => b'\t',
                    other => other, // `"`, `\`, `/`
                });
                i += 2;
            }
            None => break,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_as_python_reads_them() {
        assert_eq!(ts_micros("1970-01-01T00:00:00.000001Z"), Some(1));
        assert_eq!(
            ts_micros("2026-08-09T13:10:08.542283Z"),
            Some(1_786_281_008_542_283)
        );
        assert_eq!(
            ts_micros("0001-01-01T00:00:00.000000Z"),
            Some(-62_135_596_800_000_000)
        );
        assert!(ts_micros("2024-02-29T23:59:59.999999Z").is_some());
        for bad in [
            "2023-02-29T00:00:00.000000Z",
            "0000-01-01T00:00:00.000000Z",
            "2026-13-01T00:00:00.000000Z",
            "2026-01-01T24:00:00.000000Z",
            "2026-01-01T00:00:60.000000Z",
            "2026-01-01T00:00:00.00000Z",
            "2026-01-01 00:00:00.000000Z",
            "2026-01-01T00:00:00.000000z",
            "２026-01-01T00:00:00.000000Z",
        ] {
            assert_eq!(ts_micros(bad), None, "{bad}");
        }
    }

    #[test]
    fn unescapes_as_json_reads() {
        let line = br#"["a\"b\\c\/\b\f\n\r\t\u00e9\ud83d\ude00 \u2028x", "plain"]"#;
        let items = json_view::elements(line, json_view::root(line).unwrap()).unwrap();
        let mut out = Vec::new();
        unescape_into(line, items[0], &mut out);
        assert_eq!(out, "a\"b\\c/\u{8}\u{c}\n\r\té😀 \u{2028}x".as_bytes());
        out.clear();
        unescape_into(line, items[1], &mut out);
        assert_eq!(out, b"plain");
    }
}
