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

mod plan;
mod report;
mod run;
mod worker;

use std::process::ExitStatus;

use baton_cuda::probe::{self, ProbeError};

pub use plan::{GpuPlan, WorkerRole};
pub use report::{phase_label, summary, table};
pub use run::run;
pub use worker::{BeResult, HpResult, be_worker, hp_worker};

/// The GPU demo could not complete. Each message names the client or step that failed.
#[derive(Debug, thiserror::Error)]
pub enum GpuDemoError {
    /// The driver or a kernel failed.
    #[error(transparent)]
    Probe(#[from] ProbeError),
    /// A file or a process operation failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// A client process could not be started.
    #[error("starting the {role} client: {cause}")]
    Start {
        /// Which client.
        role: WorkerRole,
        /// Why.
        cause: std::io::Error,
    },
    /// A client ended without writing its result.
    #[error("the {} client failed ({status}) and wrote no result", .role.label())]
    NoResult {
        /// Which client.
        role: WorkerRole,
        /// How it ended.
        status: ExitStatus,
    },
    /// A client's result could not be read.
    #[error("the {} client's result: {cause}", .role.label())]
    Result {
        /// Which client.
        role: WorkerRole,
        /// What is wrong with it.
        cause: serde_json::Error,
    },
    /// A client's result is of another version.
    #[error("the {} client's result has schema {found:?}, not {expected:?}", .role.label())]
    Schema {
        /// Which client.
        role: WorkerRole,
        /// The schema this build reads.
        expected: &'static str,
        /// The schema the result carries.
        found: String,
    },
    /// The BE client ended before it was ready.
    #[error("the BE client stopped before it was ready ({0})")]
    NotReady(ExitStatus),
    /// The BE client took too long to get ready.
    #[error("the BE client did not get ready in 2 minutes")]
    ReadyTimeout,
    /// A client role other than `hp` and `be`.
    #[error("unknown GPU demo client {0:?}")]
    UnknownRole(String),
}

/// The first GPU's name, if a CUDA driver with a device is here.
pub fn available() -> Option<String> {
    probe::first_device_name(probe::open_driver(None).ok()?)
}
