//! `dlsym-direct [SCENARIO]`: runs a scenario (by default `order`) with every driver function
//! obtained by `dlsym` on the `libcuda.so.1` handle, as cuBLAS and cuDNN obtain some of theirs.

use std::process::ExitCode;

fn main() -> ExitCode {
    let name = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "order".to_owned());
    match baton_cuda_testapps::scenarios::dlsym_direct(&name) {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("dlsym-direct {name}: {error}");
            ExitCode::FAILURE
        }
    }
}
