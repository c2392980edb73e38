//! Building a queue: its options and the start of its launch worker.

use std::collections::VecDeque;
use std::sync::Arc as StdArc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use super::options::Drive;
use super::queue::XQueue;
use super::shared::{Shared, State};
use super::worker::spawn_worker;
use crate::dependency::{DemandWaker, LaunchProgress};
use crate::sync::{Condvar, Mutex};
use crate::{
    Clock, EventSink, HeldBackCount, HwQueue, LaunchConfig, Level, MonotonicClock, NullSink,
    XQueueError, XQueueId,
};

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Builds an [`XQueue`]; see [`XQueue::builder`].
pub struct XQueueBuilder<H: HwQueue> {
    hw: H,
    level: Level,
    config: LaunchConfig,
    drive: Drive,
    linger: Option<crate::Nanos>,
    clock: StdArc<dyn Clock>,
    sink: StdArc<dyn EventSink>,
    keep_window: bool,
    max_buffered: usize,
    held_back: Option<StdArc<HeldBackCount>>,
    inflight_budget: crate::Nanos,
    early_refill: bool,
}

/// Commands a queue buffers before `submit` waits (see [`XQueueBuilder::max_buffered`]).
pub const DEFAULT_MAX_BUFFERED: usize = 1024;

impl<H: HwQueue> XQueueBuilder<H> {
    /// The defaults: Level 1, the default window, a launch worker, a monotonic clock, no sink.
    pub(super) fn new(hw: H) -> Self {
        XQueueBuilder {
            hw,
            level: Level::L1,
            config: LaunchConfig::default(),
            drive: Drive::Worker,
            linger: None,
            clock: StdArc::new(MonotonicClock::new()),
            sink: StdArc::new(NullSink),
            keep_window: false,
            max_buffered: DEFAULT_MAX_BUFFERED,
            held_back: None,
            inflight_budget: crate::Nanos::ZERO,
            early_refill: false,
        }
    }

    /// The level suspension uses (default [`Level::L1`]).
    pub fn level(mut self, level: Level) -> Self {
        self.level = level;
        self
    }

    /// The launch window (default 16 in flight, a sync point every 8).
    pub fn config(mut self, config: LaunchConfig) -> Self {
        self.config = config;
        self
    }

    /// Bounds the work in flight by device time as well as by count while the window applies:
    /// once the queue's command time is measured ([`XQueue::command_time`]), a command is
    /// launched only while the commands in flight take less than `budget` by that measure
    /// (the first always goes). A suspension at Level 1 waits for what is in flight, so this
    /// bounds it by time whatever the commands' length: a GEMM flood of 1.5 ms commands keeps
    /// one in flight, a training job of 110 µs kernels a few (default: zero, none).
    pub fn inflight_budget(mut self, budget: crate::Nanos) -> Self {
        self.inflight_budget = budget;
        self
    }

    /// With an [`inflight_budget`](Self::inflight_budget), place sync points so that the window
    /// can refill before the device drains: once the command time is measured, one every half
    /// of the commands the budget admits (at most the window's batch) instead of only behind
    /// the commands in flight when the budget closes the window; a budget that admits one
    /// command is left as it is. Without it, a
    /// budget of a few commands learns of their completion only when the last is done, and the
    /// device waits for the host to launch the next ones (default: off).
    pub fn early_refill(mut self, on: bool) -> Self {
        self.early_refill = on;
        self
    }

    /// Keep the launch window even when a scheduler says no decision can suspend the queue
    /// now ([`XQueue::set_unbounded`] then only informs the hardware queue; default: no). The window then also
    /// bounds what a higher-priority queue that appears *later* waits for; without it, a
    /// queue that ran alone may have launched arbitrarily far ahead by then.
    pub fn keep_window(mut self, on: bool) -> Self {
        self.keep_window = on;
        self
    }

    /// How many commands may wait in the buffer before `submit` blocks the submitting thread
    /// until the launch worker has taken enough of them (default [`DEFAULT_MAX_BUFFERED`],
    /// at least 1). This is the backpressure a hardware queue gives when it is full: without
    /// it, a suspended queue's submitter would run arbitrarily far ahead, holding memory and
    /// CPU (and, in an interpreter, locks the running queues' threads need). Queues driven
    /// externally ([`Drive::External`]) never block and ignore it.
    pub fn max_buffered(mut self, commands: usize) -> Self {
        self.max_buffered = commands.max(1);
        self
    }

