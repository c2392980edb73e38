//! Remote queues as the local scheduler sees them.
//!
//! The daemon runs `baton_scheduler::LocalScheduler`, the scheduler every process can run for
//! itself, over one [`RemoteQueue`] per queue of every agent. A `RemoteQueue` implements
//! [`QueueControl`]: `suspend` and `resume` record the wanted state in the shared
//! [`Outbox`], and the core turns a decision round's worth of them into one
//! [`Operations`](baton_protocol::Operations) frame per agent, naming only queues whose state
//! changed. How the scheduler wants each queue to run until the next decision (what it
//! reports, whether it may launch without its window, [`QueueControl::set_attention`]) is
//! recorded the same way and sent whole as an `Attention` message, applied as it is. Level and
//! launch-window changes go to the agent as `Configure` messages instead (the daemon's `baton
//! config`), so those setters do nothing.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use baton_core::locks;
use baton_core::{
    Attention, LaunchConfig, Level, QueueControl, QueueState, ResumeFlags, SuspendFlags,
    XQueueError, XQueueId, XQueueStatus,
};

/// A change a proxy recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wanted {
    /// Suspended (`true`) or running.
    Suspended(bool),
    /// New attention settings.
    Attention(Attention),
}

/// Changes recorded by proxies since the last flush, in order.
#[derive(Debug, Default)]
pub(crate) struct Outbox(Mutex<Vec<(XQueueId, Wanted)>>);

impl Outbox {
    fn push(&self, q: XQueueId, w: Wanted) {
        locks::lock(&self.0).push((q, w));
    }

    /// Everything recorded since the last call.
    pub(crate) fn take(&self) -> Vec<(XQueueId, Wanted)> {
        std::mem::take(&mut *locks::lock(&self.0))
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
    /// The attention last asked for.
    attention: Mutex<Attention>,
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
            attention: Mutex::new(Attention::INITIAL),
            detached: AtomicBool::new(false),
        }
    }

    /// The queue is gone: nothing more is sent for it.
    pub(crate) fn detach(&self) {
        self.detached.store(true, Ordering::Release);
    }

    fn record(&self, w: Wanted) {
        if !self.detached.load(Ordering::Acquire) {
            self.outbox.push(self.id, w);
        }
    }

    /// What the queue was last told to report and how it may launch.
    pub(crate) fn attention(&self) -> Attention {
        *locks::lock(&self.attention)
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
            // The agent re-announces a queue's state when it is asked to report again, so
            // the scheduler never needs to compare transition counts for a remote queue.
            transitions: 0,
        }
    }

    fn suspend(&self, _flags: SuspendFlags) -> Result<(), XQueueError> {
        self.record(Wanted::Suspended(true));
        Ok(())
    }

    fn resume(&self, _flags: ResumeFlags) -> Result<(), XQueueError> {
        self.record(Wanted::Suspended(false));
        Ok(())
    }

    fn set_level(&self, _level: Level) -> Result<(), XQueueError> {
        Ok(())
    }

    fn set_launch_config(&self, _config: LaunchConfig) {}

    fn set_attention(&self, attention: Attention) {
        let mut a = locks::lock(&self.attention);
        if *a != attention {
            *a = attention;
            self.record(Wanted::Attention(attention));
        }
    }
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
        let quiet = Attention {
            report: false,
            ..Attention::INITIAL
        };
        q.set_attention(quiet);
        q.set_attention(quiet);
        assert_eq!(
            out.take(),
            vec![
                (XQueueId(7), Wanted::Suspended(true)),
                (XQueueId(7), Wanted::Suspended(false)),
                (XQueueId(7), Wanted::Attention(quiet)),
            ]
        );
        q.detach();
        q.suspend(SuspendFlags::default()).unwrap();
        assert!(out.take().is_empty());
    }
}
