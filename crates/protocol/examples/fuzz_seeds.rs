//! Writes the fuzzer's seed inputs (every sample message, framed) into a directory:
//! `cargo run -p baton-protocol --features testing --example fuzz_seeds -- DIR`.

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let Some(dir) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: fuzz_seeds DIR");
        return ExitCode::from(2);
    };
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("cannot create {}: {e}", dir.display());
        return ExitCode::FAILURE;
    }
    let seeds = baton_protocol::fuzzing::seeds();
    for (i, seed) in seeds.iter().enumerate() {
        let path = dir.join(format!("seed-{i:03}"));
        if let Err(e) = std::fs::write(&path, seed) {
            eprintln!("cannot write {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    }
    println!("wrote {} seeds to {}", seeds.len(), dir.display());
    ExitCode::SUCCESS
}
