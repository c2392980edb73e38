//! The queue itself: its identity, its status, closing and shutting it down, and the
//! object-safe face schedulers hold.

use std::sync::Arc;

use super::options::{ResumeFlags, SuspendFlags};
use super::shared::InflightAtSuspend;
use super::shared::{Shared, State};
use super::status::{Attention, QueueControl, XQueueStatus};
use super::usage::Usage;
use crate::sync::{self, thread};
use crate::{HwQueue, LaunchConfig, Level, QueueState, XQueueError, XQueueId};

/// The most markers ([`XQueue::mark_marker`]) a queue keeps track of in flight.
const MAX_MARKERS: usize = 4096;

/// A preemptible queue over one hardware queue. See the module documentation.
pub struct XQueue<H: HwQueue> {
    pub(super) shared: Arc<Shared<H>>,
    pub(super) worker: Option<thread::JoinHandle<()>>,
}

impl<H: HwQueue> XQueue<H> {
    /// The queue's identity.
    pub fn id(&self) -> XQueueId {
        self.shared.id
    }

    /// The hardware queue underneath.
    pub fn hw(&self) -> &H {
        &self.shared.hw
    }

    /// The queue's current state.
    pub fn status(&self) -> XQueueStatus {
        self.status_of(&sync::lock(&self.shared.state))
    }

    /// Commands launched while the queue was suspended: demanded by another queue that waits
    /// for them, or by a call that must come after them (a free, say). Each is held work let
    /// through a suspension.
    pub fn released_while_suspended(&self) -> u64 {
        let st = sync::lock(&self.shared.state);
        let now = if st.suspended {
            st.launched - st.launched_at_suspend
        } else {
            0
        };
        st.released + now
    }

    /// What its suspensions found in flight.
    pub fn inflight_at_suspend(&self) -> InflightAtSuspend {
        sync::lock(&self.shared.state).at_suspend
    }

    /// How often a submitting thread was held back by this queue (waiting for room in its
    /// buffer, or for the buffer to drain before an in-place launch), and for how long in all.
    /// A held thread is what a full hardware queue would also cause; an application thread
    /// holding a lock others need while it is held is the cost to look for.
    pub fn submitter_held(&self) -> (u64, crate::Nanos) {
        use std::sync::atomic::Ordering::Relaxed;
        let h = &self.shared.held;
        (h[0].load(Relaxed), crate::Nanos(h[1].load(Relaxed)))
    }

    /// How long one of its commands takes on the device while the queue keeps the device busy
    /// (a moving average, other contexts' share of the device included), once measured: only
    /// completions seen as they happen with more commands already in flight count (for a
    /// worker-driven queue, while commands wait behind its window), so a queue bound by its
    /// own launching, or one launching without a window, stays unmeasured.
    pub fn command_time(&self) -> Option<crate::Nanos> {
        match self
            .shared
            .pace_ns
            .load(std::sync::atomic::Ordering::Relaxed)
        {
            0 => None,
            ns => Some(crate::Nanos(ns)),
        }
    }

    /// How the application has used the queue so far, the time it had work while suspended
    /// left out ([`Usage`]): what a process tells its scheduler of how its program uses the
    /// queue (`Hint::Readiness`), read a period apart. Takes the queue's lock.
    pub fn usage(&self) -> Usage {
        let st = sync::lock(&self.shared.state);
        st.usage.usage(self.shared.clock.now())
    }

    /// Says that the command submitted at `seq` takes no device time (an event record):
    /// [`XQueue::command_time`] then measures the others only, so a flood of 1.7 ms GEMMs each
    /// followed by an event record measures 1.7 ms, not half that. Markers are followed only
    /// while the queue keeps its window (unbounded, nothing measures it), at most 4096 of them
    /// in flight. It takes the queue's lock once more, after the submission that returned
    /// `seq`.
    pub fn mark_marker(&self, seq: crate::CommandSeq) {
        let mut st = crate::sync::lock(&self.shared.state);
        if st.unbounded || seq.0 < st.completed {
            return;
        }
        if st.markers.len() >= MAX_MARKERS {
            // Never expected with a window; rather lose a sample than grow without bound.
            st.markers.clear();
            st.pace_mark = None;
        }
        st.markers.push_back(seq.0);
    }

