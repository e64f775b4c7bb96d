//! Speed of the native replay (read, validate, fold; no Python) on a transcript:
//! `cargo run --release --example replay_speed -- FILE [ROUNDS] [one|two] [load|history]`
//! prints the best wall time and the process CPU time per round of load's strict fold, or
//! of the lenient fold of a history read (a development aid and the target of `perf
//! record`; the benchmarks of record are `benches/run.py`).
use _native::replay::history::read_split_from;
use _native::replay::stream::{replay_split_from, SPLIT_MIN};
use std::time::Instant;

fn cpu_seconds() -> f64 {
    // /proc/self/stat: utime and stime are fields 14 and 15, in clock ticks (100 a second
    // on Linux); coarse, so it is summed over the rounds.
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit(')').next().unwrap_or_default();
    let fields: Vec<&str> = after.split_whitespace().collect();
    let tick = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (tick(11) + tick(12)) / 100.0
}

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("a transcript path");
    let rounds: usize = args.next().and_then(|r| r.parse().ok()).unwrap_or(5);
    let split_min = match args.next().as_deref() {
        Some("one") => u64::MAX,
        _ => SPLIT_MIN,
    };
    let history = args.next().as_deref() == Some("history");
    let file = std::fs::File::open(&path).expect("readable file");
    let size = file.metadata().expect("stat").len();
    let mut best = f64::MAX;
    let cpu0 = cpu_seconds();
    for _ in 0..rounds {
        let t = Instant::now();
        if history {
            let read = read_split_from(&file, size, split_min).expect("a readable file");
            best = best.min(t.elapsed().as_secs_f64());
            std::hint::black_box(&read);
        } else {
            let fold = replay_split_from(&file, size, split_min).expect("a valid transcript");
            best = best.min(t.elapsed().as_secs_f64());
            std::hint::black_box(&fold);
        }
    }
    let cpu = (cpu_seconds() - cpu0) / rounds as f64;
    println!(
        "{path}: best {:.1} ms ({:.0} MB/s), CPU {:.1} ms a round",
        best * 1e3,
        size as f64 / best / 1e6,
        cpu * 1e3
    );
}
