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

use std::collections::VecDeque;
use std::sync::Arc as StdArc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::sync::{self, Arc, Condvar, Mutex, MutexGuard, thread};
use crate::{
    Clock, CommandSeq, CommandState, EventSink, HwError, HwQueue, InflightRange, LaunchConfig,
    Level, MonotonicClock, NullSink, QueueEvent, QueueState, XQueueError, XQueueId,
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
}

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

    /// Creates the queue, starting its launch worker if it has one.
    ///
    /// Fails if the requested level is above what the hardware supports.
    pub fn build(self) -> Result<XQueue<H>, XQueueError> {
        let max = self.hw.max_level();
        if self.level > max {
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
            }),
            control: Mutex::new(()),
            worker_cv: Condvar::new(),
            progress_cv: Condvar::new(),
            pending: std::sync::atomic::AtomicU64::new(0),
        });
        let worker = match self.drive {
            Drive::Worker => {
                let s = Arc::clone(&shared);
                Some(spawn_worker(s))
            }
            Drive::External => None,
        };
        Ok(XQueue { shared, worker })
    }
}

#[cfg(not(loom))]
fn spawn_worker<H: HwQueue>(shared: Arc<Shared<H>>) -> thread::JoinHandle<()> {
    let name = format!("baton-xq-{}", shared.id.0);
    match thread::Builder::new()
        .name(name)
        .spawn(move || shared.worker_loop())
    {
        Ok(handle) => handle,
        // Without a worker the queue cannot make progress behind the fast path; failing to
        // create a thread is as fatal as failing to allocate.
        Err(e) => panic!("cannot start an XQueue launch worker thread: {e}"),
    }
}

#[cfg(loom)]
fn spawn_worker<H: HwQueue>(shared: Arc<Shared<H>>) -> thread::JoinHandle<()> {
    thread::spawn(move || shared.worker_loop())
}

/// A preemptible queue over one hardware queue. See the module documentation.
pub struct XQueue<H: HwQueue> {
    shared: Arc<Shared<H>>,
    worker: Option<thread::JoinHandle<()>>,
}

struct Shared<H: HwQueue> {
    id: XQueueId,
    hw: H,
    clock: StdArc<dyn Clock>,
    sink: StdArc<dyn EventSink>,
    drive: Drive,
    state: Mutex<State<H>>,
    /// Serializes suspend/resume/level changes, which call slow hardware operations outside
    /// the state lock.
    control: Mutex<()>,
    /// Wakes the launch worker.
    worker_cv: Condvar,
    /// Wakes threads blocked in `wait` on a command that is still buffered.
    progress_cv: Condvar,
    /// `submitted - launched`, published under the state lock for lock-free readers.
    pending: std::sync::atomic::AtomicU64,
}

struct State<H: HwQueue> {
    buffer: VecDeque<H::Command>,
    submitted: u64,
    launched: u64,
    completed: u64,
    /// `(end, sp)`: `sp` is reached once every command before `end` completed. Ends increase.
    sync_points: VecDeque<(u64, H::SyncPoint)>,
    /// Launches since the last sync point.
    since_sync: u32,
    suspended: bool,
    level: Level,
    config: LaunchConfig,
    /// Idle/Ready transitions so far.
    transitions: u64,
    /// An error from work the worker launched on the application's behalf, reported by the
    /// next wait.
    deferred_error: Option<HwError>,
    shutdown: bool,
    worker_sleeping: bool,
    waiters: u32,
}

impl<H: HwQueue> State<H> {
    fn inflight(&self) -> u64 {
        self.launched - self.completed
    }

    fn window_open(&self) -> bool {
        self.inflight() < u64::from(self.config.threshold())
    }

    /// The end of the last sync point, or `completed` if there is none outstanding.
    fn covered(&self) -> u64 {
        self.sync_points
            .back()
            .map_or(self.completed, |(end, _)| *end)
    }

    fn record_error(&mut self, e: HwError) {
        if self.deferred_error.is_none() {
            self.deferred_error = Some(e);
        }
    }
}

/// Events gathered under the lock, emitted after it is released. A call produces at most two
/// transitions (Idle then Ready in `submit`), so they stay inline; the overflow vector is there
/// only so that no event could ever be dropped.
struct Pending {
    inline: [Option<QueueEvent>; 2],
    more: Vec<QueueEvent>,
}

