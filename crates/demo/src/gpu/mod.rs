//! The demo on a real GPU: the same story as on the simulated device, with real processes.
//!
//! A latency-critical client issues requests of short kernels (`hp_kernels` of 20–80 µs)
//! every few milliseconds; a best-effort client keeps the GPU full of long kernels (1–5 ms of
//! work). The same four [`Phase`](crate::Phase)s as on the simulated device: HP alone, BE
//! alone, both natively (the GPU time-slices the two processes), and both under Baton
//! (`baton run --priority 10` / `--priority 0 --level 3`, one daemon). The result is a
//! [`DemoSummary`](crate::DemoSummary) with the same [`DemoFigures`](crate::DemoFigures) as a
//! simulated run (BE throughput in GPU-seconds of work per second).
//!
//! The clients are processes of the `baton` binary whose path [`run`] is given
//! (`baton demo --gpu-worker hp|be`, [`hp_worker`] and [`be_worker`]), driving the GPU
//! through the driver API with kernels JIT-compiled from PTX (`baton_cuda::probe`): no CUDA
//! toolkit needed. Each writes its result ([`HpResult`], [`BeResult`]) to a file the parent
//! reads.

mod error;
mod plan;
mod report;
mod run;
mod worker;

use baton_cuda::probe;

pub use error::GpuDemoError;
pub use plan::{GpuPlan, UnknownRole, WorkerRole};
pub use report::{phase_label, summary, table};
pub use run::run;
pub use worker::{BeResult, HpResult, be_worker, hp_worker};

/// The first GPU's name, if a CUDA driver with a device is here.
pub fn available() -> Option<String> {
    probe::first_device_name(probe::open_driver(None).ok()?)
}
