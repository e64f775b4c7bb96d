//! The byte scan for secrets: which lines of a buffer are worth reading in full
//! (`llm_agent_session.secrets`, whose `prefilter.py` makes the triggers; the
//! reference is `_pure/secrets.py`, and the two keep the same lines of every input).
//!
//! A line is kept when it holds an escape that could spell a secret otherwise than its
//! bytes do, when a trigger's keyword passes the trigger's test where it is, when the
//! bodies of its `"text":` strings joined do, or when a base64 run in it decodes to
//! bytes that do. The keywords are found by their first three bytes, ASCII case
//! ignored, with one Aho-Corasick automaton (overlapping matches: every place any
//! keyword starts), then compared whole.
//!
//! Nothing here decides that a line holds a secret: the Python matcher reads each line
//! kept. Big buffers are split between two threads at a line end.

mod base64;
mod quick;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, Input, MatchKind};
use memchr::{memchr, memchr_iter, memmem};

pub use base64::{base64_runs, decode_into, decodings, BASE64_MIN};

/// The test a trigger makes where its keyword is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Always,
    Token,
    Assign,
    Url,
}

impl Kind {
    /// As `_core.TRIGGER_*` number them.
    pub fn from_number(n: u8) -> Option<Kind> {
        match n {
            0 => Some(Kind::Always),
            1 => Some(Kind::Token),
            2 => Some(Kind::Assign),
            3 => Some(Kind::Url),
            _ => None,
        }
    }
}

/// A byte set.
#[derive(Clone)]
pub struct Set([bool; 256]);

impl Set {
    pub fn of(members: &[u8]) -> Set {
        let mut s = [false; 256];
        for &b in members {
            s[b as usize] = true;
        }
        Set(s)
    }

    #[inline]
    pub fn has(&self, b: u8) -> bool {
        self.0[b as usize]
    }
}

/// One keyword and its test (`_core.SecretTrigger`).
#[derive(Clone)]
pub struct Trigger {
    pub keyword: Vec<u8>,
    pub ignore_case: bool,
    pub kind: Kind,
    pub chars: Set,
    pub least: usize,
    pub gap: usize,
    pub left: Set,
    pub left_least: usize,
}

/// A rule table's byte scan, ready.
pub struct Prefilter {
    triggers: Vec<Trigger>,
    /// The keywords' first three bytes (lowered), pattern id -> the triggers behind it.
    stems: Option<AhoCorasick>,
    groups: Vec<Vec<usize>>,
    unicode_escapes: bool,
}

const TEXT_KEY: &[u8] = b"\"text\":";
/// Past this many bytes a buffer is read by two threads.
const SPLIT_MIN: usize = 1 << 20;

fn lower3(keyword: &[u8]) -> Vec<u8> {
    keyword
        .iter()
        .take(3)
        .map(|b| b.to_ascii_lowercase())
        .collect()
}

impl Prefilter {
    /// The scan of `triggers`; an error (as text) for a keyword shorter than 3 bytes.
    pub fn new(triggers: Vec<Trigger>, unicode_escapes: bool) -> Result<Prefilter, String> {
        let mut stems: Vec<Vec<u8>> = Vec::new();
        let mut groups: Vec<Vec<usize>> = Vec::new();
        for (i, t) in triggers.iter().enumerate() {
            if t.keyword.len() < 3 {
                return Err("a keyword shorter than 3 bytes".to_string());
            }
            let stem = lower3(&t.keyword);
            match stems.iter().position(|s| *s == stem) {
                Some(k) => groups[k].push(i),
                None => {
                    stems.push(stem);
                    groups.push(vec![i]);
                }
            }
        }
        let automaton = if stems.is_empty() {
            None
        } else {
            Some(
                // The stems are lowered and so is the text searched: the automaton's SIMD
                // prefilter then serves (with ASCII case ignored it would have to look
                // for every case variant, past what it takes).
                AhoCorasickBuilder::new()
                    .match_kind(MatchKind::LeftmostFirst)
                    .build(&stems)
                    .map_err(|e| e.to_string())?,
            )
        };
        Ok(Prefilter {
            triggers,
            stems: automaton,
            groups,
            unicode_escapes,
        })
    }

    /// `(start, end)` of every line of `buf` worth reading (`end` before its `\n`).
    pub fn lines(&self, buf: &[u8]) -> Vec<(usize, usize)> {
        if buf.len() < SPLIT_MIN {
            return self.lines_from(buf, 0);
        }
        let half = buf.len() / 2;
        let cut = match memchr(b'\n', &buf[half..]) {
            Some(k) => half + k + 1,
            None => return self.lines_from(buf, 0),
        };
        let (first, second) = std::thread::scope(|scope| {
            let later = scope.spawn(|| self.lines_from(&buf[cut..], cut));
            let first = self.lines_from(&buf[..cut], 0);
            (first, later.join())
        });
        let mut out = first;
        match second {
            Ok(more) => out.extend(more),
            // A panic is a bug; read that half on this thread rather than lose it.
            Err(_) => out.extend(self.lines_from(&buf[cut..], cut)),
        }
        out
    }

