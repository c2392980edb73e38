//! Feeds libFuzzer's inputs to the protocol's fuzzing harness: both frame readers, every
//! message type, validation and re-encoding (see `baton_protocol::fuzzing`).

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| baton_protocol::fuzzing::check_input(data));
