//! What a scheduler sees of a queue and may do with it, whatever its hardware.

use super::options::{ResumeFlags, SuspendFlags};
use crate::{LaunchConfig, Level, QueueState, XQueueError, XQueueId};

/// A snapshot of one XQueue, as a scheduler sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct XQueueStatus {
    /// The queue.
    pub id: XQueueId,
    /// Idle or Ready.
    pub state: QueueState,
    /// Whether a scheduler suspended it.
    pub suspended: bool,
    /// The level suspension uses.
    pub level: Level,
    /// The highest level its hardware supports.
    pub max_level: Level,
    /// Its launch window.
    pub config: LaunchConfig,
    /// Commands buffered, not yet launched.
    pub pending: u64,
    /// Commands launched, not known complete.
    pub inflight: u64,
    /// Commands ever submitted.
    pub submitted: u64,
    /// Commands known complete.
    pub completed: u64,
    /// Idle/Ready transitions so far (see [`QueueEvent::transition`](crate::QueueEvent)).
    pub transitions: u64,
}

/// What a scheduler can do with a queue, whatever its hardware: the object-safe face of
/// [`XQueue`](crate::XQueue).
pub trait QueueControl: Send + Sync {
    /// The queue's identity.
    fn id(&self) -> XQueueId;
    /// Its current state.
    fn status(&self) -> XQueueStatus;
    /// Stops it from running; see [`XQueue::suspend`](crate::XQueue::suspend).
    fn suspend(&self, flags: SuspendFlags) -> Result<(), XQueueError>;
    /// Lets it run again; see [`XQueue::resume`](crate::XQueue::resume).
    fn resume(&self, flags: ResumeFlags) -> Result<(), XQueueError>;
    /// Chooses the level suspension uses.
    fn set_level(&self, level: Level) -> Result<(), XQueueError>;
    /// Changes the launch window.
    fn set_launch_config(&self, config: LaunchConfig);
    /// Whether the queue must report going idle even if its application never synchronizes;
    /// see [`XQueue::set_idle_watch`](crate::XQueue::set_idle_watch).
    fn set_idle_watch(&self, on: bool);
    /// Whether the queue reports its Idle/Ready transitions; see
    /// [`XQueue::set_reporting`](crate::XQueue::set_reporting).
    fn set_reporting(&self, on: bool);
    /// Whether the queue may skip its in-flight window; see
    /// [`XQueue::set_unbounded`](crate::XQueue::set_unbounded).
    fn set_unbounded(&self, on: bool);
    /// Whether it runs unbounded only because of what was measured of its commands, to be
    /// measured again now and then; see [`XQueue::set_remeasure`](crate::XQueue::set_remeasure).
    /// Default: ignored, for queues that measure nothing.
    fn set_remeasure(&self, on: bool) {
        let _ = on;
    }
    /// Whether a scheduler may hold the queue back now, not only keep it suspendable; see
    /// [`XQueue::set_holdable`](crate::XQueue::set_holdable). Default: ignored.
    fn set_holdable(&self, on: bool) {
        let _ = on;
    }
    /// Whether the queue outranks other work on its device while it runs without its window
    /// (a scheduler's answer: it reports and nothing can suspend it); see
    /// [`XQueue::set_leading`](crate::XQueue::set_leading). Default: ignored.
    fn set_leading(&self, on: bool) {
        let _ = on;
    }
}
