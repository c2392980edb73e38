//! The queue's shared state and the steps its threads take under the state lock (see the
//! parent module's documentation).

use std::collections::VecDeque;
use std::sync::Arc;

use super::options::Drive;
use crate::dependency::{DemandWaker, Dependency, LaunchProgress};
use crate::sync::{self, Condvar, Mutex, MutexGuard};
use crate::{
    Clock, CommandSeq, EventSink, HwError, HwQueue, InflightRange, LaunchConfig, Level, QueueEvent,
    QueueState, XQueueId,
};

/// What a queue's threads share. The state lock comes first, cache-line aligned: a launch
/// reads it and the state's leading fields together.
#[repr(C, align(64))]
pub(super) struct Shared<H: HwQueue> {
    pub(super) state: Mutex<State<H>>,
    pub(super) id: XQueueId,
    pub(super) hw: H,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) sink: Arc<dyn EventSink>,
    pub(super) drive: Drive,
    /// On an externally driven queue, how long launches must pause before an uncovered
    /// in-flight tail is asked whether it is done (the launch worker's [`IDLE_LINGER`], in the
    /// owner's time); none: at once.
    ///
    /// [`IDLE_LINGER`]: super::worker::IDLE_LINGER
    pub(super) linger: Option<crate::Nanos>,
    /// [`XQueue::set_unbounded`] is ignored.
    pub(super) keep_window: bool,
    /// Beyond this many buffered commands, `submit` waits for the buffer to drain.
    pub(super) max_buffered: usize,
    /// Serializes suspend/resume/level changes, which call slow hardware operations outside
    /// the state lock.
    pub(super) control: Mutex<()>,
    /// Wakes the launch worker.
    pub(super) worker_cv: Condvar,
    /// Wakes threads blocked in `wait` on a command that is still buffered.
    pub(super) progress_cv: Condvar,
    /// `submitted - launched`, published under the state lock for lock-free readers.
    pub(super) pending: std::sync::atomic::AtomicU64,
    /// Suspended at Level 2 (deactivated), for lock-free readers.
    pub(super) gated: std::sync::atomic::AtomicBool,
    /// Launch count for queues that depend on this one.
    pub(super) progress: Arc<LaunchProgress>,
    /// How often, and for how long in all (ns), a submitting thread was held back: waiting
    /// for room in the buffer, or for the buffer to drain before an in-place launch.
    pub(super) held: [std::sync::atomic::AtomicU64; 2],
    /// The group count this queue is in while it holds commands back, if any.
    pub(super) held_back: Option<Arc<crate::HeldBackCount>>,
    /// The device time one of its commands takes while the queue keeps the device busy
    /// (nanoseconds, a moving average; 0 until measured): see [`Shared::note_pace`].
    pub(super) pace_ns: std::sync::atomic::AtomicU64,
    /// How many samples `pace_ns` has taken in.
    pub(super) pace_samples: std::sync::atomic::AtomicU64,
}

/// A buffered command and what must be launched elsewhere before it.
pub(super) struct Buffered<C> {
    pub(super) cmd: C,
    pub(super) deps: Vec<Dependency>,
}

impl<H: HwQueue> Shared<H> {
    /// Counts one hold of a submitting thread that began at `since`, and says how long it was.
    pub(super) fn record_hold(&self, since: crate::Nanos) -> crate::Nanos {
        use std::sync::atomic::Ordering::Relaxed;
        let held = self.clock.now().0.saturating_sub(since.0);
        self.held[0].fetch_add(1, Relaxed);
        self.held[1].fetch_add(held, Relaxed);
        crate::Nanos(held)
    }
}

impl<C> Buffered<C> {
    /// The first of its dependencies not yet satisfied.
    pub(super) fn blocker(&self) -> Option<&Dependency> {
        self.deps.iter().find(|d| !d.is_satisfied())
    }
}

