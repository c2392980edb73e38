//! The lab: deterministic virtual-time experiments with many clients on the simulated device.
//!
//! A [`LabSpec`] names a device, a policy and any number of [`ClientSpec`]s, each a process's
//! stream (in a context of its own or shared with others) running a [`Workload`] — periodic
//! jobs, closed-loop jobs, or a flood — with its hints, and timed [`Action`]s (hints, policy
//! switches). [`run`] steps the simulated device, the clients' XQueues, a
//! [`LocalScheduler`](baton_scheduler::LocalScheduler) and the clients together from event to
//! event, one thread, no clock but the device's, and returns a [`LabResult`]: each client's
//! jobs and latencies, the work it completed over time, the scheduler's operations and the
//! policy's counters. The same spec always gives the same result.
//!
//! The policy tests (`tests/`) and the plots in `docs/policies/` (example `policy_plots`) are
//! built on it.
#![forbid(unsafe_code)]

mod client;
mod result;
mod run;
mod spec;

pub use baton_demo::{Job, SpanRange};
pub use result::{ClientResult, ClientSummary, CounterSummary, LabResult, LabSummary};
pub use run::run;
pub use spec::{Action, Announce, ClientSpec, ContextSpec, LabSpec, Workload};
