//! Remote queues as the local scheduler sees them.
//!
//! The daemon runs `baton_agent::LocalScheduler`, the scheduler every process can run for
//! itself, over one [`RemoteQueue`] per queue of every agent. A `RemoteQueue` implements
//! [`QueueControl`]: `suspend` and `resume` record the wanted state in the shared
//! [`Outbox`], and the core turns a decision round's worth of them into one
//! [`Operations`](baton_protocol::Operations) frame per agent, naming only queues whose state
//! changed. Level and launch-window changes go to the agent as `Configure` messages instead
//! (the daemon's `baton config`), so the proxy's own setters do nothing.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use baton_core::{
    LaunchConfig, Level, QueueControl, QueueState, ResumeFlags, SuspendFlags, XQueueError,
    XQueueId, XQueueStatus,
};

/// Wanted states recorded by proxies since the last flush: `(queue, suspended)`, in order.
#[derive(Debug, Default)]
pub(crate) struct Outbox(Mutex<Vec<(XQueueId, bool)>>);

impl Outbox {
    fn push(&self, q: XQueueId, suspend: bool) {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((q, suspend));
    }

    /// Everything recorded since the last call.
    pub(crate) fn take(&self) -> Vec<(XQueueId, bool)> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

/// One remote queue, under its daemon-wide id.
pub(crate) struct RemoteQueue {
    id: XQueueId,
    ready: bool,
    level: Level,
    max_level: Level,
    config: LaunchConfig,
    outbox: Arc<Outbox>,
    /// Set when the queue is gone: later decisions about it are dropped.
    detached: AtomicBool,
}

impl RemoteQueue {
    /// A proxy for a queue announced with these values.
    pub(crate) fn new(
        id: XQueueId,
        ready: bool,
        level: Level,
        max_level: Level,
        config: LaunchConfig,
        outbox: Arc<Outbox>,
    ) -> RemoteQueue {
        RemoteQueue {
            id,
            ready,
            level,
            max_level,
            config,
            outbox,
            detached: AtomicBool::new(false),
        }
    }

    /// The queue is gone: nothing more is sent for it.
    pub(crate) fn detach(&self) {
        self.detached.store(true, Ordering::Release);
    }

    fn record(&self, suspend: bool) {
        if !self.detached.load(Ordering::Acquire) {
            self.outbox.push(self.id, suspend);
        }
    }
}

impl QueueControl for RemoteQueue {
    fn id(&self) -> XQueueId {
        self.id
    }

    /// The state the queue was announced with (the scheduler reads it once, when the queue
    /// is registered; later states reach it as events).
    fn status(&self) -> XQueueStatus {
        XQueueStatus {
            id: self.id,
            state: if self.ready {
                QueueState::Ready
            } else {
                QueueState::Idle
            },
            suspended: false,
            level: self.level,
            max_level: self.max_level,
            config: self.config,
            pending: 0,
            inflight: 0,
            submitted: 0,
            completed: 0,
        }
    }

    fn suspend(&self, _flags: SuspendFlags) -> Result<(), XQueueError> {
        self.record(true);
        Ok(())
    }

    fn resume(&self, _flags: ResumeFlags) -> Result<(), XQueueError> {
        self.record(false);
        Ok(())
    }

    fn set_level(&self, _level: Level) -> Result<(), XQueueError> {
        Ok(())
    }

    fn set_launch_config(&self, _config: LaunchConfig) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_are_recorded_until_detached() {
        let out = Arc::new(Outbox::default());
        let q = RemoteQueue::new(
            XQueueId(7),
            true,
            Level::L1,
            Level::L1,
            LaunchConfig::default(),
            out.clone(),
        );
        assert_eq!(q.status().state, QueueState::Ready);
        q.suspend(SuspendFlags::default()).unwrap();
        q.resume(ResumeFlags::default()).unwrap();
        assert_eq!(out.take(), vec![(XQueueId(7), true), (XQueueId(7), false)]);
        q.detach();
        q.suspend(SuspendFlags::default()).unwrap();
        assert!(out.take().is_empty());
    }
}
