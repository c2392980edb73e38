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
//! [`EventSink`] after the state lock is released, numbered so the receiver can order them.

mod shared;

use std::collections::VecDeque;
use std::sync::Arc as StdArc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use shared::{Buffered, Pending, Shared, State, spawn_worker};

use crate::dependency::{DemandWaker, Dependency, LaunchProgress};
use crate::sync::{self, Condvar, Mutex, MutexGuard, thread};
use crate::{
    Clock, CommandSeq, CommandState, EventSink, HeldBackCount, HwError, HwQueue, InflightRange,
    LaunchConfig, Level, MonotonicClock, NullSink, QueueState, XQueueError, XQueueId,
};

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

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Builds an [`XQueue`]; see [`XQueue::builder`].
pub struct XQueueBuilder<H: HwQueue> {
    hw: H,
    level: Level,
    config: LaunchConfig,
    drive: Drive,
    clock: StdArc<dyn Clock>,
    sink: StdArc<dyn EventSink>,
    keep_window: bool,
    max_buffered: usize,
    held_back: Option<StdArc<HeldBackCount>>,
}

/// Commands a queue buffers before `submit` waits (see [`XQueueBuilder::max_buffered`]).
pub const DEFAULT_MAX_BUFFERED: usize = 1024;

impl<H: HwQueue> XQueueBuilder<H> {
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
                preemptible: true,
                gate_open: false,
                observed: false,
                counted_held_back: false,
            }),
            control: Mutex::new(()),
            worker_cv: Condvar::new(),
            progress_cv: Condvar::new(),
            pending: std::sync::atomic::AtomicU64::new(0),
            gated: std::sync::atomic::AtomicBool::new(false),
            progress: Arc::new(LaunchProgress::new()),
            held: Default::default(),
            held_back: self.held_back,
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

/// A preemptible queue over one hardware queue. See the module documentation.
pub struct XQueue<H: HwQueue> {
    shared: Arc<Shared<H>>,
    worker: Option<thread::JoinHandle<()>>,
}

impl<H: HwQueue> XQueue<H> {
    /// Starts building a queue over `hw`.
    pub fn builder(hw: H) -> XQueueBuilder<H> {
        XQueueBuilder {
            hw,
            level: Level::L1,
            config: LaunchConfig::default(),
            drive: Drive::Worker,
            clock: StdArc::new(MonotonicClock::new()),
            sink: StdArc::new(NullSink),
            keep_window: false,
            max_buffered: DEFAULT_MAX_BUFFERED,
            held_back: None,
        }
    }

    /// The queue's identity.
    pub fn id(&self) -> XQueueId {
        self.shared.id
    }

    /// The hardware queue underneath.
    pub fn hw(&self) -> &H {
        &self.shared.hw
    }

    /// Submits `cmd`, launching it at once when the buffer is empty, the queue runs and the
    /// in-flight window has room; buffering it otherwise.
    ///
    /// A launch the hardware refuses on this path is returned as the error and the command is
    /// not part of the queue (as when the application calls the driver directly).
    pub fn submit(&self, cmd: H::Command) -> Result<CommandSeq, XQueueError> {
        let slot = std::cell::Cell::new(Some(cmd));
        self.submit_with(
            |hw| slot.take().map_or(Ok(()), |c| hw.launch(c)),
            || slot.take(),
        )
    }

    /// Submits a command that is only built if it has to wait: on the fast path `direct`
    /// launches it straight from the caller's arguments (an interposer passes the application's
    /// own pointers, copying nothing); otherwise `defer` builds an owned command for the buffer.
    ///
    /// If `defer` cannot make a faithful copy (it returns `None`), the caller waits until every
    /// command before it has been launched, and `direct` launches it then, in its place: such a
    /// command is never reordered, only delayed, and counts like any other.
    pub fn submit_with<D, F>(&self, direct: D, defer: F) -> Result<CommandSeq, XQueueError>
    where
        D: FnOnce(&H) -> Result<(), HwError>,
        F: FnOnce() -> Option<H::Command>,
    {
        self.submit_after(Vec::new(), direct, defer)
    }