    /// How many samples its [`XQueue::command_time`] has taken in so far.
    pub fn command_samples(&self) -> u64 {
        self.shared
            .pace_samples
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Its [`XQueue::command_time`], if it differs enough from `reported` (what its scheduler
    /// was last told, if anything) to be worth telling again: by a fifth or more. The average
    /// drifts a little with every sample; a scheduler needs to hear only a real change.
    pub fn command_time_news(&self, reported: Option<crate::Nanos>) -> Option<crate::Nanos> {
        let now = self.command_time()?;
        match reported {
            Some(r) if now.0.abs_diff(r.0) < r.0 / 5 => None,
            _ => Some(now),
        }
    }

    /// [`XQueue::status`] if no other thread holds the queue's lock (`None` otherwise; a
    /// thread holds it while it launches, so a launch blocked in the driver shows here).
    pub fn try_status(&self) -> Option<XQueueStatus> {
        sync::try_lock(&self.shared.state).map(|st| self.status_of(&st))
    }

    pub(super) fn status_of(&self, st: &State<H>) -> XQueueStatus {
        let sh = &*self.shared;
        XQueueStatus {
            id: sh.id,
            state: if st.submitted == st.completed {
                QueueState::Idle
            } else {
                QueueState::Ready
            },
            suspended: st.suspended,
            level: st.level,
            max_level: sh.hw.max_level(),
            config: st.config,
            pending: st.submitted - st.launched,
            inflight: st.launched - st.completed,
            submitted: st.submitted,
            completed: st.completed,
            transitions: st.transitions,
        }
    }

    /// Stops accepting commands and lets everything already submitted run (a suspended queue
    /// is resumed for that), without waiting: the launch worker drains the buffer and exits on
    /// its own. For owners that share the queue and cannot call [`XQueue::shutdown`].
    pub fn close(&self) {
        sync::lock(&self.shared.state).shutdown = true;
        let _ = self.resume(ResumeFlags::default());
        let st = sync::lock(&self.shared.state);
        self.shared.worker_cv.notify_one();
        drop(st);
    }

    /// Stops accepting commands and, on a worker-driven queue, waits until everything already
    /// submitted has run (a suspended queue is resumed for that). Called by `Drop`.
    pub fn shutdown(&mut self) {
        {
            let mut st = sync::lock(&self.shared.state);
            if st.shutdown && self.worker.is_none() {
                return;
            }
            st.shutdown = true;
        }
        // Pending work must not be lost at exit: let it run. A hardware failure here has no
        // one left to report to; the work then completes or fails as the hardware decides.
        let _ = self.resume(ResumeFlags::default());
        if let Some(worker) = self.worker.take() {
            {
                let st = sync::lock(&self.shared.state);
                self.shared.worker_cv.notify_one();
                drop(st);
            }
            // A panicking worker already recorded nothing more to do; nothing to propagate.
            let _ = worker.join();
        }
    }
}

impl<H: HwQueue> Drop for XQueue<H> {
    fn drop(&mut self) {
        self.shutdown();
        // Whatever it still held back is gone with it: its group count must not keep it.
        self.shared
            .set_counted_held_back(&mut sync::lock(&self.shared.state), false);
    }
}

impl<H: HwQueue> QueueControl for XQueue<H> {
    fn id(&self) -> XQueueId {
        XQueue::id(self)
    }
    fn status(&self) -> XQueueStatus {
        XQueue::status(self)
    }
    fn suspend(&self, flags: SuspendFlags) -> Result<(), XQueueError> {
        XQueue::suspend(self, flags)
    }
    fn resume(&self, flags: ResumeFlags) -> Result<(), XQueueError> {
        XQueue::resume(self, flags)
    }
    fn set_level(&self, level: Level) -> Result<(), XQueueError> {
        XQueue::set_level(self, level)
    }
    fn set_launch_config(&self, config: LaunchConfig) {
        XQueue::set_launch_config(self, config)
    }
    fn set_attention(&self, attention: Attention) {
        XQueue::set_attention(self, attention)
    }
}