impl Pending {
    fn new() -> Pending {
        Pending {
            inline: [None, None],
            more: Vec::new(),
        }
    }

    fn push(&mut self, e: QueueEvent) {
        match self.inline.iter_mut().find(|s| s.is_none()) {
            Some(slot) => *slot = Some(e),
            None => self.more.push(e),
        }
    }

    fn is_empty(&self) -> bool {
        self.inline[0].is_none()
    }

    fn emit(self, sink: &dyn EventSink) {
        for e in self.inline.into_iter().flatten().chain(self.more) {
            sink.on_queue_event(e);
        }
    }
}

impl<H: HwQueue> Shared<H> {
    fn transition(&self, st: &mut State<H>, to: QueueState, ev: &mut Pending) {
        st.transitions += 1;
        ev.push(QueueEvent {
            queue: self.id,
            state: to,
            at: self.clock.now(),
            transition: st.transitions,
        });
    }

    fn wake_worker(&self, st: &State<H>) {
        if st.worker_sleeping {
            self.worker_cv.notify_one();
        }
    }

    /// Marks every command before `end` complete.
    fn complete_to(&self, st: &mut State<H>, end: u64, ev: &mut Pending) {
        if end <= st.completed {
            return;
        }
        st.completed = end.min(st.launched);
        while st
            .sync_points
            .front()
            .is_some_and(|(e, _)| *e <= st.completed)
        {
            st.sync_points.pop_front();
        }
        if st.waiters > 0 {
            self.progress_cv.notify_all();
        }
        if st.completed == st.submitted {
            self.transition(st, QueueState::Idle, ev);
        }
    }

    /// Takes every reached sync point from the front without blocking.
    fn reap(&self, st: &mut State<H>, ev: &mut Pending) {
        while let Some((end, sp)) = st.sync_points.front() {
            let end = *end;
            match self.hw.is_reached(sp) {
                Ok(true) => self.complete_to(st, end, ev),
                Ok(false) => break,
                Err(e) => {
                    // The work behind it is lost to the error; report it and move on.
                    st.record_error(e);
                    self.complete_to(st, end, ev);
                }
            }
        }
    }

    fn add_sync_point(&self, st: &mut State<H>) {
        match self.hw.sync_point() {
            Ok(sp) => {
                st.sync_points.push_back((st.launched, sp));
                st.since_sync = 0;
            }
            Err(e) => st.record_error(e),
        }
    }

    fn publish_pending(&self, st: &State<H>) {
        self.pending.store(
            st.submitted - st.launched,
            std::sync::atomic::Ordering::Release,
        );
    }

    fn after_launch(&self, st: &mut State<H>) {
        st.launched += 1;
        st.since_sync += 1;
        if st.since_sync >= st.config.batch() {
            self.add_sync_point(st);
        }
    }

    /// Launches from the buffer's front while the queue runs and the window has room.
    fn launch_buffered(&self, st: &mut State<H>) {
        let before = st.launched;
        while !st.suspended && st.window_open() {
            let Some(cmd) = st.buffer.pop_front() else {
                break;
            };
            if let Err(e) = self.hw.launch(cmd) {
                // The command cannot run; it counts as launched so order and counts hold, and
                // the application learns of the failure at its next synchronization.
                st.record_error(e);
            }
            self.after_launch(st);
        }
        if st.launched > before {
            self.publish_pending(st);
            if st.waiters > 0 {
                self.progress_cv.notify_all();
            }
        }
    }

    /// One step of progress without blocking: reap, launch, and if nothing more can be
    /// launched now, make sure a sync point covers the last in-flight command (otherwise its
    /// completion, and the queue's return to Idle, would go unnoticed).
    fn poll_locked(&self, st: &mut State<H>, ev: &mut Pending) {
        self.reap(st, ev);
        self.launch_buffered(st);
        let stalled = st.buffer.is_empty() || st.suspended || !st.window_open();
        if stalled && st.launched > st.covered() {
            self.add_sync_point(st);
            self.reap(st, ev);
        }
    }

