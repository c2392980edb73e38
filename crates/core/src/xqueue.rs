//! The XQueue: a preemptible wrapper over one hardware queue.
//!
//! # State
//!
//! A queue numbers its commands 0, 1, 2… in submission order and keeps three counters,
//! `completed ≤ launched ≤ submitted`. Command `s` is
//! - *pending* while `launched ≤ s < submitted` (held in the buffer, in order),
//! - *in flight* while `completed ≤ s < launched` (handed to the hardware),
//! - *completed* once `s < completed`.
//!
//! The counters only grow, so a command's state only moves forward; launches only take the
//! buffer's front, so the hardware sees commands exactly in submission order, each once.
//!
//! Completion is learnt from *sync points*: after every `batch`-th launch the queue asks the
//! hardware for a sync point covering everything launched so far, and records
//! `(end, sync point)`. When a sync point is reached, `completed` jumps to its `end`.
//!
//! # Who launches
//!
//! - **Fast path:** `submit` launches on the caller's thread when the buffer is empty, the queue
//!   is not suspended and fewer than `threshold` commands are in flight. A queue nothing
//!   suspends costs one uncontended lock and the hardware launch.
//! - Otherwise the command is buffered, and the **launch worker** (a thread per queue, when
//!   driven by [`Drive::Worker`]) launches from the buffer as the window frees up: it blocks on
//!   the oldest sync point, advances `completed`, launches more. When the buffer is empty it
//!   keeps following the in-flight tail so the queue reports Idle when its work is done.
//! - With [`Drive::External`] there is no worker: whoever drives the hardware (the simulator in
//!   virtual time) calls [`XQueue::poll`] when the device made progress.
//!
//! Every launch happens under the state lock, so launches from the fast path and the worker
//! never interleave out of order.
//!
//! # Suspension
//!
//! `suspend` sets a flag under the lock: from that moment nothing more is launched. At Level 2
//! it also deactivates the hardware queue (launched commands do not start), at Level 3 it
//! interrupts it (the running command stops). `resume` undoes the hardware step, clears the
//! flag and wakes the worker, which continues with the buffer's front. Suspend and resume are
//! serialized by a separate control lock so the slow hardware calls never hold the state lock.
//!
//! # Events
//!
//! `submitted == completed` is Idle, anything else is Ready. Each change is reported to the
//! [`EventSink`](crate::EventSink) after the state lock is released, numbered so the receiver can order them.

mod builder;
mod completion;
mod control;
mod options;
mod order;
mod queue;
mod shared;
mod status;
mod submit;
mod usage;
mod worker;

pub use builder::{DEFAULT_MAX_BUFFERED, XQueueBuilder};
pub use completion::{Asking, IdleQuery};
pub use options::{Drive, ResumeFlags, SuspendFlags};
pub use order::Synchronizing;
pub use queue::XQueue;
pub use shared::InflightAtSuspend;
pub use status::{Attention, QueueControl, XQueueStatus};
pub use submit::Turn;
pub use usage::Usage;

#[cfg(all(test, not(loom)))]
mod tests;

#[cfg(all(test, loom))]
mod loom_tests;