    /// [`XQueue::submit_with`] for a command that must reach the hardware only after
    /// `deps` (commands of other queues) have. While one is unsatisfied the command waits in the
    /// buffer — the caller does not block — and the queues depended on are asked to launch what
    /// is needed even if they are suspended.
    pub fn submit_after<D, F>(
        &self,
        mut deps: Vec<Dependency>,
        direct: D,
        defer: F,
    ) -> Result<CommandSeq, XQueueError>
    where
        D: FnOnce(&H) -> Result<(), HwError>,
        F: FnOnce() -> Option<H::Command>,
    {
        // A dependency already launched may still be waiting on its queue's device: its queue
        // learns that it must complete (Level 2 keeps such commands behind an open gate).
        if !deps.is_empty() {
            for d in deps.iter().filter(|d| d.is_satisfied()) {
                d.demand();
            }
            deps.retain(|d| !d.is_satisfied());
        }
        let sh = &*self.shared;
        let mut ev = Pending::new();
        let mut st = sync::lock(&sh.state);
        if st.shutdown {
            return Err(XQueueError::ShuttingDown);
        }
        let seq = CommandSeq(st.submitted);
        let direct_ok = st.buffer.is_empty() && !st.suspended && deps.is_empty();
        if direct_ok && !st.window_open() {
            sh.reap(&mut st, &mut ev);
        }
        let was_idle = st.completed == st.submitted;
        if direct_ok && st.window_open() {
            direct(&sh.hw)?;
            st.submitted += 1;
            sh.after_launch(&mut st);
            if st.observed {
                sh.progress.advance(st.launched);
            }
            if was_idle {
                sh.transition(&mut st, QueueState::Ready, &mut ev);
                if st.watch_idle {
                    sh.wake_worker(&st);
                }
            }
            sh.unlock_and_emit(st, ev);
            return Ok(seq);
        }
        self.submit_deferred(st, ev, deps, direct, defer, was_idle)
    }

    /// The rest of [`XQueue::submit_after`] once its command has to wait: buffered as an owned
    /// copy, or launched in place when no copy can be made. Out of line, so that the fast
    /// path's stack frame does not hold a command.
    #[inline(never)]
    fn submit_deferred<D, F>(
        &self,
        mut st: MutexGuard<'_, State<H>>,
        mut ev: Pending,
        deps: Vec<Dependency>,
        direct: D,
        defer: F,
        was_idle: bool,
    ) -> Result<CommandSeq, XQueueError>
    where
        D: FnOnce(&H) -> Result<(), HwError>,
        F: FnOnce() -> Option<H::Command>,
    {
        let sh = &*self.shared;
        let seq = CommandSeq(st.submitted);
        let Some(cmd) = defer() else {
            // No faithful copy: wait for the dependencies and for everything before it to be
            // launched, then launch directly, in place.
            drop(st);
            ev.emit(&*sh.sink);
            for d in &deps {
                d.wait_satisfied();
            }
            return self.launch_in_place(direct, false);
        };
        let demand = deps.clone();
        st.buffer.push_back(Buffered { cmd, deps });
        st.submitted += 1;
        sh.publish_pending(&mut st);
        if was_idle {
            sh.transition(&mut st, QueueState::Ready, &mut ev);
        }
        sh.wake_worker(&st);
        let backlog = st.buffer.len();
        sh.unlock_and_emit(st, ev);
        for d in &demand {
            d.demand();
        }
        if backlog > sh.max_buffered && sh.drive == Drive::Worker {
            self.wait_for_room()?;
        }
        Ok(seq)
    }

    /// Blocks until the buffer holds no more than `max_buffered` commands (or the queue shuts
    /// down): the submitter of a full queue waits as it would on a full hardware queue.
    fn wait_for_room(&self) -> Result<(), XQueueError> {
        let sh = &*self.shared;
        let mut ev = Pending::new();
        let st = sync::lock(&sh.state);
        let st = self.hold_while(st, &mut ev, |st| {
            st.buffer.len() > sh.max_buffered && !st.shutdown
        })?;
        sh.unlock_and_emit(st, ev);
        Ok(())
    }

