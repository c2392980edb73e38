//! Events an XQueue reports to its scheduler.

use std::fmt;

use crate::Nanos;

/// Identifies an XQueue within its process. Never reused while the process lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct XQueueId(pub u64);

impl fmt::Display for XQueueId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "q{}", self.0)
    }
}

/// Whether a queue has unfinished work.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QueueState {
    /// Every submitted command has completed.
    Idle,
    /// At least one submitted command has not completed.
    Ready,
}

/// A queue changed between [`QueueState::Idle`] and [`QueueState::Ready`].
///
/// Events are emitted outside the queue's lock, so two of them may reach a sink from different
/// threads in either order; `transition` numbers a queue's transitions 1, 2, 3… so the receiver
/// keeps the latest. Odd transitions are always Idle→Ready, even ones Ready→Idle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueEvent {
    /// The queue that changed.
    pub queue: XQueueId,
    /// Its new state.
    pub state: QueueState,
    /// When the change happened, on the queue's clock.
    pub at: Nanos,
    /// The number of this transition for this queue, starting at 1.
    pub transition: u64,
}

/// Receives queue events: the local scheduler, an agent forwarding them to the daemon, a test.
///
/// Called without any queue lock held, on whatever thread caused the transition; it must not
/// block for long.
pub trait EventSink: Send + Sync {
    /// One transition happened.
    fn on_queue_event(&self, event: QueueEvent);
}

/// Discards every event: for queues nothing schedules.
#[derive(Clone, Copy, Debug, Default)]
pub struct NullSink;

impl EventSink for NullSink {
    fn on_queue_event(&self, _event: QueueEvent) {}
}
