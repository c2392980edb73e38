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
mod order;
mod shared;
mod submit;
mod worker;

pub use builder::{DEFAULT_MAX_BUFFERED, XQueueBuilder};

use std::sync::Arc;

use shared::{Shared, State};

use crate::sync::{self, thread};
use crate::{HwQueue, LaunchConfig, Level, QueueState, XQueueError, XQueueId};

/// How an XQueue learns that its hardware made progress.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Drive {
    /// A launch worker thread waits on sync points and launches buffered commands.
    #[default]
    Worker,
    /// No thread: the owner calls [`XQueue::poll`] whenever the hardware may have progressed.
    /// Blocking waits fail with [`HwError::WouldBlock`]. Used in virtual time.
    External,
}

/// Options for [`XQueue::suspend`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SuspendFlags {
    /// At Level 1, return only once the in-flight commands have completed, so the device no
    /// longer runs this queue's work. At Levels 2 and 3 the hardware step already stops it.
    pub sync_hw: bool,
}

/// Options for [`XQueue::resume`]. None yet; the type keeps the signature stable.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ResumeFlags {}

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
/// [`XQueue`].
pub trait QueueControl: Send + Sync {
    /// The queue's identity.
    fn id(&self) -> XQueueId;
    /// Its current state.
    fn status(&self) -> XQueueStatus;
    /// Stops it from running; see [`XQueue::suspend`].
    fn suspend(&self, flags: SuspendFlags) -> Result<(), XQueueError>;
    /// Lets it run again; see [`XQueue::resume`].
    fn resume(&self, flags: ResumeFlags) -> Result<(), XQueueError>;
    /// Chooses the level suspension uses.
    fn set_level(&self, level: Level) -> Result<(), XQueueError>;
    /// Changes the launch window.
    fn set_launch_config(&self, config: LaunchConfig);
    /// Whether the queue must report going idle even if its application never synchronizes;
    /// see [`XQueue::set_idle_watch`].
    fn set_idle_watch(&self, on: bool);
    /// Whether the queue reports its Idle/Ready transitions; see [`XQueue::set_reporting`].
    fn set_reporting(&self, on: bool);
    /// Whether the queue may skip its in-flight window; see [`XQueue::set_unbounded`].
    fn set_unbounded(&self, on: bool);
}

/// A preemptible queue over one hardware queue. See the module documentation.
pub struct XQueue<H: HwQueue> {
    shared: Arc<Shared<H>>,
    worker: Option<thread::JoinHandle<()>>,
}

impl<H: HwQueue> XQueue<H> {
    /// Starts building a queue over `hw`.
    pub fn builder(hw: H) -> XQueueBuilder<H> {
        XQueueBuilder::new(hw)
    }

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

    /// How often a submitting thread was held back by this queue (waiting for room in its
    /// buffer, or for the buffer to drain before an in-place launch), and for how long in all.
    /// A held thread is what a full hardware queue would also cause; an application thread
    /// holding a lock others need while it is held is the cost to look for.
    pub fn submitter_held(&self) -> (u64, crate::Nanos) {
        use std::sync::atomic::Ordering::Relaxed;
        let h = &self.shared.held;
        (h[0].load(Relaxed), crate::Nanos(h[1].load(Relaxed)))
    }

    /// [`XQueue::status`] if no other thread holds the queue's lock (`None` otherwise; a
    /// thread holds it while it launches, so a launch blocked in the driver shows here).
    pub fn try_status(&self) -> Option<XQueueStatus> {
        sync::try_lock(&self.shared.state).map(|st| self.status_of(&st))
    }

    fn status_of(&self, st: &State<H>) -> XQueueStatus {
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
    fn set_idle_watch(&self, on: bool) {
        XQueue::set_idle_watch(self, on)
    }
    fn set_reporting(&self, on: bool) {
        XQueue::set_reporting(self, on)
    }
    fn set_unbounded(&self, on: bool) {
        XQueue::set_unbounded(self, on)
    }
}

#[cfg(all(test, not(loom)))]
mod tests;

#[cfg(all(test, loom))]
mod loom_tests;
