//! The core of Baton: preemptible command queues over any accelerator.
//!
//! - [`HwQueue`] is the hardware adapter contract: a backend (the simulated device, CUDA, …)
//!   implements it for one hardware command queue and declares the highest preemption
//!   [`Level`] it supports.
//! - [`HwCommand`] is one unit of work on a hardware queue; its [`CommandKind`] and
//!   [`CommandProps`] tell the scheduler what may be done with it.
//! - [`XQueue`] wraps one `HwQueue` and makes it preemptible: it buffers submitted commands,
//!   launches them progressively (Level 1: at most `threshold` in flight, a sync point every
//!   `batch` commands), and can be suspended and resumed at any moment without losing,
//!   duplicating or reordering a command.
//! - [`Clock`] is injected everywhere time is read, so the whole crate runs in virtual time
//!   under test.
//! - [`percentile`] is the one percentile rule (nearest rank) every report uses.
//!
//! **Architecture invariant:** this crate performs no I/O, knows nothing of CUDA, sockets, the
//! environment or serialization. Its only window on the outside world is the `HwQueue` a
//! backend hands it and the `Clock` and [`EventSink`] its owner injects.
#![forbid(unsafe_code)]

mod clock;
mod command;
mod config;
mod dependency;
mod error;
mod event;
mod held_back;
mod hwqueue;
mod level;
pub mod locks;
mod stats;
mod submission;
mod sync;
mod xqueue;

#[cfg(any(test, feature = "testing"))]
pub mod testing;

pub use clock::{Clock, ManualClock, MonotonicClock, Nanos};
pub use command::{CommandKind, CommandProps, CommandSeq, CommandState, HwCommand};
pub use config::{ConfigError, LaunchConfig, Priority};
pub use dependency::{Dependency, LaunchProgress};
pub use error::XQueueError;
pub use event::{EventSink, NullSink, QueueEvent, QueueState, XQueueId};
pub use held_back::HeldBackCount;
pub use hwqueue::{HwError, HwQueue, InflightRange};
pub use level::Level;
pub use stats::percentile;
pub use submission::{Owned, Submission, SubmitPath, Submitted};
pub use xqueue::{
    Asking, Attention, DEFAULT_MAX_BUFFERED, Drive, IdleQuery, InflightAtSuspend, QueueControl,
    ResumeFlags, SuspendFlags, Synchronizing, Turn, Usage, XQueue, XQueueBuilder, XQueueStatus,
};
