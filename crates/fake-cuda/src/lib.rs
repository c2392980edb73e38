//! **Test infrastructure**: a host-only test double of `libcuda.so.1`.
//!
//! Built as `libfake_cuda.so` (soname `libcuda.so.1`, linked `-Bsymbolic`). Tests expose it as
//! `libcuda.so.1` (and `libcuda.so`) in a temporary directory on `LD_LIBRARY_PATH`, so that
//! unmodified programs, and Baton's interposer in front of them, run against it as against the
//! real driver. Nothing here is shipped.
//!
//! It implements the driver semantics the interposer must preserve, on the host:
//! - one device; contexts with a per-thread current-context stack and a primary context;
//! - "device" memory that is host memory, so a `CUdeviceptr` is a host address (`memory.rs`);
//! - streams executing their commands in FIFO order on one worker thread each, with CUDA's
//!   legacy default stream semantics and per-thread default streams (`stream.rs`);
//! - built-in kernels named by a text module image (`kernels.rs`, `module.rs`), launched with
//!   arguments from `kernelParams` or an `extra` buffer, copied at launch (`launch.rs`);
//! - events, cross-stream waits, stream memory operations, host functions, stream capture
//!   (streams joining a capture through captured events, per-thread capture modes and the
//!   calls each mode forbids, as measured on an H100) and graphs (`events.rs`, `capture.rs`,
//!   `graph.rs`);
//! - handles of unloaded functions reused by the next functions loaded, as addresses are on a
//!   GPU (`module.rs`);
//! - `cuGetProcAddress` with versioned and per-thread symbol selection (`procaddr.rs`);
//! - a JSON-lines log of every call and every executed command (`FAKE_CUDA_LOG`, `log.rs`);
//! - `FAKE_CUDA_KERNEL_US` adds a fixed duration to every kernel, to create in-flight work;
//!   `FAKE_CUDA_LAZY_LOADING` makes each function's first launch wait for all pending work of
//!   its context, as CUDA's lazy module loading does.
//!
//! Every export is an `extern "C"` function that never unwinds (`entry.rs`). The state is per
//! process and starts anew in a forked child (`state.rs`); queued work is drained at exit.
//!
//! **Architecture invariant:** serializable types stay private to `log.rs`; nothing of this crate
//! is a Rust API. Simplifications against the real driver are listed in the module docs where
//! they apply (captured graphs are linear, captured event records are not graph nodes, grid
//! dimensions do not change what a kernel computes).

#[cfg(not(all(target_os = "linux", target_pointer_width = "64")))]
compile_error!("the fake CUDA driver models 64-bit Linux only");

mod capture;
mod context;
mod copy;
mod device;
mod entry;
mod events;
mod graph;
mod green;
mod kernels;
mod launch;
mod log;
mod memory;
mod module;
mod ops;
mod procaddr;
mod state;
mod stream;
mod stream_api;
mod symbols;
