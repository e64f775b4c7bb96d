//! Fuzz target `scan`: see `core_invariants::scan` for what it checks.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| core_invariants::scan(data));
