//! How the GPU demo fails.

use std::process::ExitStatus;

use baton_cuda::probe::ProbeError;

use super::plan::{UnknownRole, WorkerRole};

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
    #[error(transparent)]
    UnknownRole(#[from] UnknownRole),
}