    fn worker_loop(&self) {
        let mut ev = Pending::new();
        let mut st = sync::lock(&self.state);
        if let Err(e) = self.hw.on_create() {
            st.record_error(e);
        }
        loop {
            if !st.suspended && !st.buffer.is_empty() && st.window_open() {
                self.launch_buffered(&mut st);
                continue;
            }
            if st.inflight() > 0 {
                if st.sync_points.is_empty() {
                    self.add_sync_point(&mut st);
                }
                let Some((end, sp)) = st.sync_points.front().map(|(e, s)| (*e, s.clone())) else {
                    // The hardware could not give a sync point; fall back to a full sync.
                    let end = st.launched;
                    drop(st);
                    ev.emit(&*self.sink);
                    ev = Pending::new();
                    let r = self.hw.synchronize();
                    st = sync::lock(&self.state);
                    if let Err(e) = r {
                        st.record_error(e);
                    }
                    self.complete_to(&mut st, end, &mut ev);
                    continue;
                };
                drop(st);
                ev.emit(&*self.sink);
                ev = Pending::new();
                let r = self.hw.wait(&sp);
                drop(sp);
                st = sync::lock(&self.state);
                if let Err(e) = r {
                    st.record_error(e);
                }
                self.complete_to(&mut st, end, &mut ev);
                continue;
            }
            if st.shutdown && st.buffer.is_empty() {
                break;
            }
            if !ev.is_empty() {
                drop(st);
                ev.emit(&*self.sink);
                ev = Pending::new();
                st = sync::lock(&self.state);
                continue;
            }
            st.worker_sleeping = true;
            st = sync::wait(&self.worker_cv, st);
            st.worker_sleeping = false;
        }
        drop(st);
        ev.emit(&*self.sink);
    }

    fn unlock_and_emit(&self, st: MutexGuard<'_, State<H>>, ev: Pending) {
        drop(st);
        ev.emit(&*self.sink);
    }
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
            || {
                slot.take()
                    .expect("submit_with calls exactly one of its closures, once")
            },
        )
    }

    /// Submits a command that is only built if it has to wait: on the fast path `direct`
    /// launches it straight from the caller's arguments (an interposer passes the application's
    /// own pointers, copying nothing); otherwise `defer` builds an owned command for the buffer.
    /// Exactly one of the two is called, once.
    pub fn submit_with<D, F>(&self, direct: D, defer: F) -> Result<CommandSeq, XQueueError>
    where
        D: FnOnce(&H) -> Result<(), HwError>,
        F: FnOnce() -> H::Command,
    {
        let sh = &*self.shared;
        let mut ev = Pending::new();
        let mut st = sync::lock(&sh.state);
        if st.shutdown {
            return Err(XQueueError::ShuttingDown);
        }
        let seq = CommandSeq(st.submitted);
        let direct_ok = st.buffer.is_empty() && !st.suspended;
        if direct_ok && !st.window_open() {
            sh.reap(&mut st, &mut ev);
        }
        let was_idle = st.completed == st.submitted;
        if direct_ok && st.window_open() {
            direct(&sh.hw)?;
            st.submitted += 1;
            sh.after_launch(&mut st);
            if was_idle {
                sh.transition(&mut st, QueueState::Ready, &mut ev);
                sh.wake_worker(&st);
            }
            sh.unlock_and_emit(st, ev);
            return Ok(seq);
        }
        st.buffer.push_back(defer());
        st.submitted += 1;
        sh.publish_pending(&st);
        if was_idle {
            sh.transition(&mut st, QueueState::Ready, &mut ev);
        }
        sh.wake_worker(&st);
        sh.unlock_and_emit(st, ev);
        Ok(seq)
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

    /// Asks the hardware through `f` whether all launched work is done (e.g. the driver's stream
    /// query), without blocking. False while commands are still buffered; if `f` says done,
    /// every launched command counts as complete.
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
            if seq.0 >= st.completed && st.buffer.is_empty() && st.launched > st.covered() {
                // Nothing covers it yet: ask for a sync point so a later query can tell.
                sh.add_sync_point(&mut st);
                sh.reap(&mut st, &mut ev);
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
            Level::L2 => sh.hw.deactivate()?,
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
        if level > max {
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
        let sh = &*self.shared;
        let st = sync::lock(&sh.state);
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
        }
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
}

#[cfg(all(test, not(loom)))]
mod tests;

#[cfg(all(test, loom))]
mod loom_tests;
