//! The in-process runtime every interposer and in-process user shares.
//!
//! - [`LocalScheduler`] keeps a view of this process's XQueues, feeds queue events and hints
//!   to a [`Policy`](baton_policies::Policy), and applies its decisions as suspend/resume
//!   operations, only where they change something.
//! - [`Inbox`] is the [`EventSink`](baton_core::EventSink) queues report to; events are
//!   processed outside the reporting thread, so a queue's submit path never runs a policy.
//! - [`AgentConfig`] reads the process's `BATON_*` settings (XSched's names as aliases).
//! - [`SchedulerThread`] runs a `LocalScheduler` on its own thread with wake-up timers, for live
//!   processes; virtual-time drivers call the `LocalScheduler` directly instead.
//! - [`ProcessInfoSource`] is how the agent learns a process's uid and niceness ([`ProcFs`] in
//!   live processes, [`StaticProcessInfo`] in tests); policies only see the numbers.
//! - [`DaemonClient`] schedules the process's queues through the daemon instead (global
//!   mode), failing open when the daemon is absent or dies.
//! - [`AgentScheduler`] is whichever of the two the settings ask for, for backends.
//! - [`socket_candidates`] says where the daemon listens.

mod config;
mod daemon_client;
mod inbox;
mod local;
mod procinfo;
mod scheduler;
mod socket;
mod thread;

pub use config::{AgentConfig, SchedulerMode};
pub use daemon_client::{ClientConfig, DaemonClient, QueueInfo};
pub use inbox::Inbox;
pub use local::{LocalScheduler, OpKind, OpRecord, QueueMeta, UnknownProcess, UnknownQueue};
pub use procinfo::{
    ProcFs, ProcessFacts, ProcessInfoSource, StaticProcessInfo, parse_nice, parse_uid,
};
pub use scheduler::{AgentScheduler, Registration};
pub use socket::{
    SOCKET_NAME, SYSTEM_SOCKET, socket_candidates, user_socket_path, user_socket_path_with,
};
pub use thread::{PROCESS_REFRESH, SchedulerThread};
