//! What a policy answers.

use baton_core::{Nanos, XQueueId};

/// The queues to suspend now (every other queue runs), and when to decide again.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Decision {
    /// Queues that must not run. Order does not matter; duplicates are harmless.
    pub suspend: Vec<XQueueId>,
    /// Ask again at this time even if nothing happens (time slices, deadlines, hint expiry).
    pub wake_at: Option<Nanos>,
}

impl Decision {
    /// Everything runs.
    pub fn run_all() -> Decision {
        Decision::default()
    }

    /// Whether `q` is to be suspended.
    pub fn suspends(&self, q: XQueueId) -> bool {
        self.suspend.contains(&q)
    }

    /// Asks to be woken at `t` too (the earliest request wins).
    pub fn wake(&mut self, t: Nanos) {
        self.wake_at = Some(self.wake_at.map_or(t, |w| w.min(t)));
    }
}
