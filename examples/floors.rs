//! The floors under `load`'s time on a transcript: what reading the file costs alone,
//! then with each part of the work a strict load cannot skip added, one thread each
//! (best wall time of ROUNDS), and the whole replay on one and on two threads:
//! `cargo run --release --example floors -- FILE [ROUNDS]` (benches/ANALYSIS.md uses
//! it to say which goals no load can reach; the benchmarks of record are
//! `benches/run.py`).
use _native::json::grammar::{is_blank, parse_using, Mode};
use _native::json::simd::Width;
use _native::replay::stream::{replay_split_from, LineReader, SPLIT_MIN};
use std::fs::File;
use std::io::Read;
use std::time::Instant;

/// Best wall time of `rounds` runs of `job`, in milliseconds.
fn best(rounds: usize, mut job: impl FnMut() -> usize) -> (f64, usize) {
    let mut best = f64::MAX;
    let mut answer = 0;
    for _ in 0..rounds {
        let t = Instant::now();
        answer = std::hint::black_box(job());
        best = best.min(t.elapsed().as_secs_f64());
    }
    (best * 1e3, answer)
}

/// Every line of the file through `each`, read as the replay reads it.
fn each_line(file: &File, size: u64, mut each: impl FnMut(&[u8]) -> bool) -> usize {
    let mut reader = LineReader::new(file, 0, size);
    let mut ok = 0;
    while let Ok(Some((_, _, line))) = reader.next_line() {
        if !is_blank(line) && each(line) {
            ok += 1;
        }
    }
    ok
}

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("a transcript path");
    let rounds: usize = args.next().and_then(|r| r.parse().ok()).unwrap_or(5);
    let file = File::open(&path).expect("readable file");
    let size = file.metadata().expect("stat").len();
    let width = Width::detect();

    let (read, _) = best(rounds, || {
        // The limit's own loop: 1 MiB reads, newlines counted.
        let mut f = File::open(&path).expect("readable file");
        let mut buf = vec![0u8; 1 << 20];
        let mut lines = 0;
        while let Ok(n) = f.read(&mut buf) {
            if n == 0 {
                break;
            }
            lines += memchr::memchr_iter(b'\n', buf.get(..n).unwrap_or_default()).count();
        }
        lines
    });
    let (utf8, _) = best(rounds, || {
        each_line(&file, size, |l| simdutf8::basic::from_utf8(l).is_ok())
    });
    let (parse, parsed) = best(rounds, || {
        each_line(&file, size, |l| parse_using(l, Mode::Strict, width).is_ok())
    });
    let (one, _) = best(rounds, || {
        replay_split_from(&file, size, u64::MAX).map_or(0, |f| f.events.len())
    });
    let (two, _) = best(rounds, || {
        replay_split_from(&file, size, SPLIT_MIN).map_or(0, |f| f.events.len())
    });
    let row = |what: &str, ms: f64| println!("| {what} | {ms:.1} ms | {:.2}x |", ms / read);
    println!("{path}: {size} bytes, {parsed} lines parsed; one thread unless said");
    println!("| job | best | of the read |");
    println!("|---|---|---|");
    row("read + count newlines (1 MiB reads)", read);
    row("read by lines + UTF-8 check of every line", utf8);
    row("read by lines + strict JSON parse of every line", parse);
    row("the replay (parse + envelope checks + fold)", one);
    row("the replay on two threads (wall)", two);
}
