//! What every Baton scheduler runs, whether inside one process or in the daemon for all of
//! them.
//!
//! - [`LocalScheduler`] keeps a view of the queues it schedules (registered through
//!   [`QueueControl`](baton_core::QueueControl) handles: real XQueues in a process, proxies of
//!   remote ones in the daemon), feeds their events and hints to a
//!   [`Policy`](baton_policies::Policy), and applies its decisions as suspend/resume operations,
//!   only where they change something, after priority inheritance.
//! - [`Inbox`] is the [`EventSink`](baton_core::EventSink) queues report to; events are
//!   processed outside the reporting thread, so a queue's submit path never runs a policy.
//! - [`SchedulerThread`] runs a `LocalScheduler` on its own thread with wake-up timers, for live
//!   processes; virtual-time drivers call the `LocalScheduler` directly instead.
//! - [`ProcessInfoSource`] is how the scheduler learns a process's uid and niceness
//!   ([`ProcFs`] in live processes, [`StaticProcessInfo`] in tests); policies only see the
//!   numbers.
//!
//! **Architecture invariant:** no I/O besides reading `/proc` through [`ProcFs`], no sockets,
//! no CUDA; time comes from the caller (a [`Clock`](baton_core::Clock) or a given instant).
#![forbid(unsafe_code)]

mod inbox;
mod local;
mod procinfo;
mod thread;

pub use inbox::Inbox;
pub use local::{LocalScheduler, OpKind, OpRecord, QueueMeta, UnknownProcess, UnknownQueue};
pub use procinfo::{
    ProcFs, ProcessFacts, ProcessInfoSource, StaticProcessInfo, parse_nice, parse_uid,
};
pub use thread::{PROCESS_REFRESH, SchedulerThread};