    fn lines_from(&self, buf: &[u8], base: usize) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        let mut scratch = Scratch::default();
        let mut start = 0;
        for nl in memchr_iter(b'\n', buf).chain(std::iter::once(buf.len())) {
            if nl < start {
                continue; // the end of a buffer that ends with its `\n`
            }
            let line = &buf[start..nl];
            if self.keeps_with(line, &mut scratch) {
                out.push((base + start, base + nl));
            }
            start = nl + 1;
        }
        out
    }

    /// Whether the one line `line` (no `\n`) is worth reading.
    pub fn keeps(&self, line: &[u8]) -> bool {
        self.keeps_with(line, &mut Scratch::default())
    }

    fn keeps_with(&self, line: &[u8], scratch: &mut Scratch) -> bool {
        if line.iter().all(|&b| b == b' ' || b == b'\t' || b == b'\r') {
            return false;
        }
        if memchr(b'\\', line).is_some() && self.escape_hides(line) {
            return true;
        }
        if self.check(line, true, scratch) {
            return true;
        }
        if memmem::find(line, TEXT_KEY).is_some() {
            let joined = &mut scratch.joined;
            joined.clear();
            if text_bodies(line, joined) >= 2 {
                let joined = std::mem::take(joined);
                let kept = self.check(&joined, true, scratch);
                scratch.joined = joined;
                return kept;
            }
        }
        false
    }

    /// An escape that could spell a keyword or a secret's character otherwise than the
    /// bytes do: `\u00` + `2`-`7` + a hex digit, `\/`, or (`unicode_escapes`) any `\u`.
    fn escape_hides(&self, line: &[u8]) -> bool {
        if memmem::find(line, b"\\/").is_some() {
            return true;
        }
        for at in memmem::find_iter(line, b"\\u") {
            if self.unicode_escapes {
                return true;
            }
            let rest = &line[at + 2..];
            if rest.len() >= 4
                && rest[0] == b'0'
                && rest[1] == b'0'
                && (b'2'..=b'7').contains(&rest[2])
                && rest[3].is_ascii_hexdigit()
            {
                return true;
            }
        }
        false
    }

    /// Whether a trigger passes its test in `buf`, or (`runs`) in a base64 run's bytes.
    fn check(&self, buf: &[u8], runs: bool, scratch: &mut Scratch) -> bool {
        if self.keywords_pass(buf, &mut scratch.lower) {
            return true;
        }
        if runs {
            for (s, e) in base64_runs(buf) {
                for (a, b) in decodings(buf, s, e) {
                    scratch.decoded.clear();
                    decode_into(&buf[a..b], &mut scratch.decoded);
                    if self.keywords_pass(&scratch.decoded, &mut scratch.lower) {
                        return true;
                    }
                }
            }
        }
        false
    }

    /// Whether a trigger's keyword is in `buf` and passes its test there.
    fn keywords_pass(&self, buf: &[u8], lower: &mut Vec<u8>) -> bool {
        let Some(stems) = &self.stems else {
            return false;
        };
        lower.clear();
        lower.extend(buf.iter().map(|b| b.to_ascii_lowercase()));
        // Every place a stem starts: all stems are three bytes, so at most one starts at
        // a place, and searching again from the next byte finds them all.
        let mut from = 0;
        while let Some(m) = stems.find(Input::new(lower.as_slice()).span(from..buf.len())) {
            let at = m.start();
            for &t in &self.groups[m.pattern().as_usize()] {
                let trigger = &self.triggers[t];
                let end = at + trigger.keyword.len();
                if end > buf.len() {
                    continue;
                }
                let got = &buf[at..end];
                let same = if trigger.ignore_case {
                    got.eq_ignore_ascii_case(&trigger.keyword)
                } else {
                    got == trigger.keyword.as_slice()
                };
                if same && quick::passes(trigger, buf, at, end) {
                    return true;
                }
            }
            from = at + 1;
        }
        false
    }
}

/// Buffers a scan reuses from line to line.
#[derive(Default)]
struct Scratch {
    lower: Vec<u8>,
    decoded: Vec<u8>,
    joined: Vec<u8>,
}

/// Appends to `out` the bodies (as written) of the JSON strings that follow a
/// `"text":` key in `line` (at most 4 spaces between); answers how many.
fn text_bodies(line: &[u8], out: &mut Vec<u8>) -> usize {
    let n = line.len();
    let mut count = 0;
    let mut from = 0;
    while let Some(k) = memmem::find(&line[from..], TEXT_KEY) {
        let at = from + k;
        let mut p = at + TEXT_KEY.len();
        let mut g = 0;
        while p < n && g < 4 && line[p] == b' ' {
            p += 1;
            g += 1;
        }
        if p < n && line[p] == b'"' {
            p += 1;
            let start = p;
            while p < n && line[p] != b'"' {
                p += if line[p] == b'\\' { 2 } else { 1 };
            }
            out.extend_from_slice(&line[start..p.min(n)]);
            count += 1;
        }
        from = if p > at { p } else { at + 1 };
        if from >= n {
            break;
        }
    }
    count
}

#[cfg(test)]
mod tests;