    /// How progress is driven (default: a launch worker thread).
    pub fn drive(mut self, drive: Drive) -> Self {
        self.drive = drive;
        self
    }

    /// On an externally driven queue, finds an uncovered in-flight tail done only once
    /// launches have paused for `linger` of the clock's time, as the launch worker does in
    /// real time (default: at the first look). The owner polls again at
    /// [`XQueue::next_look`]. Virtual-time runs use it to show launch-bound programs as they
    /// look on a GPU: busy from their first launch to their last completion.
    pub fn idle_linger(mut self, linger: crate::Nanos) -> Self {
        self.linger = Some(linger);
        self
    }

    /// The clock events are stamped with (default: a monotonic clock from now).
    pub fn clock(mut self, clock: StdArc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// Where Idle/Ready events go (default: nowhere).
    pub fn sink(mut self, sink: StdArc<dyn EventSink>) -> Self {
        self.sink = sink;
        self
    }

    /// Counts the queue in `count` while it holds commands back from the hardware (see
    /// [`HeldBackCount`]; default: counted nowhere).
    pub fn held_back_count(mut self, count: StdArc<HeldBackCount>) -> Self {
        self.held_back = Some(count);
        self
    }

    /// Creates the queue, starting its launch worker if it has one.
    ///
    /// Fails if the requested level is above what the hardware supports.
    pub fn build(self) -> Result<XQueue<H>, XQueueError> {
        let max = self.hw.max_level();
        if !self.hw.supports(self.level) {
            return Err(XQueueError::LevelUnsupported {
                requested: self.level,
                max,
            });
        }
        let shared = Arc::new(Shared {
            id: XQueueId(NEXT_ID.fetch_add(1, Ordering::Relaxed)),
            hw: self.hw,
            clock: self.clock,
            sink: self.sink,
            drive: self.drive,
            linger: self.linger,
            keep_window: self.keep_window,
            max_buffered: self.max_buffered,
            state: Mutex::new(State {
                buffer: VecDeque::new(),
                submitted: 0,
                launched: 0,
                completed: 0,
                sync_points: VecDeque::new(),
                since_sync: 0,
                suspended: false,
                level: self.level,
                config: self.config,
                transitions: 0,
                deferred_error: None,
                shutdown: false,
                worker_sleeping: false,
                waiters: 0,
                watch_idle: true,
                reporting: true,
                unbounded: false,
                may_run_unbounded: false,
                measuring: false,
                remeasure: false,
                holdable: true,
                preemptible: true,
                gate_open: false,
                observed: false,
                released: 0,
                launched_at_suspend: 0,
                at_suspend: super::shared::InflightAtSuspend::default(),
                counted_held_back: false,
                quiet: (0, crate::Nanos::ZERO),
                pace_mark: None,
                markers: std::collections::VecDeque::new(),
                markers_done: 0,
                usage: Default::default(),
                pace_ns: 0,
                budget_ns: self.inflight_budget.0,
                early_refill: self.early_refill,
                refill_batch: u32::MAX,
            }),
            control: Mutex::new(()),
            worker_cv: Condvar::new(),
            progress_cv: Condvar::new(),
            pending: std::sync::atomic::AtomicU64::new(0),
            gated: std::sync::atomic::AtomicBool::new(false),
            progress: Arc::new(LaunchProgress::new()),
            held: Default::default(),
            held_back: self.held_back,
            pace_ns: std::sync::atomic::AtomicU64::new(0),
            pace_samples: std::sync::atomic::AtomicU64::new(0),
        });
        let waker: Weak<dyn DemandWaker> = Arc::downgrade(&shared) as Weak<dyn DemandWaker>;
        shared.progress.set_owner(waker);
        let worker = match self.drive {
            Drive::Worker => Some(spawn_worker(Arc::clone(&shared))),
            Drive::External => None,
        };
        Ok(XQueue { shared, worker })
    }
}

impl<H: HwQueue> XQueue<H> {
    /// Starts building a queue over `hw`.
    pub fn builder(hw: H) -> XQueueBuilder<H> {
        XQueueBuilder::new(hw)
    }
}
