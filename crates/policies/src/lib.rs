//! Scheduling policies: pure functions of a status snapshot plus hints.
//!
//! A [`Policy`] sees a [`Snapshot`] (every queue the scheduler manages, whether it is ready,
//! since when, its process and device, and the [`QueueHints`] given for it) and answers a
//! [`Decision`]: which queues to suspend (all others run) and, optionally, when to be asked
//! again. It performs no I/O and reads no clock: the snapshot carries the time.
//!
//! Adding a policy is one file implementing [`Policy`] and one line in [`registry`].
//!
//! **Architecture invariant:** nothing here touches an XQueue. The local scheduler and the
//! daemon turn decisions into suspend/resume operations.

mod decision;
mod hint;
mod hpf;
pub mod registry;
mod snapshot;

pub use decision::Decision;
pub use hint::{Hint, HintError, QueueHints};
pub use hpf::Hpf;
pub use registry::{PolicyInfo, UnknownPolicy, by_name, catalog};
pub use snapshot::{DeviceId, QueueView, Snapshot};

/// A scheduling policy.
pub trait Policy: Send {
    /// The name it is registered under (`hpf`, `up`, …).
    fn name(&self) -> &'static str;

    /// Decides which queues run now. Called on every queue event, hint change and requested
    /// wake-up; must be cheap (a decision across 100 processes within tens of microseconds).
    fn decide(&mut self, snapshot: &Snapshot<'_>) -> Decision;

    /// Whether `queue`'s Idle/Ready transitions can change this policy's decisions. Queues
    /// for which it says no are not asked to report them (each report wakes the scheduler);
    /// the answer is asked again after every decision. Default: every queue matters.
    fn wants_events(&self, snapshot: &Snapshot<'_>, queue: &QueueView) -> bool {
        let _ = (snapshot, queue);
        true
    }
}
