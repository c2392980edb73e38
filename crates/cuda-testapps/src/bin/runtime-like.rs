//! `runtime-like SCENARIO`: runs a scenario with every driver function obtained through
//! `cuGetProcAddress_v2`, as the CUDA runtime obtains them.

use std::process::ExitCode;

fn main() -> ExitCode {
    let name = std::env::args().nth(1).unwrap_or_default();
    match baton_cuda_testapps::scenarios::runtime_like(&name) {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("runtime-like {name}: {error}");
            ExitCode::FAILURE
        }
    }
}