/// The queue's state, under its lock. The fields every fast-path launch reads or writes come
/// first (with the lock word, in the first cache line of [`Shared`]); the buffer follows.
#[repr(C)]
pub(super) struct State<H: HwQueue> {
    pub(super) submitted: u64,
    pub(super) launched: u64,
    pub(super) completed: u64,
    pub(super) config: LaunchConfig,
    /// Launches since the last sync point.
    pub(super) since_sync: u32,
    pub(super) suspended: bool,
    pub(super) shutdown: bool,
    /// No scheduler can suspend the queue now: no in-flight window, no sync points.
    pub(super) unbounded: bool,
    /// Whether its scheduler lets it run without its window ([`XQueue::set_unbounded`]);
    /// `unbounded` follows it except while the queue is measuring.
    pub(super) may_run_unbounded: bool,
    /// Whether it keeps its window to measure its commands even where its scheduler lets it
    /// run without ([`XQueue::set_measuring`]).
    pub(super) measuring: bool,
    /// Whether its scheduler lets it run without its window only because of what was
    /// measured of its commands, so that it must be measured again now and then
    /// ([`XQueue::set_remeasure`]).
    pub(super) remeasure: bool,
    /// Whether its scheduler may hold it back now, not only keep it suspendable
    /// ([`XQueue::set_holdable`]): the device-time budget applies only then.
    pub(super) holdable: bool,
    /// Whether someone (a scheduler) needs to hear promptly when the queue goes idle, even if
    /// the application does not synchronize: then the worker follows the in-flight tail.
    pub(super) watch_idle: bool,
    pub(super) worker_sleeping: bool,
    /// Whether Idle/Ready transitions go to the sink (they are always counted).
    pub(super) reporting: bool,
    /// A [`Dependency`] on this queue has been made: `progress` must follow every launch. Until
    /// then nobody reads it, and the launch fast path skips publishing its count (the first
    /// dependency, made under this lock, publishes it).
    pub(super) observed: bool,
    /// Whether this queue is counted in its [`Shared::held_back`] group count.
    pub(super) counted_held_back: bool,
    pub(super) buffer: VecDeque<Buffered<H::Command>>,
    /// Idle/Ready transitions so far.
    pub(super) transitions: u64,
    /// `(end, sp)`: `sp` is reached once every command before `end` completed. Ends increase.
    pub(super) sync_points: VecDeque<(u64, H::SyncPoint)>,
    pub(super) level: Level,
    /// An error from work the worker launched on the application's behalf, reported by the
    /// next wait.
    pub(super) deferred_error: Option<HwError>,
    pub(super) waiters: u32,
    /// What the hardware queue was last told by [`HwQueue::set_preemptible`].
    pub(super) preemptible: bool,
    /// With a linger: the launch count at the look that last found it changed, and when.
    pub(super) quiet: (u64, crate::Nanos),
    /// Suspended at Level 2 but reactivated because another queue waits for one of its
    /// commands to complete (see [`Shared::sync_gate`]).
    pub(super) gate_open: bool,
    /// When completions were last seen promptly with commands still in flight, and
    /// `completed` and `launched` then: the start of the next pace sample (see
    /// [`Shared::note_pace`]).
    pub(super) pace_mark: Option<(crate::Nanos, u64, u64, u64)>,
    /// Positions of launched commands that take no device time (an event record:
    /// [`XQueue::mark_marker`]) not yet complete, in order; and how many such commands
    /// completed so far. A pace sample counts only the others.
    pub(super) markers: VecDeque<u64>,
    pub(super) markers_done: u64,
    /// How the application used the queue, the time it had work while suspended kept apart
    /// ([`XQueue::usage`](crate::XQueue::usage)).
    pub(super) usage: super::usage::Book,
    /// [`Shared::pace_ns`] as last noted, for the window (0: not measured).
    pub(super) pace_ns: u64,
    /// The device time the commands in flight may take by that measure (0: no bound; see
    /// [`XQueueBuilder::inflight_budget`](crate::XQueueBuilder::inflight_budget)).
    pub(super) budget_ns: u64,
    /// Whether sync points follow the budget ([`XQueueBuilder::early_refill`](crate::XQueueBuilder::early_refill)),
    /// and then how many launches apart, by the measured command time (`u32::MAX`: the
    /// window's batch alone).
    pub(super) early_refill: bool,
    pub(super) refill_batch: u32,
    /// Commands launched while suspended (only a demand launches then: another queue or a
    /// call needed them), in the suspensions that ended; and `launched` when the current one
    /// began. Counted at suspend and resume, off the launch path.
    pub(super) released: u64,
    pub(super) launched_at_suspend: u64,
    /// What the suspensions found in flight ([`XQueue::inflight_at_suspend`](crate::XQueue::inflight_at_suspend)).
    pub(super) at_suspend: InflightAtSuspend,
}