    /// Holds the submitting thread while `cond` holds, waiting for the queue's progress, and
    /// counts the hold (see [`XQueue::submitter_held`]) if there was one.
    fn hold_while<'a>(
        &'a self,
        mut st: MutexGuard<'a, State<H>>,
        ev: &mut Pending,
        cond: impl Fn(&State<H>) -> bool,
    ) -> Result<MutexGuard<'a, State<H>>, XQueueError> {
        if cond(&st) {
            let since = self.shared.clock.now();
            while cond(&st) {
                st = self.wait_for_progress(st, ev)?;
            }
            self.shared.record_hold(since);
        }
        Ok(st)
    }

    /// Runs a synchronous operation — one that returns only when it has completed, such as a
    /// synchronous copy — as the queue's next command: once `deps` are satisfied and everything
    /// submitted before has been launched, `direct` runs on the caller's thread. No sync point
    /// is added after it (the application may query its queue the moment the call returns and
    /// must find it idle), and on success it and every command before it count as complete.
    /// Blocks while the queue is suspended with commands buffered.
    pub fn run_synchronous<D>(
        &self,
        deps: Vec<Dependency>,
        direct: D,
    ) -> Result<CommandSeq, XQueueError>
    where
        D: FnOnce(&H) -> Result<(), HwError>,
    {
        for d in &deps {
            d.wait_satisfied();
        }
        self.launch_in_place(direct, true)
    }

    /// Launches through `direct` once the buffer is empty, as the next command (see
    /// [`XQueue::submit_with`] and [`XQueue::run_synchronous`]). Blocks while the queue is
    /// suspended with commands buffered.
    fn launch_in_place<D>(&self, direct: D, synchronous: bool) -> Result<CommandSeq, XQueueError>
    where
        D: FnOnce(&H) -> Result<(), HwError>,
    {
        let sh = &*self.shared;
        let mut ev = Pending::new();
        let st = sync::lock(&sh.state);
        let mut st = self.hold_while(st, &mut ev, |st| !st.buffer.is_empty())?;
        if st.shutdown {
            return Err(XQueueError::ShuttingDown);
        }
        let seq = CommandSeq(st.submitted);
        let was_idle = st.completed == st.submitted;
        if synchronous {
            // Runs and completes before anything else can be launched: the queue stays as it
            // was, Idle or Ready, and knows everything up to here is done.
            direct(&sh.hw)?;
            st.submitted += 1;
            st.launched += 1;
            st.since_sync = 0;
            sh.publish_pending(&mut st);
            let done = st.launched;
            if was_idle {
                // Idle before and after: no transition to report.
                st.completed = done;
                st.sync_points.clear();
            } else {
                sh.complete_to(&mut st, done, &mut ev);
            }
            sh.unlock_and_emit(st, ev);
            return Ok(seq);
        }
        direct(&sh.hw)?;
        st.submitted += 1;
        sh.after_launch(&mut st);
        sh.publish_pending(&mut st);
        if was_idle {
            sh.transition(&mut st, QueueState::Ready, &mut ev);
            if st.watch_idle {
                sh.wake_worker(&st);
            }
        }
        sh.unlock_and_emit(st, ev);
        Ok(seq)
    }

    /// A dependency on command `seq` of this queue reaching the hardware, or `None` if it
    /// already has (or was never submitted). At Level 2 a launched command may still sit
    /// behind the queue's closed gate: until it is known complete the dependency is returned
    /// anyway (already satisfied), so that demanding it opens the gate.
    pub fn dependency_on(&self, seq: CommandSeq) -> Option<Dependency> {
        let mut st = sync::lock(&self.shared.state);
        let pending = seq.0 >= st.launched || (st.level == Level::L2 && seq.0 >= st.completed);
        (pending && seq.0 < st.submitted).then(|| self.observed_until(&mut st, seq.0 + 1))
    }

    /// A dependency on the first `target` commands, made under the state lock: from now on
    /// every launch publishes its count (see `State::observed`).
    fn observed_until(&self, st: &mut State<H>, target: u64) -> Dependency {
        if !st.observed {
            st.observed = true;
            self.shared.progress.advance(st.launched);
        }
        Dependency::new(self.shared.progress.clone(), target)
    }

    /// A dependency on every command submitted so far reaching the hardware, or `None` if they
    /// all have.
    pub fn dependency_on_all(&self) -> Option<Dependency> {
        let mut st = sync::lock(&self.shared.state);
        let pending =
            st.launched < st.submitted || (st.level == Level::L2 && st.completed < st.submitted);
        let target = st.submitted;
        pending.then(|| self.observed_until(&mut st, target))
    }

    /// A dependency on the commands launched so far, if some are not known complete: what a
    /// caller about to wait for the whole device demands, so that a queue suspended at Level 2
    /// lets its launched commands through its gate (buffered ones stay buffered).
    pub fn dependency_on_launched(&self) -> Option<Dependency> {
        let mut st = sync::lock(&self.shared.state);
        let target = st.launched;
        (st.completed < target).then(|| self.observed_until(&mut st, target))
    }

    /// Whether the queue is suspended at Level 2: commands it launched may be held on the
    /// device behind its gate. Lock-free, like [`XQueue::has_pending`].
    pub fn is_gated(&self) -> bool {
        self.shared.gated.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Whether some submitted command has not been launched yet. Lock-free: an interposer asks
    /// this on every launch to learn whether another queue holds work that must go first.
    pub fn has_pending(&self) -> bool {
        self.shared
            .pending
            .load(std::sync::atomic::Ordering::Acquire)
            > 0
    }

    /// Blocks until command `seq` has been handed to the hardware (it may still be running).
    /// If the queue is suspended and the command is buffered, that means until it is resumed.
    pub fn wait_launched(&self, seq: CommandSeq) -> Result<(), XQueueError> {
        let sh = &*self.shared;
        let mut ev = Pending::new();
        let mut st = sync::lock(&sh.state);
        loop {
            if seq.0 >= st.submitted {
                return Err(XQueueError::UnknownCommand(seq));
            }
            if seq.0 < st.launched {
                break;
            }
            st = self.wait_for_progress(st, &mut ev)?;
        }
        sh.unlock_and_emit(st, ev);
        Ok(())
    }

    /// Blocks until every command submitted so far has been handed to the hardware.
    pub fn flush(&self) -> Result<(), XQueueError> {
        let last = {
            let st = sync::lock(&self.shared.state);
            if st.launched == st.submitted {
                return Ok(());
            }
            st.submitted - 1
        };
        self.wait_launched(CommandSeq(last))
    }

    /// Runs `f` on the hardware queue once everything submitted before has been launched, with
    /// nothing else launched in between: an operation the queue does not buffer keeps its place
    /// in the command order. Blocks while a suspended queue holds earlier commands.
    pub fn run_in_order<R>(&self, f: impl FnOnce(&H) -> R) -> Result<R, XQueueError> {
        let sh = &*self.shared;
        let mut ev = Pending::new();
        let mut st = sync::lock(&sh.state);
        while !st.buffer.is_empty() {
            st = self.wait_for_progress(st, &mut ev)?;
        }
        let r = f(&sh.hw);
        sh.unlock_and_emit(st, ev);
        Ok(r)
    }

    /// Synchronizes with the hardware through `f` (e.g. the driver's own stream
    /// synchronization) once everything submitted before has been launched; if `f` succeeds,
    /// every command launched before it counts as complete. Returns `f`'s value, or an error
    /// from work launched on the application's behalf since the last wait.
    pub fn synchronize_with<R>(
        &self,
        f: impl FnOnce(&H) -> Result<R, HwError>,
    ) -> Result<R, XQueueError> {
        let sh = &*self.shared;
        let mut ev = Pending::new();
        let mut st = sync::lock(&sh.state);
        while !st.buffer.is_empty() {
            st = self.wait_for_progress(st, &mut ev)?;
        }
        let end = st.launched;
        drop(st);
        ev.emit(&*sh.sink);
        let mut ev = Pending::new();
        let r = f(&sh.hw);
        let mut st = sync::lock(&sh.state);
        if r.is_ok() {
            sh.complete_to(&mut st, end, &mut ev);
        }
        let deferred = st.deferred_error.take();
        sh.unlock_and_emit(st, ev);
        let value = r?;
        match deferred {
            Some(e) => Err(e.into()),
            None => Ok(value),
        }
    }

    /// Takes the error of a command launched on the application's behalf since the last time
    /// one was reported (by [`XQueue::synchronize_with`] or here), if one failed: for
    /// synchronizations that wait for the queue without going through it (a whole context's).
    pub fn take_error(&self) -> Option<HwError> {
        sync::lock(&self.shared.state).deferred_error.take()
    }

    /// Asks the hardware through `f` whether all launched work is done (e.g. the driver's stream
    /// query), without blocking. False while commands are still buffered; true without asking
    /// when every submitted command is already known complete (the hardware may still be
    /// running a sync point placed after them, which is the queue's business, not the
    /// caller's); if `f` says done, every launched command counts as complete.
    pub fn query_with(
        &self,
        f: impl FnOnce(&H) -> Result<bool, HwError>,
    ) -> Result<bool, XQueueError> {
        let sh = &*self.shared;
        let mut ev = Pending::new();
        let mut st = sync::lock(&sh.state);
        if !st.buffer.is_empty() {
            return Ok(false);
        }
        if st.completed == st.submitted && st.deferred_error.is_none() {
            return Ok(true);
        }
        let end = st.launched;
        let done = f(&sh.hw)?;
        if done {
            sh.complete_to(&mut st, end, &mut ev);
        }
        sh.unlock_and_emit(st, ev);
        Ok(done)
    }

    /// Waits (releasing the lock) until the launch worker makes progress; with no worker,
    /// polls once and fails with `WouldBlock` if that was not enough.
    fn wait_for_progress<'a>(
        &'a self,
        mut st: MutexGuard<'a, State<H>>,
        ev: &mut Pending,
    ) -> Result<MutexGuard<'a, State<H>>, XQueueError> {
        let sh = &*self.shared;
        if sh.drive == Drive::External {
            let before = (st.launched, st.completed);
            sh.poll_locked(&mut st, ev);
            if (st.launched, st.completed) == before {
                return Err(HwError::WouldBlock.into());
            }
            return Ok(st);
        }
        sh.wake_worker(&st);
        st.waiters += 1;
        st = sync::wait(&sh.progress_cv, st);
        st.waiters -= 1;
        Ok(st)
    }

    /// Where command `seq` is in its life.
    pub fn query(&self, seq: CommandSeq) -> Result<CommandState, XQueueError> {
        let sh = &*self.shared;
        let mut ev = Pending::new();
        let mut st = sync::lock(&sh.state);
        if seq.0 >= st.submitted {
            return Err(XQueueError::UnknownCommand(seq));
        }
        if seq.0 >= st.completed && seq.0 < st.launched {
            sh.reap(&mut st, &mut ev);
            if seq.0 >= st.completed && st.launched > st.covered() {
                // No sync point covers it: ask the hardware whether everything is done.
                sh.reap_idle(&mut st, &mut ev);
            }
        }
        let state = if seq.0 < st.completed {
            CommandState::Completed
        } else if seq.0 < st.launched {
            CommandState::InFlight
        } else {
            CommandState::Pending
        };
        sh.unlock_and_emit(st, ev);
        Ok(state)
    }

    /// Whether every submitted command has completed (without blocking).
    pub fn query_all(&self) -> bool {
        let last = {
            let st = sync::lock(&self.shared.state);
            if st.submitted == st.completed {
                return true;
            }
            st.submitted - 1
        };
        matches!(
            self.query(CommandSeq(last)),
            Ok(CommandState::Completed) | Err(_)
        )
    }

    /// Blocks until command `seq` has completed. If the queue is suspended and the command is
    /// still buffered, that means until the queue is resumed and the command runs.
    ///
    /// Returns an error the hardware reported for work launched on the application's behalf
    /// since the last wait, if any.
    pub fn wait(&self, seq: CommandSeq) -> Result<(), XQueueError> {
        let sh = &*self.shared;
        let mut ev = Pending::new();
        let mut st = sync::lock(&sh.state);
        loop {
            if seq.0 >= st.submitted {
                return Err(XQueueError::UnknownCommand(seq));
            }
            if seq.0 < st.completed {
                break;
            }
            if sh.drive == Drive::External {
                sh.poll_locked(&mut st, &mut ev);
                if seq.0 < st.completed {
                    break;
                }
                sh.unlock_and_emit(st, ev);
                return Err(HwError::WouldBlock.into());
            }
            if seq.0 < st.launched {
                let covering = st
                    .sync_points
                    .iter()
                    .find(|(end, _)| *end > seq.0)
                    .map(|(end, sp)| (*end, sp.clone()));
                let (end, result) = match covering {
                    Some((end, sp)) => {
                        drop(st);
                        let r = sh.hw.wait(&sp);
                        (end, r)
                    }
                    None => {
                        let end = st.launched;
                        drop(st);
                        (end, sh.hw.synchronize())
                    }
                };
                st = sync::lock(&sh.state);
                if let Err(e) = result {
                    st.record_error(e);
                }
                sh.complete_to(&mut st, end, &mut ev);
            } else {
                st = self.wait_for_progress(st, &mut ev)?;
            }
        }
        let err = st.deferred_error.take();
        sh.unlock_and_emit(st, ev);
        match err {
            Some(e) => Err(e.into()),
            None => Ok(()),
        }
    }

    /// Blocks until every command submitted so far has completed.
    pub fn wait_all(&self) -> Result<(), XQueueError> {
        let last = {
            let mut st = sync::lock(&self.shared.state);
            if st.submitted == st.completed {
                return match st.deferred_error.take() {
                    Some(e) => Err(e.into()),
                    None => Ok(()),
                };
            }
            st.submitted - 1
        };
        self.wait(CommandSeq(last))
    }

    /// Makes what progress is possible without blocking: notices reached sync points and
    /// launches buffered commands into the freed window. The driver of a [`Drive::External`]
    /// queue calls it whenever the hardware progressed; on a worker-driven queue it is harmless.
    pub fn poll(&self) {
        let sh = &*self.shared;
        let mut ev = Pending::new();
        let mut st = sync::lock(&sh.state);
        sh.poll_locked(&mut st, &mut ev);
        sh.unlock_and_emit(st, ev);
    }

    /// Stops the queue from running: nothing more is launched; at Level 2 the hardware stops
    /// starting launched commands, at Level 3 it also stops the running one. Suspending a
    /// suspended queue does nothing.
    ///
    /// If the hardware step fails the queue stays suspended at Level 1 and the error is
    /// returned.
    pub fn suspend(&self, flags: SuspendFlags) -> Result<(), XQueueError> {
        let sh = &*self.shared;
        let _control = sync::lock(&sh.control);
        let level = {
            let mut st = sync::lock(&sh.state);
            if st.suspended {
                return Ok(());
            }
            st.suspended = true;
            st.level
        };
        match level {
            Level::L1 => {}
            Level::L2 => {
                sh.hw.deactivate()?;
                sh.gated.store(true, std::sync::atomic::Ordering::Release);
                // Commands another queue already waits for may be behind the gate now: the
                // worker reopens it until they complete.
                let mut st = sync::lock(&sh.state);
                sh.count_held_back(&mut st);
                st.gate_open = false;
                if sh.progress.demanded() > st.completed {
                    sh.wake_worker(&st);
                }
            }
            Level::L3 => sh.hw.interrupt()?,
        }
        if flags.sync_hw && level == Level::L1 {
            let last = {
                let st = sync::lock(&sh.state);
                (st.launched > st.completed).then(|| st.launched - 1)
            };
            if let Some(last) = last {
                self.wait(CommandSeq(last))?;
            }
        }
        Ok(())
    }

    /// Lets a suspended queue run again, continuing with its oldest buffered command. Resuming
    /// a running queue does nothing.
    ///
    /// The queue runs again even if the hardware step fails; the error is returned.
    pub fn resume(&self, _flags: ResumeFlags) -> Result<(), XQueueError> {
        let sh = &*self.shared;
        let _control = sync::lock(&sh.control);
        let (level, inflight) = {
            let st = sync::lock(&sh.state);
            if !st.suspended {
                return Ok(());
            }
            let range = InflightRange {
                start: CommandSeq(st.completed),
                end: CommandSeq(st.launched),
            };
            (st.level, range)
        };
        let hw_result = match level {
            Level::L1 => Ok(()),
            Level::L2 => sh.hw.reactivate(inflight),
            Level::L3 => sh.hw.restore(inflight),
        };
        let mut ev = Pending::new();
        let mut st = sync::lock(&sh.state);
        st.suspended = false;
        st.gate_open = false;
        sh.gated.store(false, std::sync::atomic::Ordering::Release);
        sh.count_held_back(&mut st);
        match sh.drive {
            Drive::Worker => sh.wake_worker(&st),
            Drive::External => sh.poll_locked(&mut st, &mut ev),
        }
        sh.unlock_and_emit(st, ev);
        hw_result.map_err(Into::into)
    }

    /// Chooses the level suspension uses. Refused above the hardware's maximum and while the
    /// queue is suspended.
    pub fn set_level(&self, level: Level) -> Result<(), XQueueError> {
        let sh = &*self.shared;
        let max = sh.hw.max_level();
        if !sh.hw.supports(level) {
            return Err(XQueueError::LevelUnsupported {
                requested: level,
                max,
            });
        }
        let _control = sync::lock(&sh.control);
        let mut st = sync::lock(&sh.state);
        if st.suspended {
            return Err(XQueueError::SuspendedLevelChange);
        }
        st.level = level;
        Ok(())
    }

    /// Whether the launch worker follows the in-flight tail so the queue reports Idle even when
    /// the application never synchronizes (default: yes). A scheduler turns it off while no
    /// decision depends on this queue going idle: the worker then stays asleep through a burst
    /// of launches instead of polling the hardware.
    pub fn set_idle_watch(&self, on: bool) {
        let sh = &*self.shared;
        let mut st = sync::lock(&sh.state);
        if st.watch_idle != on {
            st.watch_idle = on;
            if on && st.inflight() > 0 {
                sh.wake_worker(&st);
            }
        }
        drop(st);
    }

    /// Whether Idle/Ready transitions are reported to the sink (default: yes). A scheduler
    /// turns reporting off for queues none of its decisions depend on, sparing a wake-up per
    /// transition. Turning it back on reports the current state at once (with the current
    /// transition number), so the receiver is never left with a stale view.
    pub fn set_reporting(&self, on: bool) {
        let sh = &*self.shared;
        let mut st = sync::lock(&sh.state);
        if st.reporting == on {
            return;
        }
        st.reporting = on;
        let mut ev = Pending::new();
        if on && st.transitions > 0 {
            ev.push(crate::QueueEvent {
                queue: sh.id,
                state: if st.submitted == st.completed {
                    QueueState::Idle
                } else {
                    QueueState::Ready
                },
                at: sh.clock.now(),
                transition: st.transitions,
            });
        }
        sh.unlock_and_emit(st, ev);
    }

    /// Whether the queue may run without its in-flight window and sync points (default: no).
    /// Progressive launching only bounds how long a *suspension* waits for in-flight work; a
    /// scheduler sets this for queues none of its decisions can suspend (under HPF, the
    /// top-priority queue of a device), whose launches then cost only the lock and the launch.
    /// Turning it off makes the next launch add a sync point, so the window applies from there.
    /// A queue built with [`XQueueBuilder::keep_window`] keeps its window regardless; either
    /// way the hardware queue learns whether a suspension may come
    /// ([`HwQueue::set_preemptible`]).
    pub fn set_unbounded(&self, on: bool) {
        let sh = &*self.shared;
        let mut st = sync::lock(&sh.state);
        if st.preemptible == on {
            st.preemptible = !on;
            sh.hw.set_preemptible(!on);
        }
        if on && sh.keep_window {
            return;
        }
        if st.unbounded == on {
            return;
        }
        st.unbounded = on;
        if !on {
            st.since_sync = st.config.batch();
        }
        sh.wake_worker(&st);
        drop(st);
    }

    /// Changes the launch window; takes effect with the next launch.
    pub fn set_launch_config(&self, config: LaunchConfig) {
        let sh = &*self.shared;
        let mut ev = Pending::new();
        let mut st = sync::lock(&sh.state);
        st.config = config;
        match sh.drive {
            Drive::Worker => sh.wake_worker(&st),
            Drive::External => sh.poll_locked(&mut st, &mut ev),
        }
        sh.unlock_and_emit(st, ev);
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
