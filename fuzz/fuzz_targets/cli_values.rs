//! Feeds libFuzzer's inputs to the `cli_values` harness (`fuzz/src/harness.rs`, shared with the
//! stable-toolchain replay of the corpus in `crates/lab/tests/fuzz_corpus.rs`).

#![no_main]

#[path = "../src/harness.rs"]
mod harness;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| harness::cli_values(data));