/// What a queue's suspensions found in flight: the commands launched and not known complete
/// when each began (the device may have finished some already; a sync point would say), and
/// the device time they would take by the queue's measured command time. It is what a more
/// urgent queue's work may find on the device when the suspension comes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InflightAtSuspend {
    /// Suspensions so far.
    pub suspensions: u64,
    /// Of them, those that found the queue's command time not measured yet: in-flight time
    /// unknown, its window bounded by count alone.
    pub unmeasured: u64,
    /// Of them, those whose queue was bounded by the device-time budget then (a scheduler
    /// could hold it, [`XQueue::set_holdable`](crate::XQueue::set_holdable), and it had a
    /// budget and a measure).
    pub budgeted: u64,
    /// Commands in flight, summed over the suspensions, and the most at one.
    pub commands: u64,
    pub max_commands: u64,
    /// Their device time by the measured command time (ns), summed over the measured
    /// suspensions, and the most at one.
    pub device_ns: u64,
    pub max_device_ns: u64,
}

impl InflightAtSuspend {
    /// Takes in a suspension that found `commands` taking device time in flight, each taking
    /// `pace_ns` by the queue's measure (0: none yet), `budgeted` or not.
    pub(super) fn note(&mut self, commands: u64, pace_ns: u64, budgeted: bool) {
        self.suspensions += 1;
        self.commands += commands;
        self.max_commands = self.max_commands.max(commands);
        if pace_ns == 0 {
            self.unmeasured += 1;
            return;
        }
        self.budgeted += u64::from(budgeted);
        let ns = commands.saturating_mul(pace_ns);
        self.device_ns = self.device_ns.saturating_add(ns);
        self.max_device_ns = self.max_device_ns.max(ns);
    }
}

impl<H: HwQueue> State<H> {
    pub(super) fn inflight(&self) -> u64 {
        self.launched - self.completed
    }

    pub(super) fn window_open(&self) -> bool {
        if self.unbounded {
            return true;
        }
        let inflight = self.inflight();
        if inflight >= u64::from(self.config.threshold()) {
            return false;
        }
        // Event records take no device time; the first command always goes.
        let work = inflight.saturating_sub(self.markers.len() as u64);
        let budget = self.budget();
        budget == 0 || self.pace_ns == 0 || work == 0 || work.saturating_mul(self.pace_ns) < budget
    }

    /// The device time its commands in flight may take now (0: no bound): its budget while a
    /// scheduler may hold it back ([`XQueue::set_holdable`]), none otherwise.
    pub(super) fn budget(&self) -> u64 {
        if self.holdable { self.budget_ns } else { 0 }
    }

    /// Launches between two sync points now: the window's batch, or fewer where early refill
    /// splits what the budget admits and the budget applies.
    pub(super) fn sync_every(&self) -> u32 {
        if self.budget() > 0 {
            self.config.batch().min(self.refill_batch)
        } else {
            self.config.batch()
        }
    }

    /// Counts the markers `completed` has passed as done.
    pub(super) fn retire_markers(&mut self) {
        while self.markers.front().is_some_and(|m| *m < self.completed) {
            self.markers.pop_front();
            self.markers_done += 1;
        }
    }

    /// The end of the last sync point, or `completed` if there is none outstanding.
    pub(super) fn covered(&self) -> u64 {
        self.sync_points
            .back()
            .map_or(self.completed, |(end, _)| *end)
    }

    pub(super) fn record_error(&mut self, e: HwError) {
        if self.deferred_error.is_none() {
            self.deferred_error = Some(e);
        }
    }
}

/// How many samples the pace's moving average weighs (see [`Shared::note_pace`]).
const PACE_WEIGHT: u64 = 8;

/// An application's wait on the driver that took at least this long blocked until the device
/// got there (one that finds the work done returns in a few microseconds): its end is a
/// moment of progress, as a worker's wait on a sync point is.
const BLOCKED_WAIT: crate::Nanos = crate::Nanos::from_micros(20);

/// Events gathered under the lock, emitted after it is released. A call produces at most two
/// transitions (Idle then Ready in `submit`), so they stay inline; the overflow vector is there
/// only so that no event could ever be dropped.
pub(super) struct Pending {
    inline: [Option<QueueEvent>; 2],
    more: Vec<QueueEvent>,
}

impl Pending {
    pub(super) fn new() -> Pending {
        Pending {
            inline: [None, None],
            more: Vec::new(),
        }
    }

