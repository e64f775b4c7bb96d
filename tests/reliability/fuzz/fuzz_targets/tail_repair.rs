//! Fuzz target `tail_repair`: see `core_invariants::tail_repair` for what it checks.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| core_invariants::tail_repair(data));
