//! The committed fuzz corpora (`fuzz/seeds/<target>/`, minimized with `cargo fuzz cmin`)
//! replayed through the fuzz targets' own harnesses on the stable toolchain, so every input
//! that ever found new behaviour — and every crash fixed — runs in the ordinary test suite.
//! Fuzzing itself needs nightly: `scripts/fuzz.sh SECONDS [TARGET…]`.

#[path = "../../../fuzz/src/harness.rs"]
mod harness;

use std::path::Path;

/// Runs `check` on every file of the target's corpus; returns how many there were.
fn replay(target: &str, check: fn(&[u8])) -> usize {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/seeds")
        .join(target);
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = e.unwrap().path();
        let data = std::fs::read(&path).unwrap();
        let r = std::panic::catch_unwind(|| check(&data));
        assert!(r.is_ok(), "{} fails its harness", path.display());
        n += 1;
    }
    assert!(n > 0, "the {target} corpus is empty");
    n
}

#[test]
fn the_agent_settings_corpus_passes() {
    replay("agent_config", harness::agent_config);
}

#[test]
fn the_cli_values_corpus_passes() {
    replay("cli_values", harness::cli_values);
}

#[test]
fn the_proc_files_corpus_passes() {
    replay("proc_files", harness::proc_files);
}

#[test]
fn the_frame_decoder_corpus_passes() {
    replay("decode_frames", baton_protocol::fuzzing::check_input);
}
