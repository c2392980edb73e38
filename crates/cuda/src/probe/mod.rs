//! Probes: small programs run on the GPU to find out what this GPU and driver can do, and the
//! workload of the GPU demo.
//!
//! Everything here drives the driver directly through [`Driver`](crate::Driver), with kernels
//! JIT-compiled from PTX by the driver (nothing needs a CUDA toolkit):
//!
//! - [`open_driver`] resolves the driver once per process; [`inventory`] and
//!   [`first_device_name`] say what it sees; [`exports_hooks`] whether a library loads and
//!   exports Baton's hooks (the interposer).
//! - [`Context`] is a context the probes run in; [`Kernels`] two kernels loaded in it — `spin`
//!   (waits on the GPU's timer: a latency) and `work` (a fixed chain of multiply-adds: an
//!   amount of work) — with a stream to launch them on; [`EventRing`] keeps a bounded number
//!   of launches outstanding.
//! - The self-tests `baton doctor` claims levels by, each returning a typed report:
//!   [`level2`] (a kernel behind a closed [`Gate`](crate::Gate) is held, then runs),
//!   [`level3`] (shortening a context's time slice hands the GPU to another context sooner;
//!   run in a child process under the interposer, [`level3_in_child`]) and [`spatial`]
//!   (a [`Confined`](crate::Confined) kernel's blocks stay on its partition's SMs).
//!
//! Reports are JSON documents for people and tools, not wire messages: each carries a
//! `schema` field, `"baton.<document>/<version>"`, bumped when a field changes meaning or
//! goes away.
//!
//! Probes retain contexts and load modules they never release: they run once, in processes
//! that exit soon after.

mod devices;
mod error;
mod kernels;
mod level2;
mod level3;
mod library;
mod spatial;

pub use devices::{Device, Inventory, first_device_name, inventory};
pub use error::ProbeError;
pub use kernels::{Context, EventRing, Kernels};
pub use level2::{Level2Report, level2};
pub use level3::{
    DEFAULT_YIELD_US, Level3Answer, Level3Failure, Level3Report, SliceMeasurement, level3,
    level3_in_child,
};
pub use library::{exports_hooks, open_driver};
pub use spatial::{SpatialReport, partition_sms, spatial};
