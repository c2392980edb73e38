//! The CUDA interposer: `libbaton_interposer.so`, preloaded into an unmodified application by
//! `baton run`, routes its CUDA driver calls onto XQueues.
//!
//! # How calls reach it
//!
//! - Applications linked against `libcuda.so.1` bind to the functions exported here first,
//!   because the library is preloaded (`LD_PRELOAD`).
//! - Applications that `dlopen` the driver and look functions up (the CUDA runtime inside
//!   PyTorch, cuBLAS, JAX, CuPy…) go through `dlsym`, which this library also
//!   exports: a looked-up driver function that Baton intercepts is replaced by its hook. The
//!   `RTLD_NEXT` path jumps straight to the real `dlsym`, so other preloaded libraries keep
//!   their semantics.
//! - Most functions are obtained through `cuGetProcAddress[_v2]`. Its hooks call the real one
//!   and replace the returned pointer by the hook of the *same real function*, so the version
//!   and per-thread-default-stream choices the driver made stay exact.
//! - Every other symbol of the real driver is untouched: it was loaded normally.
//!
//! # What happens to a call
//!
//! See `ops.rs`: launches become commands of the stream's XQueue (launched at once on the
//! caller's thread when nothing holds them back, deep-copied and deferred otherwise);
//! synchronous and unbuffered operations run in order after everything submitted before them;
//! cross-stream dependencies (legacy default stream, events) are kept by launching the
//! commands they depend on first.
//!
//! # Safety of the host process
//!
//! No panic crosses `extern "C"` (every hook runs under `catch_unwind` and falls back to the
//! real driver); nothing is printed but a notice (Baton is not active, a setting was ignored)
//! unless `BATON_LOG` asks, and never to stdout; a child after `fork` starts with
//! fresh state; buffered work is launched before exit and before its context is destroyed.

mod blas;
mod capi;
mod channel;
mod dlsym;
mod event_table;
mod ffi;
mod functions;
mod hooks;
mod libdl;
mod ops;
mod profile;
mod python;
mod queues;
mod registry;
mod report;
mod runtime;
mod sched_link;
