//! One queue the client registered with the daemon, and the busy time it accumulates.

use std::sync::Arc;

use baton_core::{Nanos, QueueControl, XQueueStatus};

use super::config::QueueInfo;

/// One registered queue.
pub(super) struct Tracked {
    pub(super) ctl: Arc<dyn QueueControl>,
    pub(super) info: QueueInfo,
    pub(super) ready: bool,
    pub(super) transition: u64,
    /// Suspended by the daemon (and so to be resumed by fail-open).
    pub(super) suspended: bool,
    pub(super) busy_ns: u64,
    pub(super) ready_since: Option<Nanos>,
    /// Its status when it was registered: what announces it to a daemon connected after its
    /// registration but before its status could be read again.
    pub(super) registered: XQueueStatus,
}

impl Tracked {
    /// Takes in a transition; false if it is not newer than the last one.
    pub(super) fn note(&mut self, ready: bool, transition: u64, at: Nanos) -> bool {
        if transition <= self.transition {
            return false;
        }
        self.transition = transition;
        if self.ready != ready {
            if ready {
                self.ready_since = Some(at);
            } else if let Some(since) = self.ready_since.take() {
                self.busy_ns += at.saturating_sub(since).0;
            }
        }
        self.ready = ready;
        true
    }

    pub(super) fn busy_at(&self, now: Nanos) -> u64 {
        self.busy_ns + self.ready_since.map_or(0, |s| now.saturating_sub(s).0)
    }
}