    pub(super) fn push(&mut self, e: QueueEvent) {
        match self.inline.iter_mut().find(|s| s.is_none()) {
            Some(slot) => *slot = Some(e),
            None => self.more.push(e),
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.inline[0].is_none()
    }

    #[inline]
    pub(super) fn emit(self, sink: &dyn EventSink) {
        // Almost every launch emits nothing: skip the iterator chain and the vector's drop.
        if self.is_empty() {
            return;
        }
        for e in self.inline.into_iter().flatten().chain(self.more) {
            sink.on_queue_event(e);
        }
    }
}

impl<H: HwQueue> Shared<H> {
    /// Level 2 and dependencies: a deactivated queue's launched commands sit behind its gate,
    /// so a queue that waits for one of them on the device would wait forever. While another
    /// queue waits for this one's commands to complete (`demanded` beyond `completed`), a
    /// queue suspended at Level 2 is reactivated; once they are complete it is deactivated
    /// again. Suspension still holds back everything not demanded from being launched.
    pub(super) fn sync_gate<'a>(
        &'a self,
        st: MutexGuard<'a, State<H>>,
    ) -> MutexGuard<'a, State<H>> {
        let want = |st: &State<H>| {
            st.suspended && st.level == Level::L2 && self.progress.demanded() > st.completed
        };
        if want(&st) == st.gate_open {
            return st;
        }
        drop(st);
        let _control = sync::lock(&self.control);
        let mut st = sync::lock(&self.state);
        let open = want(&st);
        if open == st.gate_open || !(st.suspended && st.level == Level::L2) {
            // Settled meanwhile, or resumed (which opened the gate itself).
            st.gate_open = open;
            return st;
        }
        let range = InflightRange {
            start: CommandSeq(st.completed),
            end: CommandSeq(st.launched),
        };
        drop(st);
        let r = if open {
            self.hw.reactivate(range)
        } else {
            self.hw.deactivate()
        };
        let mut st = sync::lock(&self.state);
        // On failure the error reaches the application at its next synchronization; the flag
        // follows the wish anyway so a failing call is not retried in a loop.
        st.gate_open = open;
        if let Err(e) = r {
            st.record_error(e);
        }
        st
    }

    pub(super) fn transition(&self, st: &mut State<H>, to: QueueState, ev: &mut Pending) {
        st.transitions += 1;
        let now = self.clock.now();
        match to {
            QueueState::Ready => st.usage.ready(now),
            QueueState::Idle => st.usage.idle(now),
        }
        // The first Ready is told even unreported: that the queue has run work at all is what
        // a scheduler judges its process by (HPF counts another process's unused queues only
        // until it has run work), and muting may come before the queue's first launch.
        if !st.reporting && st.transitions != 1 {
            return;
        }
        ev.push(QueueEvent {
            queue: self.id,
            state: to,
            at: now,
            transition: st.transitions,
        });
    }

    pub(super) fn wake_worker(&self, st: &State<H>) {
        if st.worker_sleeping {
            self.worker_cv.notify_one();
        }
    }

    /// Marks every command before `end` complete.
    pub(super) fn complete_to(&self, st: &mut State<H>, end: u64, ev: &mut Pending) {
        if end <= st.completed {
            return;
        }
        st.completed = end.min(st.launched);
        st.retire_markers();
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

    /// Completions up to `end` that the application saw by waiting on the driver since
    /// `asked`: marked complete, and a pace sample if the wait blocked (a wait that returned
    /// at once found them done some time ago, which says nothing about when).
    pub(super) fn saw_complete(
        &self,
        st: &mut State<H>,
        end: u64,
        asked: crate::Nanos,
        ev: &mut Pending,
    ) {
        let before = st.completed;
        self.complete_to(st, end, ev);
        let now = self.clock.now();
        st.usage.waited(asked, now);
        let waited = now.0.saturating_sub(asked.0);
        if st.completed > before && waited >= BLOCKED_WAIT.0 {
            self.note_pace(st, before);
        }
    }

    /// Measures the queue's pace after completions up to `st.completed` were seen the moment
    /// they happened (a worker blocked on the sync point, or a driver that polls whenever the
    /// device progresses), where `before` was `completed` before them.
    ///
    /// If the previous such observation left commands in flight, every command completed
    /// since had already been launched then, and nothing completed between the two, the
    /// device worked on this queue's commands throughout: the time between the observations
    /// divided by the commands completed is one sample of how long a command takes, other
    /// contexts' share of the device included. A queue bound by its own launching has nothing
    /// in flight when its commands complete and is never measured: its commands' length says
    /// nothing about what it leaves for others, and unmeasured is what a scheduler assumes
    /// anyway.
    pub(super) fn note_pace(&self, st: &mut State<H>, before: u64) {
        use std::sync::atomic::Ordering::Relaxed;
        let now = self.clock.now();
        if let Some((t0, c0, l0, m0)) = st.pace_mark.take()
            && c0 == before
            && st.completed > c0
            && st.completed <= l0
            && now > t0
            && let work = (st.completed - c0).saturating_sub(st.markers_done - m0)
            && work > 0
        {
            let sample = (now.0 - t0.0) / work;
            let old = self.pace_ns.load(Relaxed);
            // A moving average over about eight samples; the first sample stands alone.
            let avg = if old == 0 {
                sample
            } else {
                old - old / PACE_WEIGHT + sample / PACE_WEIGHT
            };
            self.pace_ns.store(avg.max(1), Relaxed);
            st.pace_ns = avg.max(1);
            if st.early_refill && st.budget_ns > 0 {
                // Half of what the budget admits: the host learns the first half is done
                // while the second still runs, and launches more before the device drains.
                // A budget of one command (a GEMM longer than it) has nothing to split: its
                // window is the command alone, whose completion the host learns as before.
                let admitted = st.budget_ns.div_ceil(st.pace_ns);
                st.refill_batch = if admitted >= 2 {
                    u32::try_from(admitted / 2).unwrap_or(u32::MAX)
                } else {
                    u32::MAX
                };
            }
            self.pace_samples.fetch_add(1, Relaxed);
        }
        // Suspended at Level 2 or 3, the device stops working on what is in flight.
        if st.inflight() > 0 && !(st.suspended && st.level != Level::L1) {
            st.pace_mark = Some((now, st.completed, st.launched, st.markers_done));
        }
    }

    /// Takes every reached sync point from the front without blocking.
    pub(super) fn reap(&self, st: &mut State<H>, ev: &mut Pending) {
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

    pub(super) fn add_sync_point(&self, st: &mut State<H>) {
        match self.hw.sync_point() {
            Ok(sp) => {
                st.sync_points.push_back((st.launched, sp));
                st.since_sync = 0;
            }
            // Not now: the launches stay uncovered, and the next launch or look at the tail
            // asks again. Nothing is wrong with the application's work.
            Err(HwError::Busy) => {}
            Err(e) => st.record_error(e),
        }
    }

    pub(super) fn publish_pending(&self, st: &mut State<H>) {
        self.pending.store(
            st.submitted - st.launched,
            std::sync::atomic::Ordering::Release,
        );
        self.progress.advance(st.launched);
        self.count_held_back(st);
    }

    /// Keeps the queue counted in its group's [`crate::HeldBackCount`] exactly while it holds a
    /// command back (buffered, or behind a closed gate), after `pending` or `gated` changed.
    /// Called under the state lock, so the flag and the count change together.
    pub(super) fn count_held_back(&self, st: &mut State<H>) {
        let holds =
            st.submitted > st.launched || self.gated.load(std::sync::atomic::Ordering::Acquire);
        self.set_counted_held_back(st, holds);
    }

    /// Counts the queue in its group's count (`holds`) or out, if it is not so already.
    pub(super) fn set_counted_held_back(&self, st: &mut State<H>, holds: bool) {
        let Some(count) = &self.held_back else { return };
        if holds != st.counted_held_back {
            st.counted_held_back = holds;
            if holds {
                count.add();
            } else {
                count.remove();
            }
        }
    }

    /// Whether the buffer's front may be launched now: the window has room, and the queue runs
    /// or another queue needs the front launched.
    pub(super) fn can_launch(&self, st: &State<H>) -> bool {
        !st.buffer.is_empty()
            && st.window_open()
            && (!st.suspended || st.launched < self.progress.demanded())
    }

    pub(super) fn after_launch(&self, st: &mut State<H>) {
        st.launched += 1;
        if st.unbounded {
            return;
        }
        st.since_sync += 1;
        if st.since_sync >= st.sync_every() {
            self.add_sync_point(st);
        }
    }

    /// Launches from the buffer's front while [`Shared::can_launch`] allows and the front's
    /// dependencies are satisfied.
    pub(super) fn launch_buffered(&self, st: &mut State<H>) {
        let before = st.launched;
        while self.can_launch(st) {
            if st.buffer.front().is_some_and(|b| b.blocker().is_some()) {
                break;
            }
            let Some(b) = st.buffer.pop_front() else {
                break;
            };
            if let Err(e) = self.hw.launch(b.cmd) {
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
            // A window the time budget closed after these launches has commands waiting
            // behind it: from here to their completion the device is busy with them, which is
            // a sample of their time. Without it, a queue kept to one command in flight would
            // never be measured again (its completions leave nothing in flight), and would stay
            // bound by the time of the longer commands it ran before.
            if st.budget_ns > 0 && st.pace_mark.is_none() && !st.buffer.is_empty() {
                st.pace_mark = Some((self.clock.now(), st.completed, st.launched, st.markers_done));
            }
        }
    }

    /// The dependency holding the buffer's front back, if the front could otherwise launch.
    pub(super) fn head_blocker(&self, st: &State<H>) -> Option<Dependency> {
        if !self.can_launch(st) {
            return None;
        }
        st.buffer.front().and_then(|b| b.blocker().cloned())
    }

    /// Asks the hardware, without adding anything to its queue, whether every launched command
    /// is done: how the completion of the tail that no sync point covers is noticed.
    pub(super) fn reap_idle(&self, st: &mut State<H>, ev: &mut Pending) {
        if st.inflight() == 0 {
            return;
        }
        match self.hw.query_idle() {
            Ok(true) => self.complete_to(st, st.launched, ev),
            Ok(false) => {}
            Err(e) => {
                // The hardware cannot say; the work behind the error is lost to it anyway.
                st.record_error(e);
                self.complete_to(st, st.launched, ev);
            }
        }
    }

    /// One step of progress without blocking: reap, launch, and if nothing more can be
    /// launched now, ask whether the uncovered tail is done (otherwise its completion, and the
    /// queue's return to Idle, would go unnoticed).
    /// Launches made while the queue was unbounded are covered by no sync point. Once the
    /// window applies again and work waits for it, or the queue is suspended, add one behind
    /// them: their completion is then waited for (or found at the next look) instead of polled,
    /// and a resumed queue finds its window open.
    pub(super) fn cover_tail(&self, st: &mut State<H>) {
        let waits = !st.buffer.is_empty() && !st.window_open();
        if !st.unbounded && (waits || st.suspended) && st.launched > st.covered() {
            self.add_sync_point(st);
        }
    }

    pub(super) fn poll_locked(&self, st: &mut State<H>, ev: &mut Pending) {
        let before = st.completed;
        self.reap(st, ev);
        if self.drive == Drive::External && st.completed > before {
            // The owner polls whenever the device progresses: these completions are prompt.
            self.note_pace(st, before);
        }
        self.cover_tail(st);
        self.launch_buffered(st);
        let stalled = st.buffer.is_empty() || st.suspended || !st.window_open();
        if stalled && st.launched > st.covered() {
            if let Some(linger) = self.linger {
                // As the launch worker does: a tail still being launched to is busy; look once
                // launches have paused for the linger.
                let now = self.clock.now();
                if st.quiet.0 != st.launched {
                    st.quiet = (st.launched, now);
                    return;
                }
                if now.saturating_sub(st.quiet.1) < linger {
                    return;
                }
            }
            self.reap_idle(st, ev);
        }
    }

    /// When [`Shared::poll_locked`] next needs to look at an uncovered tail (with a linger).
    pub(super) fn next_look(&self, st: &State<H>) -> Option<crate::Nanos> {
        let linger = self.linger?;
        let at = st.quiet.1 + linger;
        // Past the linger, the tail is looked at whenever the hardware progresses.
        (st.inflight() > 0
            && st.launched > st.covered()
            && st.quiet.0 == st.launched
            && at > self.clock.now())
        .then_some(at)
    }

    #[inline]
    pub(super) fn unlock_and_emit(&self, st: MutexGuard<'_, State<H>>, ev: Pending) {
        drop(st);
        ev.emit(&*self.sink);
    }
}

impl<H: HwQueue> DemandWaker for Shared<H> {
    fn wake_for_demand(&self) {
        // The gate is opened here, on the demanding thread: the worker may be blocked on a
        // sync point behind the closed gate itself, and could never open it.
        let st = self.sync_gate(sync::lock(&self.state));
        self.wake_worker(&st);
    }
}
