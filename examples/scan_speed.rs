//! Single-thread speed of the strict line parse on a transcript, per block width:
//! `cargo run --release --example scan_speed -- FILE [ROUNDS]` (a development aid; the
//! benchmarks of record are `benches/run.py`).
use _native::json::grammar::{is_blank, parse_using, Mode};
use _native::json::simd::Width;
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("a transcript path");
    let rounds: usize = args.next().and_then(|r| r.parse().ok()).unwrap_or(3);
    let data = std::fs::read(&path).expect("readable file");
    let lines: Vec<&[u8]> = data
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty() && !is_blank(l))
        .collect();
    for width in Width::all_supported() {
        let mut best = f64::MAX;
        for _ in 0..rounds {
            let t = Instant::now();
            let mut ok = 0usize;
            for line in &lines {
                ok += usize::from(parse_using(line, Mode::Strict, width).is_ok());
            }
            best = best.min(t.elapsed().as_secs_f64());
            assert_eq!(ok, lines.len());
        }
        println!("{width:?}: {:.0} MB/s", data.len() as f64 / best / 1e6);
    }
}
