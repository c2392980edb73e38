//! CUDA for Baton, without linking CUDA.
//!
//! - [`Driver`]: the driver's entry points, resolved at run time from a library handle (never
//!   linked at build time, so Baton builds and tests where there is no CUDA). A missing
//!   library or symbol is a `None` entry and an error at the call, never a panic: this code
//!   runs inside other people's processes.
//! - [`DriverError`] and [`check`]: the thin Result layer; every call site names the driver
//!   function it called.
//! - [`EventPool`]: reusable events, the sync points of CUDA queues.
//! - [`KernelArgs`]: a deep copy of a kernel launch's arguments (`kernelParams` sized by
//!   `cuFuncGetParamInfo`/`cuKernelGetParamInfo`, or the `extra` buffer), so a launch can be
//!   deferred after the application's call returned.
//! - [`CudaCommand`] and [`CudaHwQueue`]: the CUDA implementation of [`baton_core::HwQueue`]
//!   at Level 1, and at Level 3 with a [`rm::ContextSlice`].
//! - [`Launch`]: a stream operation as the application called it, the value an interposer
//!   submits; `launch.rs` holds every driver call that launches one, borrowed or owned.
//! - [`SmPartition`] and [`Confined`]: a stream's kernels confined to part of the SMs
//!   (green contexts), so more urgent kernels always find free SMs.
//! - [`rm`]: the context's channel group found from libcuda's resource-manager calls, and its
//!   time slice (Level 3).
//! - [`probe`]: small programs run on the GPU (PTX kernels JIT-compiled by the driver): the
//!   self-tests `baton doctor` claims levels by, with typed reports, and the GPU demo's
//!   workload.
//!
//! Raw declarations come from [`baton_cuda_sys`], re-exported as [`sys`].

mod command;
mod describe;
mod driver;
mod error;
mod events;
mod gate;
mod green;
mod hwqueue;
mod launch;
mod params;
pub mod probe;
pub mod rm;
mod shared_limit;

pub use baton_core as core;
pub use baton_cuda_sys as sys;
pub use command::{CudaCommand, HostPtr, MemsetWidth, attribute_events, cooperative_attrs};
pub use driver::{Driver, open_library};
pub use error::{DriverError, LibraryError, check};
pub use events::{EventPool, PooledEvent};
pub use gate::Gate;
pub use green::{Confined, SmPartition};
pub use hwqueue::{CaptureGate, CudaHwQueue};
pub use launch::{KernelCall, KernelExCall, Launch, Op, add_driver_ns, take_driver_ns};
pub use params::{KernelArgs, ParamCache, ParamLayout};
pub use shared_limit::{LaunchHandle, attribute_lock, read_attribute};
