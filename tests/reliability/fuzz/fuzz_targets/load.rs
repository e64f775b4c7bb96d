//! Fuzz target `load`: see `core_invariants::load` for what it checks.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| core_invariants::load(data));
