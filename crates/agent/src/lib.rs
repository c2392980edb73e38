//! The in-process client every interposer and in-process user shares: how a process's queues
//! are scheduled, inside it or by the daemon.
//!
//! - [`AgentConfig`] reads the process's `BATON_*` settings (XSched's names as aliases).
//! - [`AgentScheduler`] is whichever scheduler the settings ask for, for backends: a
//!   [`SchedulerThread`] running `baton_scheduler`'s `LocalScheduler` in this process, or a
//!   [`DaemonClient`].
//! - [`DaemonClient`] schedules the process's queues through the daemon (global mode), failing
//!   open when the daemon is absent or dies.
//! - [`socket_candidates`] says where the daemon listens.
//! - [`log`] is what Baton says inside the process: logs when `BATON_LOG` asks, and notices.
//!
//! The types a backend needs to describe its queues (their hints, device, process facts) are
//! re-exported here, so a backend depends on this crate alone for scheduling.

mod config;
mod daemon_client;
pub mod log;
mod scheduler;
mod socket;

pub use baton_policies::{DeviceId, QueueHints, Readiness};
pub use baton_protocol::{Backend, DeviceRef, Hint as WireHint, HintKind as WireHintKind, MAX_SMS};
pub use baton_scheduler::{QueueMeta, SchedulerThread};
pub use config::{AgentConfig, SchedulerMode, Setting, SettingDefault, SmShare};
pub use daemon_client::{ClientConfig, DaemonClient, LinkTraffic, QueueInfo};
pub use scheduler::{AgentScheduler, Registration, StartError};
pub use socket::{
    SOCKET_NAME, SYSTEM_SOCKET, socket_candidates, user_socket_path, user_socket_path_with,
};
