//! **Test infrastructure**: programs that reach the CUDA driver the way real applications do,
//! so that Baton's interposer (and the fake driver, `baton-fake-cuda`) can be tested with real
//! processes and no GPU.
//!
//! - `runtime-like SCENARIO` opens `libcuda.so.1` by soname, takes `cuGetProcAddress_v2` with
//!   `dlsym`, probes it as the CUDA runtime does (an empty name with NULL `symbolStatus`,
//!   `cuGetProcAddress` itself) and resolves every function through it with explicit versions
//!   and flags ([`api`]).
//! - `dlsym-direct [SCENARIO]` resolves every function with `dlsym` by symbol name, base names
//!   and `_v2` names, as cuBLAS and cuDNN do.
//! - `tests/data/linked.c` links with `-lcuda`.
//!
//! Each scenario ([`scenarios`]) checks its results against a host model, prints one
//! deterministic result line on stdout and exits 0, or prints the failure on stderr and exits 1.
//! Scenarios use the built-in kernels of the fake driver's module image ([`gpu::MODULE_IMAGE`]).
//! [`mix`] is the seeded multi-stream program of the soak and chaos runs, with the checker of
//! its driver logs. Nothing here is shipped.

pub mod api;
pub mod error;
pub mod gpu;
pub mod mix;
pub mod scenarios;
