//! **Test infrastructure**: a host-only test double of `libcuda.so.1`.
//!
//! Built as `libfake_cuda.so` (soname `libcuda.so.1`, linked `-Bsymbolic`). Tests expose it as
//! `libcuda.so.1` (and `libcuda.so`) in a temporary directory on `LD_LIBRARY_PATH`, so that
//! unmodified programs, and Baton's interposer in front of them, run against it as against the
//! real driver. Nothing here is shipped.
//!
//! It implements the driver semantics the interposer must preserve, on the host:
//! - `FAKE_CUDA_DEVICES` devices (default one), each with its own UUID, selected and renumbered
//!   by `CUDA_VISIBLE_DEVICES` as the real driver does (`devices.rs`); contexts, each on one
//!   device, with a per-thread current-context stack and a primary context per device;
//! - "device" memory that is host memory, so a `CUdeviceptr` is a host address (`memory.rs`,
//!   `memory_api.rs`);
//! - streams executing their commands in FIFO order on one worker thread each, with CUDA's
//!   legacy default stream semantics and per-thread default streams (`stream.rs`,
//!   `current.rs`);
//! - built-in kernels named by a text module image (`kernels.rs`, `module.rs`), launched with
//!   arguments from `kernelParams` or an `extra` buffer, copied at launch (`launch.rs`);
//! - events, cross-stream waits, stream memory operations, host functions, stream capture
//!   (streams joining a capture through captured events, per-thread capture modes and the
//!   calls each mode forbids, as measured on an H100) and graphs (`events.rs`, `capture.rs`,
//!   `capture_api.rs`, `ops.rs`, `graph_api.rs`);
//! - handles of unloaded functions reused by the next functions loaded, as addresses are on a
//!   GPU (`module_api.rs`);
//! - `cuGetProcAddress` with versioned and per-thread symbol selection (`procaddr.rs`);
//! - a JSON-lines log of every call and every executed command (`FAKE_CUDA_LOG`, `log.rs`);
//! - `FAKE_CUDA_KERNEL_US` adds a fixed duration to every kernel, to create in-flight work;
//!   `FAKE_CUDA_SMS` gives the device that many SMs (default 132);
//!   `FAKE_CUDA_LAZY_LOADING` makes each function's first launch wait for all pending work of
//!   its context, as CUDA's lazy module loading does.
//!
//! Every export is an `extern "C"` function that never unwinds (`entry.rs`). The state is per
//! process and starts anew in a forked child (`machine.rs`, `state.rs`); queued work is drained
//! at exit.
//!
//! # Layers
//!
//! Listed bottom-up; each module imports only modules listed before it, so no imports form a
//! circle:
//! 1. Base, depending on nothing of the crate: handles (`handle.rs`), locking (`sync.rs`), the
//!    process and per-process values (`process.rs`), results and out-parameters (`result.rs`).
//! 2. The devices (`devices.rs`), the log format (`log.rs`), the memory table (`memory.rs`), and the machine state every
//!    executed command needs (`machine.rs`: memory, the log, completed commands, settings).
//! 3. The model: built-in kernels (`kernels.rs`), operations, graphs and their execution
//!    (`ops.rs`), captures (`capture.rs`), streams and what a context's streams share
//!    (`stream.rs`), contexts (`context.rs`), events (`events.rs`), modules and functions
//!    (`module.rs`), green contexts (`green.rs`).
//! 4. The registries of the objects handed out (`state.rs`) and the calling thread's view
//!    (`current.rs`: current context, per-thread streams, which stream a handle names).
//! 5. The entry points: the export boundary (`entry.rs`), then `device.rs`, `context_api.rs`,
//!    `capture_api.rs`, `events_api.rs`, `stream_api.rs`, `memory_api.rs`, `copy.rs`,
//!    `module_api.rs`, `launch.rs`, `graph_api.rs`, `green_api.rs`; `symbols.rs` and
//!    `procaddr.rs` (which hands out all of them) on top.
//!
//! **Architecture invariant:** serializable types stay private to `log.rs`; nothing of this crate
//! is a Rust API. Simplifications against the real driver are listed in the module docs where
//! they apply (captured graphs are linear, captured event records are not graph nodes, grid
//! dimensions do not change what a kernel computes).

#[cfg(not(all(target_os = "linux", target_pointer_width = "64")))]
compile_error!("the fake CUDA driver models 64-bit Linux only");

// Base.
mod handle;
mod process;
mod result;
mod sync;

// Log, devices, memory table and machine state.
mod devices;
mod log;
mod machine;
mod memory;

// Model.
mod capture;
mod context;
mod events;
mod green;
mod kernels;
mod module;
mod ops;
mod stream;

// Registries and the calling thread.
mod current;
mod state;

// Entry points.
mod capture_api;
mod context_api;
mod copy;
mod device;
mod entry;
mod events_api;
mod graph_api;
mod green_api;
mod launch;
mod memory_api;
mod module_api;
mod procaddr;
mod stream_api;
mod symbols;
